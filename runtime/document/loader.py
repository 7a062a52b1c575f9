"""Load a capability file: frontmatter, the runtime block, prose, a line map.

This is the first station. It reads bytes, refuses what cannot be a
capability (too large, not UTF-8, NUL bytes), splits off the YAML
frontmatter, finds fenced code blocks with CommonMark's rules and picks the
one whose info string is exactly ``runtime``. Positions are always lines
and columns of the Markdown file itself.
"""

from __future__ import annotations

import errno
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from runtime.document.fences import FencedBlock, find_fenced_blocks
from runtime.problems import Problem
from runtime.reading import NotRegularFile, position, read_file

MAX_BYTES = 1024 * 1024  # documented in specs/capability-spec.md
# YAML is parsed by a pure-Python parser, slow per KiB: the parts of a file that are YAML get their own, smaller limits,
# so any file gets its verdict in a few seconds.
MAX_BLOCK_BYTES = 256 * 1024
MAX_FRONTMATTER_BYTES = 64 * 1024

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_LINEAGE_REF = re.compile(r"`([A-Za-z0-9][A-Za-z0-9._/\-]*)`")
_STEP_WORDS = re.compile(
    r"\bsteps?\b((?:\s*(?:,|and|&)?\s*\d+(?:\s*(?:-|–|—|to)\s*\d+)?)+)", re.IGNORECASE
)
_RANGE = re.compile(r"(\d+)(?:\s*(?:-|–|—|to)\s*(\d+))?")


class Frontmatter(NamedTuple):
    text: str
    first_line: int  # 1-based line of the first YAML line (after the opening ---)
    end_line: int  # 1-based line of the closing ---


class LineageEntry(NamedTuple):
    name: str
    steps: tuple[tuple[int, int], ...]
    line: int
    column: int

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "steps": [list(r) for r in self.steps], "line": self.line}


