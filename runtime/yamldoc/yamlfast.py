"""A fast path for the plain YAML capabilities are written in.

strictyaml's bundled scanner and parser are pure Python and read a document
one character at a time, which for a workflow costs more than running its
steps. Most capabilities use a small, regular part of YAML: block mappings
with simple keys, block lists, single-line flow lists, plain and quoted
single-line values, comments. This module composes exactly that part, line
by line, into the same :class:`~runtime.yamldoc.yamlnode.Node` tree, positions
included.

It is a shortcut, never a second dialect. :func:`compose` returns ``None``
for anything outside the part it knows (tags, anchors, aliases, block
scalars, multi-line values, flow mappings, escapes, tabs, control
characters, document markers, empty values, indicators at the start of a
value, any indentation it does not expect) and :func:`runtime.yamldoc.yamltree.parse`
then hands the whole document to strictyaml, whose refusals and messages
apply unchanged. A differential test (``tests/unit/test_yamlfast.py``)
checks on generated documents that whenever this path accepts a document,
strictyaml composes the identical tree.

Kept on its measured merit: without it validating one small capability costs a
user more than the start-up budget allows (ARCHITECTURE.md, "Measured choices").
"""

from __future__ import annotations

import re

from runtime.yamldoc.yamlnode import MAX_DEPTH, MAX_NODES, DuplicateKey, Node

_DEEPEST = MAX_DEPTH // 2


class _Decline(Exception):
    """The document leaves the subset: strictyaml must parse it."""


# A simple key followed by ':' and a space or the end of the line.
_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-]*):(?: +|$)")
# Characters that may not start a plain value (YAML indicators, and the ones
# that start one only when followed by a space: '-', '?', ':').
_NOT_FIRST = frozenset("-?:,[]{}#&*!|>'\"%@` ")
# A plain item inside a flow list: no flow indicators, ':' or '#' at all; a
# leading '-' only before another character of the item (``-C``, ``--short``).
_FLOW_PLAIN = re.compile(r"(?:[^\s\-?:,\[\]{}#&*!|>'\"%@`]|-[^\s,\[\]{}#:])[^,\[\]{}#:]*")
# What keeps a flow list off the split-at-commas path: quotes, nested collections.
_FLOW_NOT_SIMPLE = re.compile(r"['\"\[{}]")
# Anything YAML does not allow unescaped, plus what this path leaves to strictyaml
# (tabs, carriage returns, the byte order mark, backslashes are handled per value).
# U+2028 and U+2029 are line breaks to strictyaml's reader (YAML 1.1), not text.
# Every character but '\n', U+0020-U+007E, U+00A0-U+2027, U+202A-U+D7FF,
# U+E000-U+FEFE, U+FF00-U+FFFD and U+10000-U+10FFFF, written as the characters it
# matches: the same set as a negated class of those ranges (tested on every code
# point): the negated class takes several times longer to compile, at every start.
_OUTSIDE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")


def compose(text: str) -> tuple[Node, list[DuplicateKey]] | None:
    """The document's tree and duplicate keys, or ``None`` to let strictyaml parse it."""
    if _OUTSIDE.search(text):
        return None
    try:
        return _Composer(text).document()
    except _Decline:
        return None


