"""A step's human-readable output, as the CLI writes its own: a value the provider did
not write (a file name) escaped as all text output is (:func:`printable`), tables made
as the CLI makes them (:func:`table`), a cut marked ``...`` (:func:`shorten`); and what a
file that is not a regular one is, in the engine's words (:func:`file_kind`: "a
socket")."""

from __future__ import annotations

from runtime.reading import kind as file_kind
from runtime.text import printable, shorten, table

__all__ = ["file_kind", "printable", "shorten", "table"]
