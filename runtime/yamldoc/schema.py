"""One schema mechanism: a parsed document checked against a schema written as data.

Every file runtime reads under a closed shape is checked here: the runtime
block and the frontmatter of a capability (:mod:`runtime.document.grammar`,
:mod:`runtime.document.typed_requirements`), the policy
(:mod:`runtime.plan.policy_file`), ``config.yaml`` (:mod:`runtime.home.config`) and
``contexts.json`` (:mod:`runtime.home.contexts`). A schema is a tree of
shapes; :func:`check` walks the document's :class:`~runtime.yamldoc.yamlnode.Node`
tree once, reports **every** problem as a :class:`~runtime.problems.Problem` at
its position, and returns the value of the valid parts.

Shapes:

=====================  ===============================================================
``Text``               a single value; optional ``pattern`` (full match) with ``means``
                       (how messages describe it), ``choices``, ``quoted`` (JSON strings),
                       ``string`` (not a plain value YAML reads as a number, a boolean
                       or null)
``Bool``               ``true`` or ``false`` (``ignore_case``)
``Int``                digits, from ``minimum`` to ``maximum``
``Number``             a float, ``above`` a bound (exclusive) and up to ``maximum``
``List``               items of one shape; ``min_items``, ``unique``
``Map``                known ``fields``; ``required`` keys, ``one_of`` (exactly one of a
                       group), ``key`` (a shape every key must have), ``extra`` (the
                       shape of other keys; without it the mapping is closed and other
                       keys are reported, ``lookalikes`` with a message of their own,
                       ``stands_for``: the keys a lookalike was written instead of, not
                       reported missing again)
``Alt``                a shape chosen by the node's kind (a value or a list)
``By``                 a shape chosen by a sibling key's value (a tagged union)
``Anything``           any value
=====================  ===============================================================

Every shape also takes: ``label`` (how messages name the value, default
``'key'``, or ``each entry of ...`` for a list item), ``name`` (makes the label
available to the messages below it as ``{name}``), ``code`` (the problem code
for its subtree), ``wrong`` (the message when the node is of another kind),
``empty`` (an empty value, ``key:`` alone, is accepted), ``check`` (a hook for
a rule that cannot be said as data: it returns a message, or reports through
the :class:`Scope` it gets), ``build`` (turns the checked value into the
model's object) and ``whole`` (the value exists only when nothing of it is
wrong; an unknown key, reported and ignored, does not count; a single value is
always whole). A scalar's own ``bad`` message says what it takes.

A value that fails its shape has no value (its container leaves it out), so
the caller gets the valid parts and the problems together, and every problem
is found in one walk: nothing stops at the first.

Messages are :class:`Msg` (or plain text) templates. ``{where}`` is the
value's label, ``{got}`` what was found (``a list``), ``{text}`` the value as
typed, ``{key}`` and ``{index}`` the nearest key and 1-based list position,
``{parent}`` the label of the container, ``{allowed}`` a mapping's known keys,
``{field}`` a missing key, and any ``name`` given above (``{step}``, or its
own ``{step.key}`` and ``{step.index}``). Other braces are left as written.

Positions come from the ``locate`` function the caller passes (a capability's
blocks map to lines of the Markdown file); a missing key of a mapping is
reported at the mapping (at ``start``, the document's first line, for the top
one with ``missing_at_start``). A JSON document is checked as the
tree :func:`json_tree` makes of the parsed value (strings are quoted scalars,
other values plain ones), without positions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, TypedDict

from runtime.problems import Problem, Severity
from runtime.text import nearest
from runtime.yamldoc.yamlnode import Node, NodeKind, YamlError

if TYPE_CHECKING:
    from typing_extensions import Unpack

NULLS = ("", "~", "null")  # what an empty value (``key:`` alone) is composed as

# What YAML's core schema reads a plain scalar as, when not a string (YAML 1.2, 10.3.2).
_TYPED = (
    ("null", re.compile(r"~|null|Null|NULL")),
    ("boolean", re.compile(r"true|True|TRUE|false|False|FALSE")),
    (
        "number",
        re.compile(
            r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+"
            r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
        ),
    ),
)


def yaml_type(node: Node) -> str | None:
    """What YAML reads a plain scalar as when it is not a string (``number``, ``boolean``,
    ``null``); ``None`` for a string. strictyaml keeps every scalar as text, so a schema
    that needs a string (a path: ``5`` is not one) asks this."""
    if node.kind != "scalar" or not node.plain:
        return None
    return next((name for name, form in _TYPED if form.fullmatch(node.text)), None)


class Msg(NamedTuple):
    text: str
    hint: str | None = None
    code: str | None = None  # None: the nearest shape's code, else the check's
    severity: Severity = "error"


Message = Msg | str
Hook = Callable[[Node, Any, "Scope"], "Message | None"]
Build = Callable[[Node, Any, "Scope"], Any]
Locate = Callable[[Node], tuple[int, int]]


class _Invalid:
    def __repr__(self) -> str:
        return "INVALID"


INVALID: Any = _Invalid()  # the value of a node that failed its shape


def _as_msg(message: Message) -> Msg:
    return message if isinstance(message, Msg) else Msg(message)


_FIELD = re.compile(r"\{(\w+(?:\.key|\.index)?)\}")


# -- the walk --------------------------------------------------------------------------------


class _Walk:
    def __init__(
        self,
        file: str,
        code: str,
        locate: Locate,
        start: tuple[int, int],
        label: str,
        describe: Callable[[Node], str],
    ) -> None:
        self.file = file
        self.code = code
        self.locate = locate
        self.start = start
        self.label = label
        self.describe = describe
        self.problems: list[Problem] = []
        self.errors = 0  # errors that make the values holding them not whole


class Scope:
    """Where the walk is: a node, the shape it is checked against, and the way up.

    Hooks and builds get one: :meth:`report` adds a problem, :meth:`position`
    gives a node's position in the file, :meth:`label` the value's name in messages.
    """

    __slots__ = ("_walk", "index", "key", "key_node", "node", "parent", "shape")

    def __init__(
        self,
        walk: _Walk,
        parent: Scope | None,
        shape: Shape,
        node: Node,
        key: str | None = None,
        key_node: Node | None = None,
        index: int | None = None,
    ) -> None:
        self._walk = walk
        self.parent = parent
        self.shape = shape
        self.node = node
        self.key = key  # the key this value stands under, if any
        self.key_node = key_node
        self.index = index  # 1-based, for a list item

    def position(self, node: Node) -> tuple[int, int]:
        return self._walk.locate(node)

    def label(self) -> str:
        template = self.shape.label
        if template is None:
            if self.parent is None:
                return self._walk.label
            template = "'{key}'" if self.key is not None else "each entry of {parent}"
        return self.fill(template)

    def _var(self, name: str) -> str | None:
        if name in ("key", "index"):
            scope: Scope | None = self
            while scope is not None:
                found = scope.key if name == "key" else scope.index
                if found is not None:
                    return str(found)
                scope = scope.parent
            return None
        if name == "parent":
            return self.parent.label() if self.parent is not None else self._walk.label
        if name == "got":
            return self._walk.describe(self.node)
        if name == "text":
            return self.node.text
        name, _, part = name.partition(".")
        scope = self
        while scope is not None:
            if scope.shape.name == name:
                if part:
                    return scope._var(part)
                return scope.label()
            scope = scope.parent
        return None

    def fill(self, template: str, extra: Mapping[str, object] | None = None) -> str:
        """``template`` with the ``{name}`` fields this scope knows filled in."""

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if extra is not None and name in extra:
                return str(extra[name])
            if name == "where":
                return self.label()
            found = self._var(name)
            return match.group(0) if found is None else found

        return _FIELD.sub(one, template)

    def report(
        self, node: Node | None, message: Message, *, counts: bool = True, **extra: object
    ) -> None:
        """A problem at ``node`` (``None``: the document's start).

        ``counts=False``: the problem does not make the values holding it not whole
        (an unknown key is reported, then ignored)."""
        msg = _as_msg(message)
        code = msg.code
        scope: Scope | None = self
        while code is None and scope is not None:
            code = scope.shape.code
            scope = scope.parent
        walk = self._walk
        line, column = walk.start if node is None else walk.locate(node)
        walk.problems.append(
            Problem(
                walk.file,
                line,
                column,
                msg.severity,
                code or walk.code,
                self.fill(msg.text, extra),
                self.fill(msg.hint, extra) if msg.hint else None,
            )
        )
        if counts and msg.severity == "error":
            walk.errors += 1

    def instead(self, shape: Shape) -> Scope:
        """This scope, checked against ``shape`` instead."""
        return Scope(self._walk, self.parent, shape, self.node, self.key, self.key_node, self.index)

    def child(
        self,
        shape: Shape,
        node: Node,
        key: str | None = None,
        key_node: Node | None = None,
        index: int | None = None,
    ) -> Scope:
        return Scope(self._walk, self, shape, node, key, key_node, index)


def check(
    root: Node,
    shape: Shape,
    *,
    file: str,
    code: str,
    locate: Locate | None = None,
    start: tuple[int, int] = (1, 1),
    label: str = "the file",
    describe: Callable[[Node], str] = Node.describe,
) -> tuple[Any, list[Problem]]:
    """Check ``root`` against ``shape``: (the value of its valid parts, every problem).

    ``code`` is the problem code where no shape or message names one; ``locate``
    maps a node to its 1-based (line, column) in ``file`` (default: the node's own
    position, plus one); ``start`` is where a missing key of the top mapping is
    reported; ``label`` names the top value in messages. The value is ``None``
    when the top node itself failed.
    """
    walk = _Walk(
        file,
        code,
        locate or (lambda node: (node.line + 1, node.column + 1)),
        start,
        label,
        describe,
    )
    value = shape.visit(Scope(walk, None, shape, root))
    return (None if value is INVALID else value), walk.problems


def parse_yaml(
    text: str,
    file: str,
    *,
    position: Callable[[int, int], tuple[int, int]] = lambda line, column: (line + 1, column + 1),
    code: str | None = None,
) -> tuple[Node | None, list[Problem]]:
    """Parse one YAML document: its tree (``None`` when empty or unreadable) and problems.

    ``position`` maps a 0-based (line, column) of ``text`` to the file's. A syntax
    error is code ``yaml`` and a repeated key ``duplicate-key``, unless ``code`` is given.
    """
    from runtime.yamldoc.yamltree import parse

    problems: list[Problem] = []
    try:
        root, duplicates = parse(text, file)
    except YamlError as exc:
        line, column = position(exc.line, exc.column)
        problems.append(Problem(file, line, column, "error", code or "yaml", exc.message, exc.hint))
        return None, problems
    for dup in duplicates:
        line, column = position(dup.line, dup.column)
        first = position(dup.first_line, 0)[0]
        problems.append(
            Problem(
                file,
                line,
                column,
                "error",
                code or "duplicate-key",
                f"duplicate key '{dup.key}' (first on line {first})",
                "keep one of them",
            )
        )
    return root, problems


def load(text: str, file: str, shape: Shape, code: str) -> tuple[Any, list[Problem]]:
    """A small YAML file (policy, config): parsed and checked; (value, problems).

    An empty file is an empty mapping."""
    root, problems = parse_yaml(text, file, code=code)
    if root is None or (root.kind == "scalar" and root.plain and root.text in NULLS):
        return {}, problems
    value, found = check(root, shape, file=file, code=code)
    return value, problems + found


# -- JSON --------------------------------------------------------------------------------------


def json_tree(value: object) -> Node:
    """A parsed JSON value as a tree :func:`check` can walk (no positions: line -1).

    A string is a quoted scalar, a number, ``true``, ``false`` or ``null`` a plain one
    holding its JSON text, so ``Text(quoted=True)`` accepts only strings."""
    if isinstance(value, dict):
        return Node(
            "map",
            -1,
            -1,
            pairs=[
                (Node("scalar", -1, -1, str(k), plain=False), json_tree(v))
                for k, v in value.items()
            ],
        )
    if isinstance(value, list):
        return Node("seq", -1, -1, items=[json_tree(v) for v in value])
    if isinstance(value, str):
        return Node("scalar", -1, -1, value, plain=False)
    import json

    return Node("scalar", -1, -1, json.dumps(value))


def describe_json(node: Node) -> str:
    """What a JSON value is, for messages: ``an object``, ``an array``, ``a string``, ``5``."""
    if node.kind == "map":
        return "an object"
    if node.kind == "seq":
        return "an array"
    return node.text if node.plain else "a string"


def plain(node: Node) -> Any:
    """The node as plain data: texts, lists and dicts."""
    if node.kind == "scalar":
        return node.text
    if node.kind == "seq":
        return [plain(i) for i in node.items]
    return {k.text: plain(v) for k, v in node.pairs}


# -- shapes ------------------------------------------------------------------------------------
# Plain classes with behaviour rather than dataclasses: a dataclass is compiled when its
# module is imported, and every command that checks a file imports these (start-up).


class Options(TypedDict, total=False):
    """What every shape takes (see the module's docstring)."""

    label: str | None
    name: str | None
    code: str | None
    wrong: Message | None
    empty: bool | Literal["plain"]  # "plain": only an empty value written without quotes
    check: Hook | None
    build: Build | None
    whole: bool


class Shape:
    kind: ClassVar[NodeKind | None] = None  # None: any kind of node
    expected: ClassVar[str] = ""  # the kind, for the default message: "a list"

    def __init__(
        self,
        *,
        label: str | None = None,
        name: str | None = None,
        code: str | None = None,
        wrong: Message | None = None,
        empty: bool | Literal["plain"] = False,
        check: Hook | None = None,
        build: Build | None = None,
        whole: bool = False,
    ) -> None:
        self.label = label
        self.name = name
        self.code = code
        self.wrong = wrong
        self.empty = empty
        self.check = check
        self.build = build
        self.whole = whole

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label or ''})"

    def visit(self, scope: Scope) -> Any:
        node = scope.node
        walk = scope._walk
        errors = walk.errors
        if (
            self.empty
            and node.kind == "scalar"
            and node.text in NULLS
            and (self.empty is True or node.plain)
        ):
            value = self.empty_value()
        elif self.kind is not None and node.kind != self.kind:
            scope.report(node, self.wrong or f"{{where}} must be {self.expected}, not {{got}}")
            return INVALID
        else:
            value = self.value(node, scope)
            if value is INVALID:
                return INVALID
            if self.check is not None:
                found = self.check(node, value, scope)
                if found is not None:
                    scope.report(node, found)
        if self.whole and walk.errors != errors:
            return INVALID
        if self.build is not None:
            return self.build(node, value, scope)
        return value

    def value(self, node: Node, scope: Scope) -> Any:
        """The value of a node of the right kind (problems reported on ``scope``)."""
        raise NotImplementedError

    def empty_value(self) -> Any:
        return None


