"""Entry points of one group, read straight from installed distributions' metadata.

``importlib.metadata`` costs every command that lists or loads the providers
(``runtime --help``, ``capability validate``...) its imports (email, zipfile,
csv...) and its scan, more than the start-up budget allows (ARCHITECTURE.md,
"Measured choices"); this reads the same ``entry_points.txt`` files of the
``*.dist-info`` / ``*.egg-info`` folders on ``sys.path`` with ``os.listdir`` and
a line parser. First distribution on ``sys.path`` wins, as with importlib.metadata
(tests/unit/test_entrypoints.py checks that both read alike).
"""

from __future__ import annotations

import functools
import os
import re  # already imported by the CLI framework: free here
import sys
from typing import NamedTuple

_SEPARATORS = re.compile(r"[-_.]+")


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


def _read(path: str) -> bytes | None:
    """The file's bytes, or None; plain descriptors (text files cost more, ~80 are tried)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


@functools.cache
def entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The group's entry points, read once per process."""
    seen: dict[str, EntryPoint] = {}
    distributions: set[str] = set()
    wanted = group.encode()
    for folder in sys.path:
        try:
            names = sorted(
                n for n in os.listdir(folder or ".") if n.endswith((".dist-info", ".egg-info"))
            )
        except OSError:
            continue
        for name in names:
            # the project name, normalized as importlib.metadata does (PEP 503)
            dist = _SEPARATORS.sub("-", name.rsplit("-", 1)[0].split("-")[0]).lower()
            if dist in distributions:
                continue  # an earlier path entry already provided this distribution
            distributions.add(dist)
            data = _read(os.path.join(folder or ".", name, "entry_points.txt"))
            if data is None or wanted not in data:  # most have none in this group
                continue
            for ep in _parse(data.decode("utf-8", errors="replace"), group):
                seen.setdefault(ep.name, ep)
    return tuple(seen.values())
