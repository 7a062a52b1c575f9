"""YAML edits that change only the bytes of the values they set: ``yaml replace``, ``yaml set``.

ruamel.yaml parses the file (its events, each with the character positions of its
source text); an edit writes the new value over the scalar's own source text and
leaves every other character as it is: comments, order, quoting, indentation, anchors,
flow and block styles, line endings, other documents. Nothing is re-serialised.

A new value keeps the old one's style where that style can hold it (a plain scalar
stays plain, a single-quoted one single-quoted, a literal block a block) and a string
stays a string: a plain ``v1`` set to ``true`` becomes ``"true"``, since a plain
``true`` would be a boolean. Where the style cannot hold it (a newline in a plain
scalar), it is double-quoted. The edited text is parsed again and must give the same
events as the old, the edited values aside: an edit that would change anything else
fails rather than write.

A path is keys separated by dots, with ``[N]`` for the Nth item of a list (from 0) and
``[KEY=VALUE]`` for each item of a list of mappings whose KEY is VALUE:
``spec.template.spec.containers[name=app].image``. A path that reaches its value
through an alias, or a merge (``<<``), is refused: the value is shared, and setting it
would change each place that uses it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from providers.files.batch import ArgumentProblem, EditFailure

_STR = "tag:yaml.org,2002:str"
_ATTEMPTS = 3  # style choices before the edit fails: each round quotes what did not hold


# -- the path -------------------------------------------------------------------------


class Key(NamedTuple):
    name: str


class Index(NamedTuple):
    number: int


class Match(NamedTuple):
    key: str
    value: str


Step = Key | Index | Match


def parse_path(text: str) -> list[Step]:
    """``a.b[0].c[name=app]`` as its steps; raises ValueError naming what is wrong."""
    steps: list[Step] = []
    pos, n = 0, len(text)
    if not text:
        raise ValueError("is empty")
    while pos < n:
        char = text[pos]
        if char == "[":
            end = text.find("]", pos)
            if end < 0:
                raise ValueError(f"has a '[' at {pos + 1} that no ']' closes")
            inside = text[pos + 1 : end]
            if inside.isdigit():
                steps.append(Index(int(inside)))
            elif "=" in inside and inside.partition("=")[0]:
                key, _, value = inside.partition("=")
                steps.append(Match(key, value))
            else:
                raise ValueError(f"has [{inside}]: write [N] for an item, [KEY=VALUE] to select")
            pos = end + 1
            if pos < n and text[pos] not in ".[":
                raise ValueError(f"has {text[pos]!r} after ']' at {pos + 1}: a '.' goes first")
            if pos < n and text[pos] == ".":
                pos += 1
                if pos == n or text[pos] in ".[":
                    raise ValueError(f"has an empty key at {pos + 1}")
            continue
        end = pos
        while end < n and text[end] not in ".[]":
            end += 1
        if end == pos:
            raise ValueError(f"has an empty key at {pos + 1}")
        if end < n and text[end] == "]":
            raise ValueError(f"has a ']' at {end + 1} that no '[' opens")
        steps.append(Key(text[pos:end]))
        pos = end
        if pos < n and text[pos] == ".":
            pos += 1
            if pos == n or text[pos] in ".[":
                raise ValueError(f"has an empty key at {pos + 1}")
    return steps


def argument_problems(operation: str, options: Mapping[str, str]) -> list[ArgumentProblem]:
    """The literal arguments an edit cannot take: a path that is no path, an empty FROM."""
    found = []
    if operation == "yaml set" and "path" in options:
        try:
            parse_path(options["path"])
        except ValueError as exc:
            found.append(
                ArgumentProblem(
                    "path",
                    f"--path {options['path']!r} {exc}",
                    "keys separated by '.', [N] for a list's item, [KEY=VALUE] for the items "
                    "whose KEY is VALUE: spec.containers[name=app].image",
                )
            )
    if operation == "yaml replace" and options.get("from") == "":
        found.append(
            ArgumentProblem("from", "--from is empty", "give the value replaced, as it reads")
        )
    return found


def _checked(operation: str, options: Mapping[str, str]) -> None:
    problems = argument_problems(operation, options)
    if problems:
        raise problems[0]


# -- the file's events, as a tree -----------------------------------------------------


@dataclass
class _Node:
    kind: str  # "map", "seq", "scalar", "alias"
    event: Any
    at: int  # the event's index
    items: list[Any] = field(default_factory=list)  # map: (key, value) pairs; seq: nodes


def _parse(text: str) -> list[Any]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return list(YAML(typ="rt", pure=True).parse(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "it cannot be read"
        if mark is None:
            raise EditFailure(f"not valid YAML: {problem}") from None
        raise EditFailure(f"not valid YAML: {problem}", mark.line + 1, mark.column + 1) from None
    except YAMLError as exc:
        raise EditFailure(f"not valid YAML: {exc}") from None


def _documents(events: Sequence[Any]) -> tuple[list[_Node], dict[str, _Node]]:
    """Each document's top node, and the nodes by anchor."""
    from ruamel.yaml import events as ev

    roots: list[_Node] = []
    anchors: dict[str, _Node] = {}
    stack: list[tuple[_Node, list[_Node]]] = []  # a collection, and a map's pending key

    def add(node: _Node) -> None:
        anchor = getattr(node.event, "anchor", None)
        if anchor and node.kind != "alias":
            anchors[anchor] = node
        if not stack:
            roots.append(node)
            return
        parent, pending = stack[-1]
        if parent.kind == "seq":
            parent.items.append(node)
        elif pending:
            parent.items.append((pending.pop(), node))
        else:
            pending.append(node)

    for at, event in enumerate(events):
        if isinstance(event, ev.ScalarEvent):
            add(_Node("scalar", event, at))
        elif isinstance(event, ev.AliasEvent):
            add(_Node("alias", event, at))
        elif isinstance(event, ev.MappingStartEvent | ev.SequenceStartEvent):
            node = _Node("map" if isinstance(event, ev.MappingStartEvent) else "seq", event, at)
            add(node)
            stack.append((node, []))
        elif isinstance(event, ev.MappingEndEvent | ev.SequenceEndEvent):
            stack.pop()
    return roots, anchors