class _Composer:
    def __init__(self, text: str) -> None:
        # (0-based line number, indentation, text after the indentation) of each
        # line with content; blank and comment-only lines carry no meaning.
        self.lines: list[tuple[int, int, str]] = []
        append = self.lines.append
        for number, line in enumerate(text.split("\n")):
            stripped = line.lstrip(" ")
            if not stripped or stripped[0] == "#":
                continue
            indent = len(line) - len(stripped)
            if not indent and line.startswith(("---", "...", "%")):
                raise _Decline
            append((number, indent, stripped))
        self.duplicates: list[DuplicateKey] = []
        self.nodes = 0

    def document(self) -> tuple[Node, list[DuplicateKey]]:
        if not self.lines:
            raise _Decline  # an empty document: strictyaml says what it is
        _, indent, content = self.lines[0]
        node, index = self._block(0, indent, content, 0)
        if index != len(self.lines):
            raise _Decline
        return node, self.duplicates

    def _count(self, depth: int, nodes: int = 1) -> None:
        # Counted as strictyaml's composer counts them (every key, value and item,
        # tested); a document over the limits is left to it, to be reported there.
        self.nodes += nodes
        if self.nodes > MAX_NODES or depth > _DEEPEST:
            raise _Decline

    def _block(self, index: int, column: int, content: str, depth: int) -> tuple[Node, int]:
        """A block list or mapping whose first entry starts at ``column`` of line ``index``."""
        if content == "-" or content.startswith("- "):
            return self._sequence(index, column, content, depth)
        key = _KEY.match(content)
        if key is not None:
            return self._mapping(index, column, content, depth, key)
        raise _Decline  # a bare scalar, a flow collection, an indicator...

    def _mapping(
        self, index: int, column: int, content: str, depth: int, match: re.Match[str] | None
    ) -> tuple[Node, int]:
        """A block mapping; ``match`` is its first key's, when the caller has it."""
        self._count(depth)
        number = self.lines[index][0]
        pairs: list[tuple[Node, Node]] = []
        node = Node("map", number, column, "", (), pairs)
        seen: dict[str, Node] = {}
        while True:
            if match is None:
                match = _KEY.match(content)
                if match is None:
                    raise _Decline
            self._count(depth + 1)
            key = Node("scalar", number, column, match.group(1))
            rest = content[match.end() :]
            if not rest or rest[0] == "#":
                value, index = self._nested(index, column, depth + 1)
            else:
                value = self._inline(rest, number, column + match.end(), depth + 1)
                index += 1
            first = seen.get(key.text)
            if first is not None:
                self.duplicates.append(DuplicateKey(key.text, key.line, key.column, first.line))
            else:
                seen[key.text] = key
                pairs.append((key, value))
            if index == len(self.lines):
                return node, index
            number, indent, content = self.lines[index]
            if indent < column:
                return node, index
            if indent > column:
                raise _Decline  # a continuation line, or indentation we do not expect
            match = None

    def _nested(self, index: int, column: int, depth: int) -> tuple[Node, int]:
        """The value of a key written alone on its line (``key:``)."""
        following = index + 1
        if following == len(self.lines):
            raise _Decline  # an empty value
        _, indent, content = self.lines[following]
        if indent > column:
            return self._block(following, indent, content, depth)
        if indent == column and (content == "-" or content.startswith("- ")):
            return self._sequence(following, column, content, depth)  # an indentless list
        raise _Decline  # an empty value

    def _sequence(self, index: int, column: int, content: str, depth: int) -> tuple[Node, int]:
        self._count(depth)
        number = self.lines[index][0]
        items: list[Node] = []
        node = Node("seq", number, column, "", items)
        while True:
            if not content.startswith("- "):
                raise _Decline  # '-' alone: the item is on the next lines
            item = content[2:].lstrip(" ")
            item_column = column + len(content) - len(item)
            if not item or item[0] == "#" or item == "-" or item.startswith("- "):
                raise _Decline
            key = _KEY.match(item)
            if key is not None:
                value, index = self._mapping(index, item_column, item, depth + 1, key)
            else:
                value = self._inline(item, number, item_column, depth + 1)
                index += 1
            items.append(value)
            if index == len(self.lines):
                return node, index
            number, indent, content = self.lines[index]
            if indent > column:
                raise _Decline
            if indent < column or not (content == "-" or content.startswith("- ")):
                return node, index

    def _inline(self, text: str, number: int, column: int, depth: int) -> Node:
        """A value that starts on its key's (or list item's) line and ends there."""
        first = text[0]
        if first == "[":
            node, end = self._flow(text, number, column, depth)
            self._rest(text, end)
            return node
        if first in "'\"":
            self._count(depth)
            value, end = _quoted(text, 0)
            self._rest(text, end)
            return Node("scalar", number, column, value, (), (), False)
        if first in _NOT_FIRST and not (first == "-" and text[1:2] not in ("", " ")):
            raise _Decline
        self._count(depth)
        cut = text.find(" #")
        value = (text if cut < 0 else text[:cut]).rstrip(" ")
        if ": " in value or value.endswith(":"):
            raise _Decline
        return Node("scalar", number, column, value)

    def _flow(self, text: str, number: int, column: int, depth: int) -> tuple[Node, int]:
        """A flow list written on one line: ``[a, "b c", 'd']``; returns it and its end."""
        self._count(depth)
        items: list[Node] = []
        node = Node("seq", number, column, "", items)
        close = text.find("]")
        if close > 0 and not _FLOW_NOT_SIMPLE.search(text, 1, close):
            # plain items only (most args lists): split at the commas; each item must be
            # what the item-by-item reading below would take, or the document is declined
            inner = text[1:close]
            if not inner.strip(" "):
                return node, close + 1
            pieces = inner.split(",")
            self._count(depth + 1, len(pieces))  # declined either way if over a limit
            append = items.append
            fullmatch = _FLOW_PLAIN.fullmatch
            start = column + 1
            for piece in pieces:
                lead = piece.lstrip(" ")
                value = lead.rstrip(" ")
                if not value or not fullmatch(value):
                    raise _Decline  # a trailing comma, or an item YAML reads otherwise
                append(Node("scalar", number, start + len(piece) - len(lead), value))
                start += len(piece) + 1
            return node, close + 1
        position = _skip(text, 1)
        if position < len(text) and text[position] == "]":
            return node, position + 1
        while True:
            if position >= len(text):
                raise _Decline  # the list goes on over the next line
            self._count(depth + 1)
            if text[position] in "'\"":
                value, end = _quoted(text, position)
                items.append(Node("scalar", number, column + position, value, (), (), False))
            else:
                match = _FLOW_PLAIN.match(text, position)
                if match is None:
                    raise _Decline
                end = match.end()
                value = match.group().rstrip(" ")
                items.append(Node("scalar", number, column + position, value))
            position = _skip(text, end)
            if position >= len(text):
                raise _Decline
            if text[position] == "]":
                return node, position + 1
            if text[position] != ",":
                raise _Decline
            position = _skip(text, position + 1)
            if position < len(text) and text[position] == "]":
                raise _Decline  # a trailing comma

    @staticmethod
    def _rest(text: str, end: int) -> None:
        """After a closed value only spaces and a comment may follow."""
        rest = text[end:]
        if rest and (rest[0] != " " or rest.strip(" ")[:1] not in ("", "#")):
            raise _Decline


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] == " ":
        position += 1
    return position


def _quoted(text: str, start: int) -> tuple[str, int]:
    """A single-line quoted value starting at ``start``; returns its text and its end."""
    quote = text[start]
    if quote == '"':
        end = text.find('"', start + 1)
        if end < 0 or "\\" in text[start + 1 : end]:
            raise _Decline  # multi-line, or an escape sequence
        return text[start + 1 : end], end + 1
    parts: list[str] = []
    position = start + 1
    while True:
        end = text.find("'", position)
        if end < 0:
            raise _Decline
        parts.append(text[position:end])
        if text.startswith("''", end):
            parts.append("'")
            position = end + 2
            continue
        return "".join(parts), end + 1