@dataclass
class Document:
    path: str
    text: str
    sha256: str
    frontmatter: Frontmatter | None = None
    blocks: list[FencedBlock] = field(default_factory=list)
    runtime_block: FencedBlock | None = None
    title: str | None = None
    lineage: list[LineageEntry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def error(
        self, line: int, column: int, code: str, message: str, hint: str | None = None
    ) -> None:
        self.problems.append(Problem(self.path, line, column, "error", code, message, hint))


def read_capability_bytes(path: Path) -> bytes:
    return read_file(path, MAX_BYTES + 1)


def load_document(path: Path, display: str | None = None, data: bytes | None = None) -> Document:
    """Load one capability file. Problems are collected, never raised."""
    label = display or str(path)
    if data is None:
        try:
            data = read_capability_bytes(path)
        except OSError as exc:
            doc = Document(label, "", "")
            code = "not-a-file" if isinstance(exc, NotRegularFile) else "unreadable"
            doc.error(
                1, 1, code, f"cannot read the file: {exc.strerror or exc}", _unreadable(exc, label)
            )
            return doc
    return parse_document(data, label)


def _unreadable(exc: OSError, label: str) -> str:
    """What to do about a capability file that could not be read."""
    if isinstance(exc, NotRegularFile):
        return "name a capability's Markdown file"
    if exc.errno == errno.ELOOP:
        return (
            f"a symbolic link on the way to {label} leads back to itself; point it at the "
            f"capability file (`ls -l {label}` shows where it leads)"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            f"runtime reads it as the user it runs as: give that user read access to it, "
            f"and to its folders (`ls -l {label}` shows who has it)"
        )
    return f"check that the file can be read (`head -c 1 {label}`), and the disk it is on"


def parse_document(data: bytes, label: str) -> Document:
    sha = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_BYTES:
        doc = Document(label, "", sha)
        doc.error(
            1,
            1,
            "too-large",
            f"the file is larger than {MAX_BYTES // 1024} KiB, the limit for a capability",
            "split the workflow into smaller capabilities",
        )
        return doc
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = position(data, exc.start)
        doc = Document(label, "", sha)
        doc.error(line, col, "not-utf8", "the file is not valid UTF-8", "save it as UTF-8")
        return doc
    doc = Document(label, text, sha)
    nul = text.find("\x00")
    if nul >= 0:
        line, col = _text_position(text, nul)
        doc.error(
            line, col, "nul-byte", "the file contains a NUL byte", "remove it; a capability is text"
        )
        return doc
    lines = _split_lines(text)
    scan_lines = list(lines)
    fm = _frontmatter(lines, doc)
    if fm is not None:
        doc.frontmatter = fm
        for i in range(0, fm.end_line):
            scan_lines[i] = ""
    doc.blocks = find_fenced_blocks("\n".join(scan_lines))
    runtime_blocks = [b for b in doc.blocks if b.info == "runtime"]
    if not runtime_blocks:
        doc.error(
            1,
            1,
            "no-runtime-block",
            "no runtime block: a capability needs one fenced code block whose info string is exactly 'runtime'",
            "add a ```runtime fence holding version, inputs and workflow",
        )
    elif len(runtime_blocks) > 1:
        lines_of = [str(b.fence_line) for b in runtime_blocks]
        where = ", ".join(lines_of[:5]) + (
            f" and {len(lines_of) - 5} more" if len(lines_of) > 5 else ""
        )
        for extra in runtime_blocks[1:]:
            doc.error(
                extra.fence_line,
                extra.indent + 1,
                "multiple-runtime-blocks",
                f"more than one runtime block (at lines {where}); a capability has exactly one",
                "merge the workflows, or split them into separate capability files",
            )
    elif len(runtime_blocks[0].content.encode("utf-8")) > MAX_BLOCK_BYTES:
        doc.error(
            runtime_blocks[0].fence_line,
            runtime_blocks[0].indent + 1,
            "too-large",
            f"the runtime block is larger than {MAX_BLOCK_BYTES // 1024} KiB, the limit for one workflow",
            "split the workflow into smaller capabilities",
        )
    else:
        doc.runtime_block = runtime_blocks[0]
        if not runtime_blocks[0].closed:
            doc.error(
                runtime_blocks[0].fence_line,
                runtime_blocks[0].indent + 1,
                "unterminated-fence",
                "the runtime block's fence is never closed",
                f"close it with a line of {runtime_blocks[0].fence_length} or more "
                f"'{runtime_blocks[0].fence_char}'",
            )
    _prose(lines, doc, fm)
    return doc


def _split_lines(text: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", text)


def _text_position(text: str, index: int) -> tuple[int, int]:
    before = text[:index]
    line = before.count("\n") + 1
    return line, index - (before.rfind("\n") + 1) + 1


def _frontmatter(lines: list[str], doc: Document) -> Frontmatter | None:
    if not lines or lines[0].rstrip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            text = "\n".join(lines[1:i]) + "\n"
            if len(text.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
                doc.error(
                    1,
                    1,
                    "too-large",
                    f"the frontmatter is larger than {MAX_FRONTMATTER_BYTES // 1024} KiB",
                    "keep the frontmatter to metadata; put prose in the body",
                )
                return Frontmatter("", 2, i + 1)
            return Frontmatter(text, 2, i + 1)
    doc.error(
        1,
        1,
        "unterminated-frontmatter",
        "the frontmatter opened on line 1 is never closed",
        "end it with a line '---'",
    )
    return None


def _prose(lines: list[str], doc: Document, fm: Frontmatter | None) -> None:
    """Title (first level-1 heading) and the Lineage section, outside fences."""
    in_fence = [False] * (len(lines) + 2)
    for block in doc.blocks:
        for n in range(block.fence_line, block.end_line + 1):
            if n < len(in_fence):
                in_fence[n] = True
    start = fm.end_line if fm else 0
    in_lineage = False
    in_comment = False
    for index in range(start, len(lines)):
        number = index + 1
        if in_fence[number]:
            continue
        line, in_comment = _without_html_comments(lines[index], in_comment)
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            title = (heading.group(2) or "").strip()
            if level == 1 and doc.title is None:
                doc.title = title
            if level <= 2:
                in_lineage = level == 2 and title.casefold() == "lineage"
            continue
        if in_lineage:
            _lineage_line(line, number, doc)


def _without_html_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """The line with HTML comments blanked (columns kept), and whether one is still open."""
    chars = list(line)
    i = 0
    while i < len(line):
        if in_comment:
            end = line.find("-->", i)
            stop = len(line) if end < 0 else end + 3
            chars[i:stop] = " " * (stop - i)
            if end < 0:
                return "".join(chars), True
            i, in_comment = stop, False
        else:
            start = line.find("<!--", i)
            if start < 0:
                break
            i, in_comment = start, True
    return "".join(chars), in_comment


def _lineage_line(line: str, number: int, doc: Document) -> None:
    refs = list(_LINEAGE_REF.finditer(line))
    for i, ref in enumerate(refs):
        tail_end = refs[i + 1].start() if i + 1 < len(refs) else len(line)
        tail = line[ref.end() : tail_end]
        ranges: list[tuple[int, int]] = []
        words = _STEP_WORDS.search(tail)
        if words:
            for r in _RANGE.finditer(words.group(1)):
                a = int(r.group(1))
                b = int(r.group(2)) if r.group(2) else a
                ranges.append((a, b))
        doc.lineage.append(LineageEntry(ref.group(1), tuple(ranges), number, ref.start() + 2))
