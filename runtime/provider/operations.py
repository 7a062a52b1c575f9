"""An operation declared as data, its arguments, and the call bound from them.

Help output, the spec tables, validation, planning, policy and preflight all read
an :class:`Operation`; nothing keeps a second list. The engine binds an
operation's args *as authored* (before substitution), so an input value can never
change which argument is an option and which is a positional: structure belongs to
the author, values to the inputs. A provider gets the result, a :class:`BoundCall`,
whose :class:`Piece` s say which part of each arg the author wrote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple

from runtime.errors import StepError

Transport = Literal["local", "rest", "graphql", "cli"]
Effect = Literal["read", "write", "destroy"]
Access = Literal["read", "write"]
# What an argument's value must be: any text; an integer (within ``range``); ``true`` or
# ``false``; a local path (checked against the policy's roots for its ``access``); a
# comma-separated list of names, each one of ``choices`` (``--json number,title``).
ArgType = Literal["str", "int", "bool", "path", "list"]

_ROUTE = re.compile(r"(GET|HEAD|POST|PUT|PATCH|DELETE) (/\S*)")


class Positional(NamedTuple):
    """A positional argument, as ``argument_spec`` declares one: its value's type and
    choices are checked at validation (a literal) and at plan time (a substituted value)."""

    name: str
    required: bool = True
    help: str = ""
    type: ArgType = "str"
    choices: tuple[str, ...] = ()
    range: tuple[int | None, int | None] | None = None  # type "int": lowest, highest
    # the setting (a Runtime Context's, RunContext.setting) whose value stands in when
    # the positional is not given: ORG of `repo list` is the context's organization
    context_default: str | None = None
    access: Access | None = None  # type "path": the roots it must be under
    in_route: str | None = None  # the REST route parameters the value fills: "{owner}/{repo}"
    # flags that give the value instead, as the CLI the operation stands for spells them
    # (gh's ``--repo``, ``-R``): ``--repo acme/app`` and ``--repo=acme/app``
    flags: tuple[str, ...] = ()

    def form(self) -> str:
        return self.name if self.required else f"[{self.name}]"


class Option(NamedTuple):
    """A ``key=value`` option; its value is checked as a :class:`Positional`'s is.

    ``flags`` are the flags that stand for it, as the CLI the operation stands for
    spells them (gh's ``--limit``, ``-L``), so that a user's habit works: ``--limit 5``
    and ``--limit=5`` bind as ``limit=5``. A flag always takes a value (the next arg, or
    what follows its ``=``), as gh's value flags do.
    """

    name: str
    help: str = ""
    required: bool = False
    type: ArgType = "str"
    choices: tuple[str, ...] = ()
    range: tuple[int | None, int | None] | None = None
    in_route: str | None = None
    flags: tuple[str, ...] = ()
    access: Access | None = None  # type "path": the roots it must be under


Argument = Positional | Option


class EffectRule(NamedTuple):
    """The effect when a resolved positional matches a pattern (``api DELETE`` destroys)."""

    positional: str
    pattern: str
    effect: Effect


class Action(NamedTuple):
    """One thing a call does that the policy decides on its own, with its effect: a
    mutation of a GraphQL document. It is decided as the operation's words followed by
    its name (``github graphql deleteIssue``), so a policy entry can name one action."""

    kind: str  # what it is, in a word: "mutation"
    name: str  # its name, one word: deleteIssue
    effect: Effect
    why: str = ""  # when its name does not say it: "not in GitHub's published schema"

    def note(self) -> str:
        """What the plan shows of it: ``mutation deleteIssue: destroy``."""
        return f"{self.kind} {self.name}: {self.effect}" + (f" ({self.why})" if self.why else "")


@dataclass(frozen=True)
class Operation:
    """One operation of a provider, as data."""

    words: tuple[str, ...]
    summary: str
    transport: Transport
    effect: Effect
    positionals: tuple[Positional, ...] = ()
    # Declared key=value options. ``None`` accepts any key (``api``, ``graphql``);
    # an empty tuple means the operation takes no options, so an argument
    # containing '=' is an ordinary positional value.
    options: tuple[Option, ...] | None = ()
    # Remaining arguments pass through verbatim (a CLI tool's own flags).
    passthrough: bool = False
    credential: str | None = None
    example: str = ""
    # Effects that depend on a resolved argument; the first matching rule wins,
    # otherwise ``effect`` holds.
    effect_rules: tuple[EffectRule, ...] = ()
    # OAuth scopes a classic token needs for this operation (checked by `preflight --live`).
    scopes: tuple[str, ...] = ()
    # The program the operation runs (transport "cli"): its args are decided as that
    # program's would be in a binary step (subcommands, literal options, denied runs).
    program: str | None = None
    # Positionals come before any key=value option (api: METHOD and PATH first), so that
    # what the policy decides on is where the author put it.
    positionals_first: bool = False
    # The effect read off the bound call by the provider (a GraphQL document parsed: its
    # strongest mutation, whatever comments precede it); takes the place of effect_rules.
    effect_from: Callable[[BoundCall], Effect] | None = None
    # What the bound call does, action by action (a GraphQL document's mutations): the
    # policy decides each on its own, and the plan shows each. With effect_from.
    actions_from: Callable[[BoundCall], Sequence[Action]] | None = None
    # transport "rest": the routes it sends, "METHOD /template" (the provider fills a
    # route's {parameters} from the arguments that declare ``in_route``; of several routes
    # with one method, the first whose parameters are all given is sent)
    routes: tuple[str, ...] = ()
    # transport "graphql": the document it sends (None: the author's own, ``graphql``)
    document: str | None = None
    # What runs the call: a callable, or "module:function" imported at the first call, so
    # that declarations stay cheap to import (help and completion read them at start-up).
    # Its signature is the provider's business.
    handler: Callable[..., Any] | str | None = None
    # What text mode shows of the result: (HEADER, dotted.field) per column of a list's
    # table, or per line of one object's summary.
    columns: tuple[tuple[str, str], ...] = ()
    # Flags of the program the operation stands for (gh's) that it does not take, and what
    # to do instead: a hint, where ``{args}`` is the operation's other args and ``{value}``
    # the flag's value, each shell-quoted (api's --jq: pipe the JSON to jq).
    flag_hints: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for route in self.routes:
            if not _ROUTE.fullmatch(route):
                raise ValueError(f"{self.name}: route {route!r} is not 'METHOD /template'")

    @cached_property
    def name(self) -> str:
        # asked several times for every step of a run (labels, records, plan)
        return " ".join(self.words)

    @property
    def rest_routes(self) -> tuple[tuple[str, str], ...]:
        """The declared routes as (method, template) pairs."""
        return tuple((m, t) for m, _, t in (r.partition(" ") for r in self.routes))

    @property
    def arguments(self) -> tuple[Argument, ...]:
        """The declared positionals and options, in that order."""
        return (*self.positionals, *(self.options or ()))

    @cached_property
    def implementation(self) -> Callable[..., Any]:
        """The handler, imported when first asked for if it was declared by name."""
        handler = self.handler
        if handler is None:
            raise StepError(f"the operation '{self.name}' declares no handler")
        if callable(handler):
            return handler
        import importlib

        module, _, function = handler.partition(":")
        found: Callable[..., Any] = getattr(importlib.import_module(module), function)
        return found

    @property
    def accepts_options(self) -> bool:
        return self.options is None or len(self.options) > 0

    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options or ())

    def effect_of(self, call: BoundCall | None) -> Effect:
        """The effect of ``call`` (the declared one while it depends on an unknown input)."""
        return self.known_effect(call) or self.effect

    def known_effect(self, call: BoundCall | None) -> Effect | None:
        """The effect of the bound ``call``: what plan, show, validation and the policy all
        read. None while it depends on an input whose value is not known yet (``api
        ${method} ...`` before the inputs are given)."""
        if call is None:
            return self.effect
        if self.effect_inputs(call):
            return None
        if self.effect_from is not None:
            return self.effect_from(call)
        for rule in self.effect_rules:
            value = call.positionals.get(rule.positional)
            if value is not None and re.search(rule.pattern, value):
                return rule.effect
        return self.effect

    def known_actions(self, call: BoundCall | None) -> tuple[Action, ...]:
        """The actions of the bound ``call`` (none while its effect waits for an input)."""
        if call is None or self.actions_from is None or self.effect_inputs(call):
            return ()
        return tuple(self.actions_from(call))

    def effect_inputs(self, call: BoundCall) -> tuple[str, ...]:
        """The inputs whose values the effect of ``call`` waits for (METHOD of ``api``)."""
        if self.effect_from is not None:
            deciding = [p.name for p in self.positionals]
        else:
            deciding = [rule.positional for rule in self.effect_rules]
        return tuple(
            dict.fromkeys(
                piece.input or piece.text
                for name in dict.fromkeys(deciding)
                for piece in call.pieces_of(name)
                if piece.missing
            )
        )

    def possible_effects(self) -> tuple[Effect, ...]:
        found = {self.effect, *(rule.effect for rule in self.effect_rules)}
        if self.effect_from is not None:  # read off the call: any of them
            found |= {"read", "write", "destroy"}
        return tuple(e for e in ("read", "write", "destroy") if e in found)

    def form(self) -> str:
        parts = [*self.words, *(p.form() for p in self.positionals)]
        if self.options is None:
            parts.append("[key=value...]")
        elif self.options:
            parts.extend(f"{o.name}=..." for o in self.options if o.required)
            if any(not o.required for o in self.options):
                parts.append("[OPTION=value...]")
        if self.passthrough:
            parts.append("[FLAGS...]")
        return " ".join(parts)


class Piece(NamedTuple):
    """Part of a resolved arg: text its author wrote, or the value of one input.

    A provider that builds something from an arg (a REST route) tells the two
    apart with these: structure belongs to the author, values to the inputs.
    """

    text: str
    input: str | None = None  # the input whose value ``text`` is; None: authored text
    # a reference whose value is not known (an input not supplied, as in a preflight
    # without it; or validation, before any value): ``text`` is the reference as typed
    missing: bool = False


class BindingProblem(NamedTuple):
    """A problem with one argument (``arg_index`` into the args) or the whole call (-1)."""

    arg_index: int
    message: str
    hint: str | None = None
    code: str = "bad-arguments"


@dataclass
class Binding:
    """Args of one step split by the operation's declared form.

    Each value keeps the index of the arg it came from, so substitution and
    error positions can refer back to the authored text.
    """

    positionals: dict[str, int] = field(default_factory=dict)
    options: list[tuple[str, int]] = field(default_factory=list)  # (key, arg index)
    passthrough: list[int] = field(default_factory=list)
    # where the value starts in an arg a flag gave it (``--limit=5``: 8; ``--limit 5``:
    # the next arg, 0); otherwise a positional's is its whole arg, an option's what
    # follows its ``key=``
    starts: dict[int, int] = field(default_factory=dict)

    def value_start(self, index: int, key: str | None = None) -> int:
        """Where the value of the arg at ``index`` starts: of an option ``key``, or of a
        positional (None)."""
        if index in self.starts:
            return self.starts[index]
        return 0 if key is None else len(key) + 1


@dataclass(frozen=True)
class BoundCall:
    """An operation's resolved arguments, after substitution."""

    positionals: Mapping[str, str]
    options: Sequence[tuple[str, str]]
    passthrough: Sequence[str]
    args: Sequence[str]  # every arg after the operation words, resolved, in order
    # Where the args came from, when the call was resolved from authored args:
    # ``pieces[i]`` splits ``args[i]`` into authored text and input values, and
    # ``binding`` says which arg index each positional and option is. Empty otherwise.
    pieces: Sequence[tuple[Piece, ...]] = ()
    binding: Binding | None = None

    def pieces_of(self, positional: str) -> tuple[Piece, ...]:
        """The pieces of a positional's value; its value as one authored piece if unknown."""
        index = self.binding.positionals.get(positional) if self.binding else None
        if self.binding is not None and index is not None and index < len(self.pieces):
            return _cut(self.pieces[index], self.binding.value_start(index))
        value = self.positionals.get(positional)
        return () if value is None else (Piece(value),)

    def option_pieces(self, key: str) -> tuple[Piece, ...]:
        """The pieces of the first ``key=value`` option's value; ``key=`` is authored text."""
        index = (
            next((i for k, i in self.binding.options if k == key), None) if self.binding else None
        )
        if self.binding is None or index is None or index >= len(self.pieces):
            value = self.option(key)
            return () if value is None else (Piece(value),)
        return _cut(self.pieces[index], self.binding.value_start(index, key))

    def option(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.options:
            if k == key:
                return v
        return default

    def to_json(self) -> dict[str, Any]:
        return {
            "positionals": dict(self.positionals),
            "options": [[k, v] for k, v in self.options],
            "passthrough": list(self.passthrough),
        }


def _cut(pieces: Sequence[Piece], start: int) -> tuple[Piece, ...]:
    """``pieces`` without their first ``start`` characters: the authored ``key=`` or
    ``--flag=`` before a value (authored text: a reference never starts before it)."""
    if not start or not pieces:
        return tuple(pieces)
    first, *rest = pieces
    head = first.text[start:]
    return (first._replace(text=head), *rest) if head else tuple(rest)
