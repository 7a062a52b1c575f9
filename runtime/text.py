"""Showing text that runtime did not write (inputs, file names, a program's output) safely.

A terminal acts on some characters instead of showing them: ESC starts a sequence that
can recolour, clear the screen, retitle the window or rewrite the clipboard; C1 controls
(U+0080-U+009F) do the same on some terminals; a carriage return or backspace
overwrites what was shown; bidirectional overrides reorder a line (so that what is read
is not what is there). :func:`printable` shows each as the escape Python's ``repr``
would (``\\x1b``, ``\\r``, ``\\u202e``): the notation ``plan`` uses for input values.

Text output passes what it shows through it (the CLI's ``out``/``err``, tables, step
output); JSON output (:func:`json_dumps`) keeps the data exact but for lone surrogates,
which it shows as text output does, and raw output (bytes passed through for a pipe)
is not text output.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Container, Iterable, Sequence
from typing import Any

# C0 controls; DEL and C1 controls, the bidirectional marks, embeddings, overrides and
# isolates, the line and paragraph separators (a line break to some viewers); and lone
# surrogates, which no UTF-8 stream can carry (a YAML "\udb1e" escape makes one)
_C0 = "\x00-\x1f"
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
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


def json_dumps(value: Any, **options: Any) -> str:
    """``value`` as JSON text (``options`` as for :func:`json.dumps`; anything JSON cannot
    hold as its ``str``): the one way runtime writes JSON (``--output json`` documents,
    the audit log, the JSON event stream), so that every string in each is Unicode, as
    I-JSON (RFC 7493) and the strictest readers require. See :func:`json_text`."""
    if not options:  # one encoder for the plain form, as json.dumps keeps its own
        return json_text(_ENCODER.encode(value))
    options.setdefault("default", str)
    return json_text(json.dumps(value, ensure_ascii=False, **options))


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def json_text(document: str) -> str:
    """The text of a JSON document from ``json.dumps(..., ensure_ascii=False)`` with the
    characters a terminal acts on as ``\\uXXXX`` escapes: the same data to any JSON
    reader (in JSON text they can only stand inside strings).

    A lone surrogate is no character at all, and a strict reader (I-JSON, Rust's
    serde_json) refuses a whole document for one, escaped or not; yet Python holds one
    for each byte of a name or an argument that is not UTF-8 (``b"caf\\xff"`` is
    ``"caf\\udcff"``). It becomes the six characters of its escape, the backslash
    escaped (``"caf\\\\udcff"``): the text output's ``caf\\udcff`` (:func:`printable`),
    so the name stays one a reader can tell apart and match to what the terminal shows.
    """
    if document.isascii() and "\x7f" not in document:  # DEL: the one such ASCII character
        return document
    return _JSON_RAW.sub(_json_escape, document)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate: its escape as text
        return f"\\\\u{code:04x}"
    return f"\\u{code:04x}"


def not_utf8(value: str) -> str | None:
    """Where ``value`` holds what is not UTF-8 text (``byte 0xff at character 2``), or
    None: a byte of the command line or the environment that was not UTF-8, which Python
    keeps as the lone surrogate standing for it, or another lone surrogate."""
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = value[exc.start]
        what = f"byte 0x{ord(char) - 0xDC00:02x}" if "\udc80" <= char <= "\udcff" else "a surrogate"
        return f"{what} at character {exc.start + 1}"
    return None


def nearest(word: str, candidates: Iterable[str], limit: int = 1) -> list[str]:
    """The ``candidates`` ``word`` was probably meant to be, closest first, for a "did
    you mean": those one edit away (a letter added, dropped, changed, or two swapped:
    ``gti``, ``stauts``, ``provder``), two for a word of more than 6 letters, else
    difflib's close matches. A word that is a candidate itself has none."""
    from difflib import get_close_matches

    pool = list(dict.fromkeys(candidates))
    if word in pool:
        return []
    allowed = 2 if len(word) > 6 else 1
    scored = sorted(
        (d, c) for c in pool if (d := _edits(word.lower(), c.lower(), allowed)) <= allowed
    )
    found = [c for _, c in scored]
    found += [c for c in get_close_matches(word, pool, n=limit, cutoff=0.75) if c not in found]
    return found[:limit]


