"""Text and JSON rendering. The CLI layer is the only place that prints.

Text output shows what runtime did not write itself escaped (:func:`runtime.text.printable`):
:func:`out` and :func:`err` escape their line, but for a ``styled`` one, which holds
runtime's own colour codes and whose caller escaped the rest. JSON output keeps the data
exact (:func:`runtime.text.json_dumps`: a lone surrogate as its escape, as text shows it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any, TextIO

from runtime.problems import Problem
from runtime.text import display_width, json_dumps, json_for, printable, wrap
from runtime.text import table as text_table

_CODES = {"red": "31", "green": "32", "yellow": "33", "cyan": "36", "bold": "1", "dim": "2"}
_SEVERITY_COLOURS = {"error": "red", "warning": "yellow", "info": "cyan"}


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
    target = stream or sys.stdout
    target.write(json_for(target, json_dumps(doc, indent=2)) + "\n")
    target.flush()


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 error``, ``2 errors``; ``many`` for a word whose plural is not word + s."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def step_ranges(ranges: Iterable[Sequence[int]]) -> str:
    """``step 2``, ``steps 1-3``, ``steps 1, 4``: the steps a Lineage entry names."""
    pairs = [(r[0], r[1]) for r in ranges]
    text = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in pairs)
    one = len(pairs) == 1 and pairs[0][0] == pairs[0][1]
    return f"step {text}" if one else f"steps {text}"


def steps_named(indices: Iterable[int]) -> str:
    """``step 3``, ``steps 3, 4``, ``steps 5-131``: three or more in a row as a range (a
    run stopped at step 4 of 131 says so on one line)."""
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    pairs: list[tuple[int, int]] = []
    for a, b in runs:
        pairs += [(a, a), (b, b)] if b == a + 1 else [(a, b)]
    return step_ranges(pairs)


def out(text: str = "", *, styled: bool = False) -> None:
    sys.stdout.write((text if styled else printable(text, "\n\t")) + "\n")


def err(text: str = "", *, styled: bool = False) -> None:
    sys.stderr.write((text if styled else printable(text, "\n\t")) + "\n")


def problem_line(p: Problem, stream: TextIO | None = None) -> str:
    """``FILE:LINE:COL: severity: message``, escaped, the severity in colour (styled)."""
    severity = paint(p.severity, _SEVERITY_COLOURS.get(p.severity, "yellow"), stream)
    return f"{printable(p.file)}:{p.line}:{p.column}: {severity}: {printable(p.message)}"


def problem_block(
    p: Problem, source_lines: Sequence[str] | None, hide: Callable[[str], str] = str
) -> list[str]:
    """``FILE:LINE:COL: severity: message`` then the source line with a caret, then the hint
    (styled lines: see :func:`problem_line`). ``hide`` redacts the source line: the caret
    moves with what it hides."""
    lines = [problem_line(p)]
    if source_lines is not None and 1 <= p.line <= len(source_lines):
        src = source_lines[p.line - 1].replace("\t", " ")
        if len(src) > 160:
            start = max(0, p.column - 80)
            src = src[start : start + 160]
            caret_col = p.column - start
        else:
            caret_col = p.column
        # an escape is wider than the character it shows: the caret moves with it
        caret_col = len(printable(hide(src[: max(0, caret_col - 1)]))) + 1
        gutter = str(p.line)
        pad = " " * len(gutter)
        lines.append(f"  {gutter} | {printable(hide(src))}")
        lines.append(f"  {pad} | {' ' * max(0, caret_col - 1)}^")
    if p.hint:
        lines.append(f"  hint: {printable(p.hint)}")
    return lines


def plain_line(p: Problem) -> str:
    """``FILE:LINE:COL: severity: message``, escaped, one line whatever the file's name."""
    return f"{printable(p.file)}:{p.line}:{p.column}: {p.severity}: {printable(p.message)}"


def github_annotation(p: Problem) -> str:
    """A GitHub Actions workflow command (an annotation), escaped as the runner unescapes
    (%25, %0D, %0A, %3A, %2C); the caller's text escaping then shows any other control
    character (an ESC in a file's name): such a name is not matched, but a terminal that
    shows the command never gets the character raw."""

    def esc_data(s: str) -> str:
        return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def esc_prop(s: str) -> str:
        return esc_data(s).replace(":", "%3A").replace(",", "%2C")

    kind = {"error": "error", "warning": "warning"}.get(p.severity, "notice")
    message = p.message + (f" (hint: {p.hint})" if p.hint else "")
    return (
        f"::{kind} file={esc_prop(p.file)},line={p.line},col={p.column},"
        f"title={esc_prop(p.code)}::{esc_data(message)}"
    )


def terminal_width() -> int | None:
    """``COLUMNS``, else the width of the terminal stdout is; None when it is not one (a
    pipe, a file: lines are not wrapped for a reader that has no width)."""
    import shutil

    return shutil.get_terminal_size((0, 0)).columns or None


def table(
    rows: Iterable[Sequence[object]],
    headers: Sequence[str] | None = None,
    *,
    indent: str = "",
    right: Container[int] = (),
) -> list[str]:
    """:func:`runtime.text.table`, each line after ``indent``, wrapped to the terminal."""
    width = terminal_width()
    limit = None if width is None else width - len(indent)
    return [indent + line for line in text_table(rows, headers, width=limit, right=right)]


def out_wrapped(line: str, indent: str = "", hanging: str = "    ") -> None:
    """A line of prose after ``indent`` on stdout, escaped and wrapped to the terminal
    (continuation lines after ``hanging``); as it is when stdout is not a terminal."""
    line = printable(line)
    width = terminal_width()
    shown = display_width(line)
    if width is None or len(indent) + shown <= width:
        out(indent + line)
        return
    if shown != len(line):  # wide characters (CJK, emoji) take two cells each
        room = max(1, width - max(len(indent), len(hanging)))
        for i, part in enumerate(wrap(line, room)):
            out((hanging if i else indent) + part)
        return
    import textwrap

    for part in textwrap.wrap(
        line, width, initial_indent=indent, subsequent_indent=hanging, break_on_hyphens=False
    ):
        out(part)