class Anything(Shape):
    """Any value; its value is the node as plain data."""

    def value(self, node: Node, scope: Scope) -> Any:
        return plain(node)


class _Scalar(Shape):
    kind: ClassVar[NodeKind | None] = "scalar"
    expected: ClassVar[str] = "a single value"

    def __init__(self, *, bad: Message | None = None, **options: Unpack[Options]) -> None:
        super().__init__(**options)
        self.bad = bad  # the message when the value is not one this shape takes
        self.whole = True  # a single value has no parts: a hook's error refuses it too

    def takes(self) -> str:
        """What the shape takes, for the default message: ``true or false``."""
        return "a valid value"

    def refuse(self, node: Node, scope: Scope) -> Any:
        scope.report(node, self.bad or f"{{where}} must be {self.takes()}, not '{{text}}'")
        return INVALID


class Text(_Scalar):
    """A single value: any text, or one that matches ``pattern`` in full (described by
    ``means`` in messages), or one of ``choices``. ``quoted``: a JSON string. ``string``:
    a YAML string, not a plain value YAML reads as a number, a boolean or null (``5``)."""

    def __init__(
        self,
        *,
        pattern: str | None = None,
        means: str | None = None,
        choices: Sequence[str] = (),
        quoted: bool = False,
        string: bool = False,
        bad: Message | None = None,
        **options: Unpack[Options],
    ) -> None:
        super().__init__(bad=bad, **options)
        self.pattern = re.compile(pattern) if pattern is not None else None
        self.means = means
        self.choices = tuple(choices)
        self.quoted = quoted
        self.string = string

    def takes(self) -> str:
        if self.means:
            return self.means
        if self.choices:
            return _either(self.choices)
        return "a valid value"

    def value(self, node: Node, scope: Scope) -> Any:
        text = node.text
        if self.quoted and node.plain:
            scope.report(node, self.wrong or "{where} must be a string, not {got}")
            return INVALID
        if self.string:
            typed = yaml_type(node)
            if typed is not None:
                scope.report(
                    node,
                    Msg(
                        "{where} must be a string, not "
                        + ("null ({text})" if typed == "null" else f"the {typed} {{text}}"),
                        'quote it ("{text}") if it is meant as text',
                    ),
                )
                return INVALID
        if self.pattern is not None and self.pattern.fullmatch(text) is None:
            return self.refuse(node, scope)
        if self.choices and text not in self.choices:
            return self.refuse(node, scope)
        return text


