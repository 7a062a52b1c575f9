"""Text and JSON rendering. The CLI layer is the only place that prints."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from runtime.problems import Problem

_CODES = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2"}


def colour_enabled(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb."""
    import os

    target = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return target.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, colour: str, stream: TextIO | None = None) -> str:
    if not colour_enabled(stream):
        return text
    return f"\033[{_CODES[colour]}m{text}\033[0m"


def emit_json(doc: dict[str, Any], stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    out.write(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n")
    out.flush()


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 error``, ``2 errors``; ``many`` for a word whose plural is not word + s."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def step_ranges(ranges: Iterable[Sequence[int]]) -> str:
    """``step 2``, ``steps 1-3``, ``steps 1, 4``: the steps a Lineage entry names."""
    pairs = [(r[0], r[1]) for r in ranges]
    text = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in pairs)
    one = len(pairs) == 1 and pairs[0][0] == pairs[0][1]
    return f"step {text}" if one else f"steps {text}"


def out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def err(text: str = "") -> None:
    sys.stderr.write(text + "\n")


def problem_line(p: Problem, stream: TextIO | None = None) -> str:
    severity = paint(p.severity, "red" if p.is_error else "yellow", stream)
    return f"{p.file}:{p.line}:{p.column}: {severity}: {p.message}"


def problem_block(p: Problem, source_lines: Sequence[str] | None) -> list[str]:
    """``FILE:LINE:COL: severity: message`` then the source line with a caret, then the hint."""
    lines = [problem_line(p)]
    if source_lines is not None and 1 <= p.line <= len(source_lines):
        src = source_lines[p.line - 1].replace("\t", " ")
        if len(src) > 160:
            start = max(0, p.column - 80)
            src = src[start : start + 160]
            caret_col = p.column - start
        else:
            caret_col = p.column
        gutter = str(p.line)
        pad = " " * len(gutter)
        lines.append(f"  {gutter} | {src}")
        lines.append(f"  {pad} | {' ' * max(0, caret_col - 1)}^")
    if p.hint:
        lines.append(f"  hint: {p.hint}")
    return lines


def github_annotation(p: Problem) -> str:
    def esc_data(s: str) -> str:
        return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def esc_prop(s: str) -> str:
        return esc_data(s).replace(":", "%3A").replace(",", "%2C")

    kind = "error" if p.is_error else "warning"
    message = p.message + (f" (hint: {p.hint})" if p.hint else "")
    return (
        f"::{kind} file={esc_prop(p.file)},line={p.line},col={p.column},"
        f"title={esc_prop(p.code)}::{esc_data(message)}"
    )


def table(rows: Iterable[Sequence[str]], headers: Sequence[str] | None = None) -> list[str]:
    data = [list(map(str, r)) for r in rows]
    if headers:
        data.insert(0, list(headers))
    if not data:
        return []
    widths = [
        max(len(r[i]) if i < len(r) else 0 for r in data) for i in range(max(len(r) for r in data))
    ]
    lines = []
    for row in data:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines
