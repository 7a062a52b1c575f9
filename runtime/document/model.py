"""The typed model of a capability, produced by :mod:`runtime.document.grammar`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from runtime.document.loader import Document, LineageEntry


class Arg(NamedTuple):
    # a named tuple rather than a frozen dataclass: made for every argument of every
    # step on each run, and cheaper to make
    text: str  # exactly as authored
    line: int  # 1-based, in the Markdown file
    column: int


class InputDecl(NamedTuple):
    name: str
    description: str | None
    required: bool
    line: int
    column: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "required": self.required}


@dataclass(frozen=True)
class Step:
    index: int  # 1-based
    provider: str | None
    binary: str | None
    args: tuple[Arg, ...]
    line: int
    column: int

    @property
    def kind(self) -> str:
        return "provider" if self.provider is not None else "binary"

    @property
    def target(self) -> str:
        return self.provider if self.provider is not None else (self.binary or "")

    @property
    def arg_texts(self) -> list[str]:
        return [a.text for a in self.args]


@dataclass
class Capability:
    path: str
    sha256: str
    document: Document
    # as the runtime block writes it; None when there is none to read it from (show
    # must not report a version the file never declared)
    version: str | None = None
    inputs: dict[str, InputDecl] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    frontmatter: dict[str, Any] = field(default_factory=dict)
    requires: dict[str, Any] = field(default_factory=dict)
    requires_lines: dict[str, int] = field(default_factory=dict)
    typed_requirements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def title(self) -> str | None:
        return self.document.title

    @property
    def lineage(self) -> list[LineageEntry]:
        return self.document.lineage

    @property
    def description(self) -> str | None:
        value = self.frontmatter.get("description")
        return value if isinstance(value, str) else None