class Bool(_Scalar):
    """``true`` or ``false`` (in any case with ``ignore_case``)."""

    def __init__(
        self, *, ignore_case: bool = False, bad: Message | None = None, **options: Unpack[Options]
    ) -> None:
        super().__init__(bad=bad, **options)
        self.ignore_case = ignore_case

    def takes(self) -> str:
        return "true or false"

    def value(self, node: Node, scope: Scope) -> Any:
        text = node.text.lower() if self.ignore_case else node.text
        if text == "true":
            return True
        if text == "false":
            return False
        return self.refuse(node, scope)


class Int(_Scalar):
    """ASCII digits only (no sign), from ``minimum`` to ``maximum``."""

    def __init__(
        self,
        *,
        minimum: int = 0,
        maximum: int | None = None,
        bad: Message | None = None,
        **options: Unpack[Options],
    ) -> None:
        super().__init__(bad=bad, **options)
        self.minimum = minimum
        self.maximum = maximum

    def takes(self) -> str:
        if self.maximum is not None:
            return f"an integer from {self.minimum} to {self.maximum}"
        if self.minimum:
            return f"an integer of at least {self.minimum}"
        return "a non-negative integer"

    def value(self, node: Node, scope: Scope) -> Any:
        text = node.text
        if not (text.isascii() and text.isdigit()):
            return self.refuse(node, scope)
        number = int(text)
        if number < self.minimum or (self.maximum is not None and number > self.maximum):
            return self.refuse(node, scope)
        return number