def _edits(a: str, b: str, bound: int) -> int:
    """The optimal string alignment distance of ``a`` and ``b`` (Levenshtein with adjacent
    swaps), or ``bound + 1`` once it is sure to exceed ``bound``."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > bound:
            return bound + 1
        before, previous = previous, current
    return previous[-1]


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut shown by an ellipsis (``...``)."""
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def table(
    rows: Iterable[Sequence[object]],
    headers: Sequence[str] | None = None,
    *,
    width: int | None = None,
    right: Container[int] = (),
) -> list[str]:
    """Rows in columns two spaces apart, each cell escaped (:func:`printable`), the columns
    in ``right`` aligned right (numbers).

    ``width``: the lines' limit (None: no limit). Past it, the widest columns are
    narrowed first, none below its header or :data:`MIN_COLUMN`, and their cells wrap
    onto continuation lines: a word longer than its column is broken, never cut off.
    When that would leave the last column (the prose: a reason, a summary) narrower than
    :data:`MIN_LAST`, it goes below its row instead, indented, on lines of the full width.
    """
    data = [[printable(str(cell)) for cell in row] for row in rows]
    if headers:
        if not all(headers):  # a blank header puts its neighbour over the wrong column
            raise ValueError(f"every column needs a header: {list(headers)}")
        data.insert(0, list(headers))
    if not data:
        return []
    columns = max(len(row) for row in data)
    for row in data:
        row.extend([""] * (columns - len(row)))
    natural = [max(display_width(row[i]) for row in data) for i in range(columns)]
    if width is None or sum(natural) + 2 * (columns - 1) <= width:
        return _lines(data, natural, right)
    floors = [
        min(w, max(MIN_COLUMN, display_width(data[0][i]) if headers else 0))
        for i, w in enumerate(natural)
    ]
    widths = _fit(natural, floors, width - 2 * (columns - 1))
    if columns == 1 or widths[-1] >= min(natural[-1], MIN_LAST):
        return _lines(data, widths, right)
    widths = _fit(natural[:-1], floors[:-1], width - 2 * (columns - 2))
    below = max(width - len(BELOW), MIN_COLUMN)
    lines: list[str] = []
    for row in data:
        lines += _lines([row[:-1]], widths, right)
        lines += [BELOW + line for line in wrap(row[-1], below) if line]
    return lines


MIN_COLUMN = 10  # characters: narrower, a wrapped cell reads a few letters a line
MIN_LAST = 30  # the last column, narrower than this, goes below its row
BELOW = "    "  # the indent of a last column below its row


def _lines(data: list[list[str]], widths: list[int], right: Container[int]) -> list[str]:
    lines: list[str] = []
    for row in data:
        cells = [wrap(cell, widths[i]) for i, cell in enumerate(row)]
        for k in range(max(len(c) for c in cells)):
            parts = [c[k] if k < len(c) else "" for c in cells]
            pads = [" " * max(0, widths[i] - display_width(part)) for i, part in enumerate(parts)]
            aligned = [
                pads[i] + part if i in right else part + pads[i] for i, part in enumerate(parts)
            ]
            lines.append("  ".join(aligned).rstrip())
    return lines


def _fit(natural: list[int], floors: list[int], budget: int) -> list[int]:
    """Column widths that fit ``budget`` as far as the floors allow: the widest columns
    are capped at one width, the largest that fits."""
    if sum(natural) <= budget:
        return natural
    cap = max(natural)
    pairs = list(zip(natural, floors, strict=True))
    while cap > 0 and sum(max(min(w, cap), f) for w, f in pairs) > budget:
        cap -= 1
    return [max(min(w, cap), f) for w, f in pairs]


def wrap(cell: str, width: int) -> list[str]:
    """``cell`` on lines of at most ``width`` terminal cells, broken between words (a word
    longer than that is broken too): a table's cell, or a line of prose."""
    shown = display_width(cell)
    if shown <= width:
        return [cell]
    if shown == len(cell):  # one cell a character
        import textwrap

        return textwrap.wrap(cell, width, break_on_hyphens=False) or [""]
    lines: list[str] = []
    line, used = "", 0
    for word in cell.split():
        size = display_width(word)
        if line and used + 1 + size <= width:
            line, used = f"{line} {word}", used + 1 + size
            continue
        if line:
            lines.append(line)
        while size > width:
            head = _head(word, width)
            lines.append(head)
            word, size = word[len(head) :], size - display_width(head)
        line, used = word, size
    if line:
        lines.append(line)
    return lines or [""]


def _head(word: str, width: int) -> str:
    """The longest start of ``word`` that takes at most ``width`` cells (one character
    at least)."""
    used = 0
    for i, char in enumerate(word):
        used += _cell(char)
        if used > width:
            return word[: max(i, 1)]
    return word


def display_width(text: str) -> int:
    """How many terminal cells ``text`` takes: two for a wide character (CJK, most emoji:
    East Asian Wide or Fullwidth), none for a combining mark or a zero-width format
    character, one for any other (what tables align and wrap by)."""
    if text.isascii():
        return len(text)
    return sum(_cell(char) for char in text)


def _cell(char: str) -> int:
    import unicodedata

    if char.isascii():
        return 1
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


# The error handler for a stream whose encoding is not UTF-8 (a Latin-1 locale,
# PYTHONIOENCODING=ascii): each character it cannot hold as its JSON escape
ESCAPE = "runtime.escape"


def _unencodable(exc: UnicodeError) -> tuple[str, int]:
    """:data:`ESCAPE`: ``\\u00e9`` for a character (a UTF-16 pair for one beyond U+FFFF),
    which reads the same in text and is valid inside a JSON string, where alone in a
    JSON text such a character can stand."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end


codecs.register_error(ESCAPE, _unencodable)


def utf8(encoding: str | None) -> bool:
    """Whether ``encoding`` (a stream's; None: the locale's) is UTF-8."""
    import locale

    try:
        return codecs.lookup(encoding or locale.getpreferredencoding(False)).name == "utf-8"
    except LookupError:
        return False


def json_for(stream: Any, document: str) -> str:
    """A JSON text as ``stream`` should get it: as it is on a UTF-8 stream; else every
    character beyond ASCII as its escape, the same data in bytes that read alike in
    UTF-8 (what a JSON reader expects) and in the stream's encoding."""
    if document.isascii() or utf8(getattr(stream, "encoding", None)):
        return document
    return document.encode("ascii", ESCAPE).decode("ascii")
