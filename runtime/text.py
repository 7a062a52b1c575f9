"""Showing text that runtime did not write (inputs, file names, a program's output) safely.

A terminal acts on some characters instead of showing them: ESC starts a sequence that
can recolour, clear the screen, retitle the window or rewrite the clipboard; C1 controls
(U+0080-U+009F) do the same on some terminals; a carriage return or backspace
overwrites what was shown; bidirectional overrides reorder a line (so that what is read
is not what is there). :func:`printable` shows each as the escape Python's ``repr``
would (``\\x1b``, ``\\r``, ``\\u202e``): the notation ``plan`` uses for input values.

Text output passes what it shows through it (the CLI's ``out``/``err``, tables, step
output); JSON output keeps the data exact, and raw output (bytes passed through for
a pipe) is not text output.
"""

from __future__ import annotations

import re

# C0 controls; DEL and C1 controls, the bidirectional marks, embeddings, overrides and
# isolates, the line and paragraph separators (a line break to some viewers)
_C0 = "\x00-\x1f"
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ACTING = _C0 + _OTHERS
_PATTERNS: dict[str, re.Pattern[str]] = {}


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character a terminal acts on escaped, but those in ``keep``
    (``"\\n\\t"`` for multi-line text; nothing for a one-line value such as a table cell)."""
    pattern = _PATTERNS.get(keep)
    if pattern is None:
        kept = "".join(re.escape(ch) for ch in keep)
        pattern = _PATTERNS[keep] = re.compile(
            f"(?![{kept}])[{_ACTING}]" if kept else f"[{_ACTING}]"
        )
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


# what json.dumps(ensure_ascii=False) leaves raw among them (it escapes C0 itself)
_JSON_RAW = re.compile(f"[{_OTHERS}]")


def json_text(document: str) -> str:
    """A JSON document's text with those characters as ``\\uXXXX`` escapes: the same data
    to any JSON reader (in JSON text they can only stand inside strings)."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", document)