class Number(_Scalar):
    """A number (a float): above ``above`` (exclusive), up to ``maximum`` (inclusive)."""

    def __init__(
        self,
        *,
        above: float | None = None,
        maximum: float | None = None,
        bad: Message | None = None,
        **options: Unpack[Options],
    ) -> None:
        super().__init__(bad=bad, **options)
        self.above = above
        self.maximum = maximum

    def takes(self) -> str:
        if self.above is not None and self.maximum is not None:
            return f"a number above {self.above:g} and at most {self.maximum:g}"
        if self.above is not None:
            return f"a number above {self.above:g}"
        if self.maximum is not None:
            return f"a number of at most {self.maximum:g}"
        return "a number"

    def number(self, text: str) -> float | None:
        """``text`` as a number this shape takes, else None (nan and inf are out of any
        bounds; the comparisons are written so that nan fails them)."""
        try:
            number = float(text)
        except ValueError:
            return None
        if (self.above is not None and not number > self.above) or (
            self.maximum is not None and not number <= self.maximum
        ):
            return None
        return number

    def value(self, node: Node, scope: Scope) -> Any:
        number = self.number(node.text)
        return self.refuse(node, scope) if number is None else number


class List(Shape):
    """Items of one shape; at least ``min_items`` (else ``too_few``); with ``unique``, a
    repeated value is reported with that message."""

    kind: ClassVar[NodeKind | None] = "seq"
    expected: ClassVar[str] = "a list"

    def __init__(
        self,
        item: Shape,
        *,
        min_items: int = 0,
        too_few: Message | None = None,
        unique: Message | None = None,
        **options: Unpack[Options],
    ) -> None:
        super().__init__(**options)
        self.item = item
        self.min_items = min_items
        self.too_few = too_few
        self.unique = unique

    def value(self, node: Node, scope: Scope) -> Any:
        if len(node.items) < self.min_items:
            scope.report(
                node, self.too_few or f"{{where}} must have at least {self.min_items} entries"
            )
            return INVALID
        item = self.item
        walk = scope._walk
        out = []
        seen: set[str] = set()
        for index, entry in enumerate(node.items, start=1):
            value = item.visit(Scope(walk, scope, item, entry, None, None, index))
            if value is INVALID:
                continue
            if self.unique is not None and entry.kind == "scalar":
                if entry.text in seen:
                    scope.child(item, entry, index=index).report(entry, self.unique)
                    continue
                seen.add(entry.text)
            out.append(value)
        return out

    def empty_value(self) -> Any:
        return []


