"""Find CommonMark fenced code blocks in a Markdown document.

This is a small, dependency-free block-structure scanner.  It follows the
CommonMark block parsing strategy (match the open container blocks, then look
for new block starts, then hand the rest of the line to the open leaf block)
closely enough to decide, for every line, whether it opens, continues or
closes a fenced code block.  It models:

* block quotes (``>``) and list items (bullet and ordered), including lazy
  paragraph continuation lines, since these decide which container prefix is
  stripped from a line and where an unterminated fence ends;
* fenced code blocks, indented code blocks and HTML blocks, whose lines are
  never scanned for new blocks (a fence-looking line inside them is content);
* paragraphs, ATX and setext headings and thematic breaks, because they decide
  whether a line can interrupt or lazily continue a paragraph.

Inline content is never parsed.  Info strings are returned as written:
backslash escapes and entity references in them are *not* decoded.

Tabs are treated as advancing to the next multiple of four columns wherever
they contribute to block structure, as the specification requires; when a tab
is only partly used up by a container prefix or fence indentation, the rest of
its width appears as spaces at the start of the content line.

Every line costs time proportional to its length plus the number of
container blocks it opens or closes, so the scan is linear in the input size.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["FencedBlock", "find_fenced_blocks"]


class FencedBlock(NamedTuple):
    """One fenced code block found by :func:`find_fenced_blocks`.

    Line numbers are 1-based and count lines of the input as split at
    ``\\n``, ``\\r\\n`` or ``\\r``.
    """

    #: The info string: the text after the opening fence, stripped of
    #: surrounding spaces and tabs.  Escapes and entities are not decoded.
    info: str
    #: The content lines, each followed by ``"\\n"`` (``""`` for no lines),
    #: with container prefixes and up to ``indent`` columns of the fence's
    #: indentation removed from each line.
    content: str
    #: Line of the opening fence.
    fence_line: int
    #: Line of the first content line (always ``fence_line + 1``).
    content_start_line: int
    #: Line of the closing fence, or, for an unterminated block, the last
    #: line of the document or of the container block that ended it.
    end_line: int
    #: Whether a closing fence was found.
    closed: bool
    #: ``"`"`` or ``"~"``.
    fence_char: str
    #: Number of fence characters in the opening fence (3 or more).
    fence_length: int
    #: Indentation (0-3 columns) of the opening fence inside its container.
    indent: int
    #: Column (0-based, tabs expanded to stops of 4) at which the opening
    #: fence starts: the width of the container prefix (for example ``"> "``)
    #: plus ``indent``.  For a content line that carries its full prefix and
    #: indentation, content column ``c`` is source column ``c +
    #: content_column_offset``; when no tabs are involved columns are
    #: characters.  ``content_line_offsets`` gives the exact figure per line.
    content_column_offset: int
    #: For each content line, the index in the source line of the first
    #: character that belongs to the content, i.e. how many characters were
    #: stripped.  (If a tab was only partly used up by the prefix, the index
    #: is that of the tab, whose remaining width starts the content as
    #: spaces.)
    content_line_offsets: tuple[int, ...] = ()

    @property
    def language(self) -> str:
        """The first word of the info string (``""`` if there is none)."""
        words = self.info.split(None, 1)
        return words[0] if words else ""


# --- line-level patterns (all used with ``pattern.match(text, pos)``) -------

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FENCE_OPEN = re.compile(r"`{3,}|~{3,}")
_FENCE_CLOSE = re.compile(r"(`{3,}|~{3,})[ \t]*$")
_ATX_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_SETEXT_UNDERLINE = re.compile(r"(?:=+|-+)[ \t]*$")
_ORDERED_MARKER = re.compile(r"([0-9]{1,9})[.)]")

_HTML_TYPE_1 = re.compile(r"<(?:pre|script|style|textarea)(?:[ \t>]|$)", re.IGNORECASE)
_HTML_TYPE_1_END = re.compile(r"</(?:pre|script|style|textarea)>", re.IGNORECASE)
_HTML_TYPE_4 = re.compile(r"<![A-Za-z]")
_HTML_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|"
    "colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|"
    "footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|"
    "legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|"
    "param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|"
    "track|ul"
)
_HTML_TYPE_6 = re.compile(rf"</?(?:{_HTML_BLOCK_TAGS})(?:[ \t]|/?>|$)", re.IGNORECASE)
_ATTRIBUTE = (
    r"[ \t]+[A-Za-z_:][A-Za-z0-9_.:-]*"
    r"""(?:[ \t]*=[ \t]*(?:[^ \t"'=<>`]+|'[^']*'|"[^"]*"))?"""
)
_HTML_TYPE_7 = re.compile(
    rf"(?:<(?P<open>[A-Za-z][A-Za-z0-9-]*)(?:{_ATTRIBUTE})*[ \t]*/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*[ \t]*>)[ \t]*$"
)
_HTML_TYPE_7_EXCLUDED = frozenset({"pre", "script", "style", "textarea"})

# --- block kinds ------------------------------------------------------------

_QUOTE = 0
_ITEM = 1

_PARAGRAPH = 0
_INDENTED_CODE = 1
_HTML = 2
_FENCE = 3

_CODE_INDENT = 4


def _split_lines(text: str) -> list[str]:
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        # A final line ending terminates the last line; it does not start one.
        lines.pop()
    return lines


def _is_thematic_break(text: str, pos: int, suffix_starts: dict[str, int]) -> bool:
    """Whether ``text[pos:]`` is a thematic break.

    ``suffix_starts`` caches, per break character, where the longest suffix
    of the line made of that character, spaces and tabs begins, so that
    checking many positions of one line stays linear.
    """
    char = text[pos]
    if char not in "-*_":
        return False
    start = suffix_starts.get(char)
    if start is None:
        start = suffix_starts[char] = len(text.rstrip(char + " \t"))
    # Everything from ``pos`` on must be ``char``, spaces or tabs.
    return pos >= start and text.count(char, pos) >= 3


def _html_block_start(text: str, pos: int, can_interrupt_only: bool) -> int:
    """Return the HTML block type (1-7) starting at ``pos``, or 0.

    ``can_interrupt_only`` excludes type 7, which cannot interrupt a
    paragraph.
    """
    if text.startswith("<!--", pos):
        return 2
    if text.startswith("<?", pos):
        return 3
    if text.startswith("<![CDATA[", pos):
        return 5
    if _HTML_TYPE_4.match(text, pos):
        return 4
    if _HTML_TYPE_1.match(text, pos):
        return 1
    if _HTML_TYPE_6.match(text, pos):
        return 6
    if not can_interrupt_only:
        match = _HTML_TYPE_7.match(text, pos)
        if match and (match.group("open") or "").lower() not in _HTML_TYPE_7_EXCLUDED:
            return 7
    return 0


def _html_block_ends(kind: int, text: str, pos: int) -> bool:
    """Whether a line holds the end condition of an HTML block of type 1-5."""
    if kind == 1:
        return _HTML_TYPE_1_END.search(text, pos) is not None
    if kind == 2:
        return text.find("-->", pos) >= 0
    if kind == 3:
        return text.find("?>", pos) >= 0
    if kind == 4:
        return text.find(">", pos) >= 0
    if kind == 5:
        return text.find("]]>", pos) >= 0
    return False


@dataclass(slots=True)
class _Container:
    kind: int
    # For list items: the column offset of the item's content, relative
    # to the start of the item's parent's content.
    width: int = 0
    has_child: bool = False


@dataclass(slots=True)
class _OpenFence:
    line: int
    char: str
    length: int
    indent: int
    column: int
    info: str
    parts: list[str] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)

    def finish(self, end_line: int, closed: bool) -> FencedBlock:
        return FencedBlock(
            info=self.info,
            content="".join(self.parts),
            fence_line=self.line,
            content_start_line=self.line + 1,
            end_line=end_line,
            closed=closed,
            fence_char=self.char,
            fence_length=self.length,
            indent=self.indent,
            content_column_offset=self.column,
            content_line_offsets=tuple(self.offsets),
        )


class _Cursor:
    """A position inside one line, tracked both as index and as column."""

    __slots__ = ("_nn_col", "_nn_pos", "col", "partial", "pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.col = 0
        # True when ``text[pos]`` is a tab of which ``col`` has used up part.
        self.partial = False
        self._nn_pos = -1
        self._nn_col = 0

    def next_nonspace(self) -> tuple[int, int]:
        """Index and column of the first non-space, non-tab char from here.

        The result is cached: it stays valid while the cursor only moves
        through the same run of whitespace, which keeps repeated look-ups
        linear.
        """
        if self.pos > self._nn_pos:
            text = self.text
            pos = self.pos
            col = self.col
            end = len(text)
            while pos < end:
                char = text[pos]
                if char == " ":
                    col += 1
                elif char == "\t":
                    col += 4 - col % 4
                else:
                    break
                pos += 1
            self._nn_pos = pos
            self._nn_col = col
        return self._nn_pos, self._nn_col

    def advance_to_nonspace(self) -> None:
        self.pos, self.col = self.next_nonspace()
        self.partial = False

    def advance_chars(self, count: int) -> None:
        """Step over ``count`` characters that are not tabs."""
        self.pos += count
        self.col += count
        self.partial = False

    def advance_columns(self, count: int, whitespace_only: bool = False) -> None:
        """Step over ``count`` columns, splitting a tab if needed."""
        text = self.text
        end = len(text)
        while count > 0 and self.pos < end:
            char = text[self.pos]
            if char == "\t":
                width = 4 - self.col % 4
                if count < width:
                    self.col += count
                    self.partial = True
                    return
                self.col += width
                count -= width
            elif whitespace_only and char != " ":
                return
            else:
                self.col += 1
                count -= 1
            self.pos += 1
            self.partial = False

    def rest(self) -> tuple[str, int]:
        """The remaining text and the index it starts at in the line."""
        if self.partial:
            return " " * (4 - self.col % 4) + self.text[self.pos + 1 :], self.pos
        return self.text[self.pos :], self.pos


class _Scanner:
    def __init__(self) -> None:
        self.blocks: list[FencedBlock] = []
        # Open container blocks, outermost first; the document itself is
        # implicit and always matches.
        self.containers: list[_Container] = []
        # Indices into ``containers`` of the blocks that cannot continue on a
        # blank line (block quotes and list items that have no child yet), in
        # increasing order.  Lets a blank line skip the list items that all
        # accept it without visiting each of them.
        self.blank_stoppers: list[int] = []
        # The open leaf block, which belongs to ``containers[-1]``.
        self.leaf: int | None = None
        self.html_kind = 0
        self.fence: _OpenFence | None = None
        self.line_number = 0

    # -- tree maintenance ----------------------------------------------------

    def close_leaf(self, end_line: int) -> None:
        if self.leaf == _FENCE and self.fence is not None:
            self.blocks.append(self.fence.finish(end_line, closed=False))
            self.fence = None
        self.leaf = None

    def close_containers_from(self, index: int) -> None:
        if index < len(self.containers):
            self.close_leaf(self.line_number - 1)
            del self.containers[index:]
            stoppers = self.blank_stoppers
            del stoppers[bisect.bisect_left(stoppers, index) :]

    def add_child(self) -> None:
        """Record that a block is being added to the innermost container."""
        self.close_leaf(self.line_number - 1)
        if self.containers:
            parent = self.containers[-1]
            if not parent.has_child:
                parent.has_child = True
                if parent.kind == _ITEM:
                    # An item is the last stopper until it gets a child.
                    self.blank_stoppers.pop()

    def open_container(self, container: _Container) -> None:
        self.add_child()
        self.containers.append(container)
        self.blank_stoppers.append(len(self.containers) - 1)

    # -- per line ------------------------------------------------------------

    def match_containers(self, cursor: _Cursor) -> int:
        """Match the open containers against a line; return how many match."""
        containers = self.containers
        count = len(containers)
        index = 0
        while index < count:
            nn_pos, nn_col = cursor.next_nonspace()
            if nn_pos == len(cursor.text):
                # The rest of the line is blank: every list item with a child
                # continues, so jump straight to the first block that cannot.
                cursor.advance_to_nonspace()
                stoppers = self.blank_stoppers
                first = bisect.bisect_left(stoppers, index)
                return stoppers[first] if first < len(stoppers) else count
            container = containers[index]
            indent = nn_col - cursor.col
            if container.kind == _QUOTE:
                if indent >= _CODE_INDENT or cursor.text[nn_pos] != ">":
                    return index
                cursor.advance_to_nonspace()
                cursor.advance_chars(1)
                if cursor.pos < len(cursor.text) and cursor.text[cursor.pos] in " \t":
                    cursor.advance_columns(1)
            else:
                if indent < container.width:
                    return index
                cursor.advance_columns(container.width)
            index += 1
        return count

    def scan_line(self, text: str) -> None:
        fence = self.fence
        if fence is not None and not self.containers and "\t" not in text:
            # Most lines of a capability are content of a top-level fenced block: without
            # tabs and containers, a line that cannot close the fence is content with up
            # to the fence's indentation removed (what scan_line_in_full does with it).
            stripped = text.lstrip(" ")
            indent = len(text) - len(stripped)
            if indent >= _CODE_INDENT or not stripped.startswith(fence.char):
                self.line_number += 1
                cut = min(indent, fence.indent)
                fence.parts.append(text[cut:] + "\n")
                fence.offsets.append(cut)
                return
        self.scan_line_in_full(text)

    def scan_line_in_full(self, text: str) -> None:
        self.line_number += 1
        cursor = _Cursor(text)
        matched = self.match_containers(cursor)
        all_matched = matched == len(self.containers)
        nn_pos, nn_col = cursor.next_nonspace()
        blank = nn_pos == len(text)
        indent = nn_col - cursor.col

        # Continue the open leaf block if its container chain matched.
        leaf = self.leaf
        if all_matched and leaf is not None and leaf != _PARAGRAPH:
            if leaf == _FENCE:
                self.continue_fence(cursor, indent, nn_pos)
                return
            if leaf == _INDENTED_CODE:
                if indent >= _CODE_INDENT or blank:
                    return
            elif not (blank and self.html_kind >= 6):
                # An HTML block of type 6 or 7 ends before a blank line; the
                # others take every line until one holds their end condition.
                if _html_block_ends(self.html_kind, text, cursor.pos):
                    self.close_leaf(self.line_number)
                return
            # The leaf does not continue; it is closed below.
            self.close_leaf(self.line_number - 1)

        # ``tip_is_paragraph``: the deepest open block is still the old
        # paragraph (so the line may continue it, lazily or not).
        tip_is_paragraph = self.leaf == _PARAGRAPH
        # ``in_paragraph``: the line is paragraph continuation text unless a
        # block start interrupts it.
        in_paragraph = tip_is_paragraph and all_matched and not blank

        closed_unmatched = False
        break_suffixes: dict[str, int] = {}

        def close_unmatched() -> None:
            nonlocal closed_unmatched
            if not closed_unmatched:
                self.close_containers_from(matched)
                closed_unmatched = True

        while True:
            nn_pos, nn_col = cursor.next_nonspace()
            blank = nn_pos == len(text)
            indent = nn_col - cursor.col
            if blank:
                break
            if indent >= _CODE_INDENT:
                if not tip_is_paragraph:
                    close_unmatched()
                    self.add_child()
                    self.leaf = _INDENTED_CODE
                    return
                break
            char = text[nn_pos]
            if char == ">":
                close_unmatched()
                cursor.advance_to_nonspace()
                cursor.advance_chars(1)
                if cursor.pos < len(text) and text[cursor.pos] in " \t":
                    cursor.advance_columns(1)
                self.open_container(_Container(_QUOTE))
                tip_is_paragraph = in_paragraph = False
                continue
            if char == "#" and _ATX_HEADING.match(text, nn_pos):
                close_unmatched()
                self.add_child()
                return
            if char in "`~":
                match = _FENCE_OPEN.match(text, nn_pos)
                if match and not (char == "`" and text.find("`", match.end()) >= 0):
                    close_unmatched()
                    self.add_child()
                    self.leaf = _FENCE
                    self.fence = _OpenFence(
                        line=self.line_number,
                        char=char,
                        length=match.end() - nn_pos,
                        indent=indent,
                        column=nn_col,
                        info=text[match.end() :].strip(" \t"),
                    )
                    return
            if char == "<":
                kind = _html_block_start(text, nn_pos, can_interrupt_only=tip_is_paragraph)
                if kind:
                    close_unmatched()
                    self.add_child()
                    if not (kind <= 5 and _html_block_ends(kind, text, nn_pos)):
                        self.leaf = _HTML
                        self.html_kind = kind
                    return
            if in_paragraph and char in "=-" and _SETEXT_UNDERLINE.match(text, nn_pos):
                # The paragraph becomes a setext heading and ends here.
                self.close_leaf(self.line_number)
                return
            if _is_thematic_break(text, nn_pos, break_suffixes):
                close_unmatched()
                self.add_child()
                return
            width = self.list_item_width(cursor, nn_pos, indent, in_paragraph)
            if width:
                close_unmatched()
                self.open_container(_Container(_ITEM, width))
                tip_is_paragraph = in_paragraph = False
                continue
            break

        if tip_is_paragraph and not blank:
            # Paragraph continuation text (possibly a lazy continuation line,
            # in which case the unmatched containers stay open).
            return
        close_unmatched()
        if blank:
            if self.leaf == _PARAGRAPH:
                self.close_leaf(self.line_number - 1)
            return
        self.add_child()
        self.leaf = _PARAGRAPH

    def list_item_width(self, cursor: _Cursor, nn_pos: int, indent: int, in_paragraph: bool) -> int:
        """If a list item starts at ``nn_pos``, consume its marker and return
        its content width; otherwise return 0 and leave the cursor alone."""
        text = cursor.text
        char = text[nn_pos]
        if char in "-+*":
            marker_end = nn_pos + 1
        else:
            match = _ORDERED_MARKER.match(text, nn_pos)
            if not match:
                return 0
            if in_paragraph and int(match.group(1)) != 1:
                return 0
            marker_end = match.end()
        if marker_end < len(text) and text[marker_end] not in " \t":
            return 0
        if in_paragraph and not text[marker_end:].strip(" \t"):
            # An empty list item cannot interrupt a paragraph.
            return 0
        marker_width = marker_end - nn_pos
        cursor.advance_to_nonspace()
        cursor.advance_chars(marker_width)
        after_pos, after_col = cursor.next_nonspace()
        spaces = after_col - cursor.col
        if after_pos == len(text) or spaces >= 5 or spaces < 1:
            # Blank start or indented code inside the item: the content
            # starts one column after the marker.
            padding = marker_width + 1
            if cursor.pos < len(text):
                cursor.advance_columns(1)
        else:
            padding = marker_width + spaces
            cursor.advance_to_nonspace()
        return indent + padding

    def continue_fence(self, cursor: _Cursor, indent: int, nn_pos: int) -> None:
        fence = self.fence
        assert fence is not None
        text = cursor.text
        if indent < _CODE_INDENT and nn_pos < len(text) and text[nn_pos] == fence.char:
            match = _FENCE_CLOSE.match(text, nn_pos)
            if match and len(match.group(1)) >= fence.length:
                self.blocks.append(fence.finish(self.line_number, closed=True))
                self.fence = None
                self.leaf = None
                return
        cursor.advance_columns(fence.indent, whitespace_only=True)
        content, offset = cursor.rest()
        fence.parts.append(content + "\n")
        fence.offsets.append(offset)

    def finish(self) -> list[FencedBlock]:
        self.line_number += 1
        self.close_leaf(self.line_number - 1)
        return self.blocks


def find_fenced_blocks(text: str) -> list[FencedBlock]:
    """Return the fenced code blocks of a CommonMark document, in order.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r``.  A fence nested inside
    another fenced block (for example a ```` ``` ```` fence inside a
    ```` ```` ```` fence) is content of the outer block and is not reported.
    """
    scanner = _Scanner()
    for line in _split_lines(text):
        scanner.scan_line(line)
    return scanner.finish()