def _where(node: _Node) -> tuple[int, int]:
    mark = node.event.start_mark
    return mark.line + 1, mark.column + 1


def _find(node: _Node, steps: Sequence[Step], anchors: dict[str, _Node], path: str) -> list[_Node]:
    """The nodes ``steps`` reach from ``node``; what they reach through an alias or a merge
    is refused (it is shared)."""
    if node.kind == "alias":
        target = anchors.get(node.event.anchor)
        if target is not None and (not steps or _find(target, steps, anchors, path)):
            raise EditFailure(
                f"--path {path} reaches its value through the alias *{node.event.anchor}: it is "
                f"shared with &{node.event.anchor}, and setting it would change each use",
                *_where(node),
            )
        return []
    if not steps:
        return [node]
    step, rest = steps[0], steps[1:]
    found: list[_Node] = []
    if isinstance(step, Key):
        if node.kind != "map":
            return []
        merges = []
        for key, value in node.items:
            if key.kind == "scalar" and key.event.value == step.name:
                found += _find(value, rest, anchors, path)
            elif key.kind == "scalar" and key.event.value == "<<":
                merges.append(value)
        if not found:
            for merged in merges:
                sources = merged.items if merged.kind == "seq" else [merged]
                for source in sources:
                    if _find(source, steps, anchors, path):
                        raise EditFailure(
                            f"--path {path} reaches {step.name!r} through a merge (<<): it is "
                            "shared with the mapping merged, and setting it would change each use",
                            *_where(merged),
                        )
        return found
    if node.kind != "seq":
        return []
    if isinstance(step, Index):
        return (
            _find(node.items[step.number], rest, anchors, path)
            if step.number < len(node.items)
            else []
        )
    for item in node.items:
        if _selects(item, step, anchors):
            found += _find(item, rest, anchors, path)
    return found


def _selects(item: _Node, step: Match, anchors: dict[str, _Node]) -> bool:
    target = anchors.get(item.event.anchor) if item.kind == "alias" else item
    if target is None or target.kind != "map":
        return False
    return any(
        k.kind == "scalar"
        and k.event.value == step.key
        and v.kind == "scalar"
        and v.event.value == step.value
        for k, v in target.items
    )


def _values(node: _Node) -> Iterator[_Node]:
    """Every scalar value under ``node`` (mapping keys left out), each once."""
    if node.kind == "scalar":
        yield node
    elif node.kind == "seq":
        for item in node.items:
            yield from _values(item)
    elif node.kind == "map":
        for _, value in node.items:
            yield from _values(value)


