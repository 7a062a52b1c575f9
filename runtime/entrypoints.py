"""Entry points of one group, read straight from installed distributions' metadata.

``importlib.metadata`` costs about 40 ms of imports (email, zipfile, csv...)
on every start; this reads the same ``entry_points.txt`` files of the
``*.dist-info`` / ``*.egg-info`` folders on ``sys.path`` with ``os.scandir``
and a line parser, in about a millisecond. First distribution on
``sys.path`` wins, as with importlib.metadata.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import NamedTuple


class EntryPoint(NamedTuple):  # not a dataclass: `runtime --help` would pay for dataclasses
    name: str
    value: str  # "package.module:attribute"

    def load(self) -> object:
        import importlib

        module_name, _, attr = self.value.partition(":")
        obj: object = importlib.import_module(module_name.strip())
        for part in attr.strip().split(".") if attr.strip() else []:
            obj = getattr(obj, part)
        return obj


def _parse(text: str, group: str) -> list[EntryPoint]:
    found: list[EntryPoint] = []
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
            continue
        if current == group and "=" in line:
            name, _, value = line.partition("=")
            found.append(EntryPoint(name.strip(), value.split("[")[0].strip()))
    return found


@functools.cache
def entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The group's entry points, read once per process."""
    seen: dict[str, EntryPoint] = {}
    distributions: set[str] = set()
    for folder in sys.path:
        try:
            entries = sorted(os.scandir(folder or "."), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith((".dist-info", ".egg-info")):
                continue
            dist = entry.name.rsplit("-", 1)[0].split("-")[0].lower().replace("_", "-")
            if dist in distributions:
                continue  # an earlier path entry already provided this distribution
            distributions.add(dist)
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            for ep in _parse(text, group):
                seen.setdefault(ep.name, ep)
    return tuple(seen.values())
