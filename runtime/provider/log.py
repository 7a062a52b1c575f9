"""The diagnostic event stream, for a provider (:func:`get_logger`, ``providers.NAME``).

A :class:`Logger` does nothing while ``--log-level`` is off; ask
:meth:`Logger.enabled` before building an event's fields. Events go to stderr,
redacted with the run's secrets (:mod:`runtime.log` lists the events).
"""

from __future__ import annotations

from runtime.log import DEBUG, ERROR, INFO, WARNING, Logger, get_logger

__all__ = ["DEBUG", "ERROR", "INFO", "WARNING", "Logger", "get_logger"]