# -- writing a value --------------------------------------------------------------------


def _double(value: str) -> str:
    """``value`` as a double-quoted scalar: JSON's escapes, which YAML's include, and the
    characters YAML does not print escaped too."""
    quoted = json.dumps(value, ensure_ascii=False)
    return re.sub("[\x7f-\x9f\u2028\u2029\ufeff]", lambda m: f"\\u{ord(m.group(0)):04x}", quoted)


def _resolve(value: str) -> str:
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.resolver import VersionedResolver

    return str(VersionedResolver().resolve(ScalarNode, value, (True, False)))


def _old_tag(event: Any) -> str:
    if event.tag is not None:
        return str(event.tag)
    if event.style is None and event.implicit[0]:
        return _resolve(event.value)
    return _STR


def _block(value: str, old: str, line_break: str) -> str | None:
    """``value`` as a block scalar in the place of ``old`` (its header and lines), or None
    when a block cannot hold it as the old one's header says."""
    header, _, body = old.partition("\n")
    header = header.rstrip("\r")
    indicator = header[0]
    if any(c.isdigit() for c in header) or "#" in header:
        return None
    lines = [line for line in body.splitlines() if line.strip()]
    if not lines:
        return None
    indent = lines[0][: len(lines[0]) - len(lines[0].lstrip(" "))]
    if not indent:
        return None
    content = value[:-1] if value.endswith("\n") else value
    if not content or content.endswith("\n") or content.startswith((" ", "\t")):
        return None
    if indicator == ">" and "\n" in content:
        return None  # folding would join the lines: not the value asked for
    chomp = "" if value.endswith("\n") else "-"
    text = "".join(
        indent + line + line_break if line else line_break for line in content.split("\n")
    )
    return indicator + chomp + line_break + text


def _render(event: Any, value: str, old: str, style: str) -> str:
    """``value`` written in ``style``: "plain", "single", "block", else double-quoted."""
    if style == "plain":
        return value
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    if style == "block":
        line_break = "\r\n" if "\r\n" in old else "\n"
        found = _block(value, old, line_break)
        if found is not None:
            return found
    return _double(value)


def _preferred(event: Any, value: str) -> str:
    """The style the new value is first tried in: the old one's, where it can hold it."""
    style = event.style
    if style is None:
        one_line = value and "\n" not in value and value == value.strip()
        keeps_type = _old_tag(event) != _STR or _resolve(value) == _STR
        return "plain" if one_line and keeps_type else "double"
    if style == "'":
        return "single" if "\n" not in value and value.isprintable() else "double"
    if style in ("|", ">"):
        return "block"
    return "double"


def _span(text: str, event: Any, key: Any | None) -> tuple[int, int, str]:
    """Where the scalar's own text is (after its anchor and tag), and what goes before a
    value written where there was none (``key:`` with nothing after it)."""
    start, end = event.start_mark.index, event.end_mark.index
    if event.value == "" and event.style is None and start == end:
        if key is None:
            raise EditFailure(
                "the value is empty (null): yaml set writes over a value that is written",
                event.start_mark.line + 1,
                event.start_mark.column + 1,
            )
        at = key.end_mark.index
        while at < len(text) and text[at] in " \t":
            at += 1
        if text[at : at + 1] != ":":
            raise EditFailure(
                "the value is empty (null) and cannot be written in place",
                key.start_mark.line + 1,
                key.start_mark.column + 1,
            )
        return at + 1, at + 1, " "
    while start < end and text[start] in "&!":
        while start < end and not text[start].isspace():
            start += 1
        while start < end and text[start].isspace():
            start += 1
    return start, end, ""


@dataclass
class _Change:
    at: int  # the event's index
    value: str
    style: str
    start: int
    end: int
    before: str  # written before the value ("" but for a value where there was none)


def _apply(text: str, changes: Sequence[_Change], events: Sequence[Any]) -> str:
    out, last = [], 0
    for change in sorted(changes, key=lambda c: c.start):
        event = events[change.at]
        old = text[change.start : change.end]
        out.append(text[last : change.start])
        out.append(change.before + _render(event, change.value, old, change.style))
        last = change.end
    out.append(text[last:])
    return "".join(out)