class OneOf(NamedTuple):
    """Exactly one of ``keys`` must be present: the messages for more and for none."""

    keys: tuple[str, ...]
    both: Message
    neither: Message


class Map(Shape):
    """A mapping: known ``fields``; ``required`` keys (each with its message, or ``None``
    for ``{where} has no '{field}'``), reported at the mapping, or at the document's start
    with ``missing_at_start``; ``one_of``; ``key``, the shape every key must have;
    ``extra``, the shape of other keys (without it the mapping is closed: another key is
    reported, with ``lookalikes``' message or ``unknown``, and ignored).

    ``stands_for`` maps a lookalike to the keys it was written instead of (a retired
    ``command:`` for ``provider``/``binary`` and ``args``): the lookalike's own message
    says how to rewrite them, so their absence is not reported again, one mistake being
    one problem; the mapping is then not whole."""

    kind: ClassVar[NodeKind | None] = "map"
    expected: ClassVar[str] = "a mapping"

    def __init__(
        self,
        fields: Mapping[str, Shape] | None = None,
        *,
        required: Mapping[str, Message | None] | None = None,
        one_of: OneOf | None = None,
        key: Shape | None = None,
        extra: Shape | None = None,
        unknown: Message | None = None,
        lookalikes: Mapping[str, Message] | None = None,
        stands_for: Mapping[str, Sequence[str]] | None = None,
        missing_at_start: bool = False,
        **options: Unpack[Options],
    ) -> None:
        super().__init__(**options)
        self.fields: Mapping[str, Shape] = fields or {}
        self.required: Mapping[str, Message | None] = required or {}
        self.one_of = one_of
        self.key = key
        self.extra = extra
        self.unknown = unknown or Msg("unknown key '{key}' in {where}", "allowed keys: {allowed}")
        self.lookalikes: Mapping[str, Message] = lookalikes or {}
        self.stands_for: Mapping[str, Sequence[str]] = stands_for or {}
        self.missing_at_start = missing_at_start

    def value(self, node: Node, scope: Scope) -> Any:
        fields = self.fields
        key_shape = self.key
        extra = self.extra
        walk = scope._walk
        out: dict[str, Any] = {}
        misspelled: set[str] = set()  # known keys an unknown one was probably meant as
        absent: list[str] | None = None  # the known keys not given, once one is unknown
        for key, value in node.pairs:
            text = key.text
            # a key that fails ``key`` is reported once: not again as unknown
            key_ok = key_shape is None or (
                key_shape.visit(scope.child(key_shape, key, text, key)) is not INVALID
            )
            shape = fields.get(text, extra)
            if shape is None:
                if key_ok:
                    said = _as_msg(self.lookalikes.get(text) or self.unknown)
                    # what it could be a misspelling of: a known key not given
                    if absent is None:
                        given = {k.text for k, _ in node.pairs}
                        absent = [f for f in fields if f not in given]
                    meant = [] if text in self.lookalikes else nearest(text, absent)
                    if meant:
                        misspelled.update(meant)
                        hint = f"did you mean '{meant[0]}'? " + (said.hint or "")
                        said = said._replace(hint=hint.rstrip())
                    scope.report(key, said, counts=False, key=text, allowed=", ".join(fields))
                continue
            found = shape.visit(Scope(walk, scope, shape, value, text, key, None))
            if found is not INVALID:
                out[text] = found
        if self.required or self.one_of is not None:
            present = {key.text for key, _ in node.pairs}
            # keys a lookalike or a misspelling was written instead of: missing, but
            # already reported (`provder:` is one problem, not also a step without one)
            covered = misspelled | {
                k for found in present & self.stands_for.keys() for k in self.stands_for[found]
            }
            at = None if self.missing_at_start else node
            for name, message in self.required.items():
                if name in present:
                    continue
                if name in covered:
                    walk.errors += 1  # said by the lookalike; the mapping is not whole
                else:
                    scope.report(at, message or "{where} has no '{field}'", field=name)
            if self.one_of is not None:
                found_keys = [k for k in self.one_of.keys if k in present]
                if not found_keys and covered.intersection(self.one_of.keys):
                    walk.errors += 1
                elif len(found_keys) != 1:
                    scope.report(node, self.one_of.both if found_keys else self.one_of.neither)
        return out

    def empty_value(self) -> Any:
        return {}


