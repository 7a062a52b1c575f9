"""Problems: positioned findings that stations return instead of raising.

A problem always names a file, a 1-based line and column of that file, a
severity, a stable code, a message and, where one helps, a hint.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

# "info": what a reader should know and nothing to fix (validate's note that an optional
# input left out stays literal): never counted as a warning
Severity = Literal["error", "warning", "info"]


class Problem(NamedTuple):
    file: str
    line: int
    column: int
    severity: Severity
    code: str
    message: str
    hint: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    @property
    def is_warning(self) -> bool:
        return self.severity == "warning"

    def sort_key(self) -> tuple[str, int, int, int, str]:
        rank = {"error": 0, "warning": 1}.get(self.severity, 2)
        return (self.file, self.line, self.column, rank, self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }


def sorted_problems(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=Problem.sort_key)


def has_errors(problems: list[Problem]) -> bool:
    return any(p.is_error for p in problems)