def _differences(old: Sequence[Any], new: Sequence[Any], changes: Sequence[_Change]) -> list[int]:
    """The indices of the events where the edited text does not read as the old one with
    the new values (the whole stream's length when the streams differ in length)."""
    from ruamel.yaml import events as ev

    values = {c.at: c.value for c in changes}
    if len(old) != len(new):
        return [len(old)]
    wrong = []
    for at, (a, b) in enumerate(zip(old, new, strict=True)):
        if type(a) is not type(b) or getattr(a, "anchor", None) != getattr(b, "anchor", None):
            wrong.append(at)
        elif isinstance(a, ev.ScalarEvent):
            if at in values:
                # the value asked for; a string stays a string (another type may change:
                # 3 set to 4.5 is a number still, written plain)
                kept = _old_tag(a) != _STR or _old_tag(b) == _STR
                if b.value != values[at] or a.tag != b.tag or not kept:
                    wrong.append(at)
            elif b.value != a.value or a.tag != b.tag or a.style != b.style:
                wrong.append(at)
        elif isinstance(a, ev.CollectionStartEvent) and (
            a.tag != b.tag or a.flow_style != b.flow_style
        ):
            wrong.append(at)
    return wrong


class _Editor:
    """What yaml replace and yaml set share: the scalars chosen, their new values written
    in the best style that reads back as asked."""

    def targets(
        self, text: str, roots: list[_Node], anchors: dict[str, _Node]
    ) -> list[tuple[_Node, str, Any]]:
        raise NotImplementedError

    def edit(self, text: str) -> tuple[str, int]:
        events = _parse(text)
        roots, anchors = _documents(events)
        targets = self.targets(text, roots, anchors)
        changes = []
        for node, value, key in targets:
            if node.event.value == value:
                continue  # already as asked: a match that changes nothing
            start, end, before = _span(text, node.event, key)
            changes.append(
                _Change(node.at, value, _preferred(node.event, value), start, end, before)
            )
        if not changes:
            return text, len(targets)
        for _ in range(_ATTEMPTS):
            new = _apply(text, changes, events)
            try:
                wrong = _differences(events, _parse(new), changes)
            except EditFailure:
                wrong = [len(events)]
            if not wrong:
                return new, len(targets)
            # the value nearest before each difference did not hold in its style: quote it
            quoted = False
            for at in wrong:
                culprit = max(
                    (c for c in changes if c.at <= at), key=lambda c: c.at, default=changes[-1]
                )
                if culprit.style != "double":
                    culprit.style, quoted = "double", True
            if not quoted:
                break
        first = changes[0]
        line = events[first.at].start_mark.line + 1
        raise EditFailure(
            "the new value cannot be written there without changing more of the file",
            line,
            events[first.at].start_mark.column + 1,
        )


class _Replace(_Editor):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def targets(
        self, text: str, roots: list[_Node], anchors: dict[str, _Node]
    ) -> list[tuple[_Node, str, Any]]:
        return [
            (n, self.new, None)
            for root in roots
            for n in _values(root)
            if n.event.value == self.old
        ]


class _Set(_Editor):
    def __init__(self, path: str, value: str) -> None:
        self.path, self.steps, self.value = path, parse_path(path), value

    def targets(
        self, text: str, roots: list[_Node], anchors: dict[str, _Node]
    ) -> list[tuple[_Node, str, Any]]:
        found = []
        keys = _keys_of(roots)
        for root in roots:
            for node in _find(root, self.steps, anchors, self.path):
                if node.kind != "scalar":
                    what = "a mapping" if node.kind == "map" else "a list"
                    raise EditFailure(
                        f"--path {self.path} is {what}, not a scalar: yaml set writes one value",
                        *_where(node),
                    )
                found.append((node, self.value, keys.get(node.at)))
        return found


def _keys_of(roots: list[_Node]) -> dict[int, Any]:
    """The key event of each mapping value, by the value's event index."""
    keys: dict[int, Any] = {}

    def walk(node: _Node) -> None:
        if node.kind == "map":
            for key, value in node.items:
                keys[value.at] = key.event
                walk(value)
        elif node.kind == "seq":
            for item in node.items:
                walk(item)

    for root in roots:
        walk(root)
    return keys


def yaml_replace(options: Mapping[str, str]) -> _Editor:
    _checked("yaml replace", options)
    return _Replace(options["from"], options["to"])


def yaml_set(options: Mapping[str, str]) -> _Editor:
    _checked("yaml set", options)
    return _Set(options["path"], options["value"])