class Alt(Shape):
    """The shape for the node's kind in ``cases``, else ``otherwise`` (which reports it)."""

    def __init__(
        self,
        cases: Mapping[NodeKind, Shape],
        *,
        otherwise: Shape | None = None,
        **options: Unpack[Options],
    ) -> None:
        super().__init__(**options)
        self.cases = cases
        self.otherwise = otherwise or Anything()

    def visit(self, scope: Scope) -> Any:
        shape = self.cases.get(scope.node.kind, self.otherwise)
        return shape.visit(scope.instead(shape))


class By(Shape):
    """A shape chosen by the text of the sibling key ``on`` (a tagged union).

    When that key is absent, not a single value or not one of ``cases``, the value
    is not checked (the sibling's own shape reports why) and has no value."""

    def __init__(self, on: str, cases: Mapping[str, Shape], **options: Unpack[Options]) -> None:
        super().__init__(**options)
        self.on = on
        self.cases = cases

    def visit(self, scope: Scope) -> Any:
        parent = scope.parent
        tag = parent.node.get(self.on) if parent is not None else None
        shape = self.cases.get(tag.text) if tag is not None and tag.kind == "scalar" else None
        if shape is None:
            return INVALID
        return shape.visit(scope.instead(shape))


def _either(choices: Sequence[str]) -> str:
    if len(choices) == 1:
        return choices[0]
    return ", ".join(choices[:-1]) + " or " + choices[-1]
