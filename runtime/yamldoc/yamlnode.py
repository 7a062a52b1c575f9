"""The positioned YAML tree both parsers build: nodes, duplicate keys, syntax errors, limits.

:mod:`runtime.yamldoc.yamltree` (strictyaml's loader) and
:mod:`runtime.yamldoc.yamlfast` (the plain subset, line by line) compose the
same :class:`Node` tree; the schema mechanism (:mod:`runtime.yamldoc.schema`)
checks it. Both parsers import this module and nothing of each other but the
one call ``yamltree.parse`` makes to the fast path, so no import circle exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

NodeKind = Literal["map", "seq", "scalar"]

MAX_DEPTH = 64
MAX_NODES = 40_000  # a 2,000-step workflow has about 16,000


@dataclass(slots=True)
class Node:
    kind: NodeKind
    line: int  # 0-based line in the parsed text
    column: int  # 0-based column in the parsed text
    text: str = ""  # scalar text, as typed
    # A list or mapping is given its own list by the composer that builds it; a scalar
    # shares the empty tuple (no two lists per value: a step's tree is made on every
    # run, and each list is one more object to allocate and for the collector to walk).
    items: Sequence[Node] = ()  # sequence items
    pairs: Sequence[tuple[Node, Node]] = ()  # mapping pairs
    plain: bool = True  # scalar written without quotes or block style

    def get(self, key: str) -> Node | None:
        for k, v in self.pairs:
            if k.text == key:
                return v
        return None

    def describe(self) -> str:
        return {"map": "a mapping", "seq": "a list", "scalar": "a value"}[self.kind]


@dataclass(frozen=True)
class YamlError(Exception):
    line: int  # 0-based
    column: int  # 0-based
    message: str
    hint: str | None = None


class DuplicateKey(NamedTuple):
    key: str
    line: int
    column: int
    first_line: int
