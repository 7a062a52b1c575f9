"""The provider interface: everything a provider may use, and nothing else.

A provider is a package and an entry point (group ``runtime.providers``); it
imports this module, the standard library and its own dependencies only (an
import contract holds it). What is here, in the order a step meets it:

* operations declared as data (:class:`Operation`): their words, form,
  argument types and choices, context defaults, effect (and what a bound
  call does, :class:`Action` by action), transport (REST routes, GraphQL
  document), credential and handler. Help output, the spec tables,
  validation, planning, policy and preflight all read that one
  table; nothing keeps a second list. Binding an
  operation's args happens on the args *as authored* (before substitution),
  so an input value can never change which argument is an option and which
  is a positional: structure belongs to the author, values to the inputs
  (:func:`bind`, :class:`BoundCall`, :class:`Piece`);
* what a provider says of a call before it runs (:class:`Inspection`, a
  :class:`Decision`), and what it may ask of the run (:class:`RunContext`);
* what a step gets to run (:class:`StepEnvironment`) and gives back
  (:class:`StepOutcome`), or the failure it raises: :class:`StepError`, or a
  refusal (:class:`PolicyRefusal`, :class:`MissingCredential`,
  :class:`MissingCapability`), each with its exit code (``runtime.errors``);
* what a provider declares besides its operations (:class:`CredentialKind`,
  :class:`Setting`, the :class:`ProgramProfile` of a program it runs, with the
  grammar the policy reads: :class:`ApiRequest`, :class:`Handover`) and the :class:`Provider` protocol itself, whose optional
  hooks have defaults in :class:`ProviderBase`;
* the diagnostic event stream (:func:`get_logger`, a :class:`Logger` that does
  nothing while ``--log-level`` is off; ask :meth:`Logger.enabled` before
  building an event's fields): events go to stderr, redacted with the run's
  secrets (:mod:`runtime.log` lists the events).
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from runtime.errors import MissingCapability as MissingCapability
from runtime.errors import MissingCredential as MissingCredential
from runtime.errors import PolicyRefusal as PolicyRefusal
from runtime.errors import StepError as StepError
from runtime.errors import Terminated as Terminated
from runtime.log import DEBUG as DEBUG
from runtime.log import ERROR as ERROR
from runtime.log import INFO as INFO
from runtime.log import WARNING as WARNING
from runtime.log import Logger as Logger
from runtime.log import get_logger as get_logger
from runtime.reading import kind as _file_kind
from runtime.text import not_utf8

# a provider's human-readable output: a value it did not write (a file name) escaped as
# all text output is, and tables made as the CLI makes its own
from runtime.text import printable as printable
from runtime.text import shorten as shorten
from runtime.text import table as table

# what a file that is not a regular one is, in words ("a socket"), as the engine says it
file_kind = _file_kind

Transport = Literal["local", "rest", "graphql", "cli"]
Effect = Literal["read", "write", "destroy"]
Access = Literal["read", "write"]
# What an argument's value must be: any text; an integer (within ``range``); ``true`` or
# ``false``; a local path (checked against the policy's roots for its ``access``).
ArgType = Literal["str", "int", "bool", "path"]

OPTION_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*(?:\[[A-Za-z0-9_.\-]*\])*)=(.*)$", re.DOTALL)
_INT = re.compile(r"-?[0-9]+")
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

    def form(self) -> str:
        return self.name if self.required else f"[{self.name}]"


class Option(NamedTuple):
    """A ``key=value`` option; its value is checked as a :class:`Positional`'s is."""

    name: str
    help: str = ""
    required: bool = False
    type: ArgType = "str"
    choices: tuple[str, ...] = ()
    range: tuple[int | None, int | None] | None = None
    in_route: str | None = None


Argument = Positional | Option


def value_problem(arg: Argument, value: str) -> str | None:
    """Why ``value`` is not what ``arg`` declares (its type, range or choices), or None."""
    if arg.choices and value not in arg.choices:
        return f"is not one of {', '.join(arg.choices)}"
    if arg.type == "bool" and value not in ("true", "false"):
        return "is not true or false"
    if arg.type == "int":
        if not _INT.fullmatch(value):
            return "is not an integer"
        low, high = arg.range or (None, None)
        number = int(value)
        if (low is not None and number < low) or (high is not None and number > high):
            if low is not None and high is not None:
                bounds = f"from {low} to {high}"
            else:
                bounds = f"at least {low}" if low is not None else f"at most {high}"
            return f"is out of range (it must be {bounds})"
    return None


def value_form(arg: Argument) -> str:
    """What ``arg`` takes, for help and the spec tables: ``open|closed|all``, ``1..100``."""
    if arg.choices:
        return "|".join(arg.choices)
    if arg.type == "bool":
        return "true|false"
    if arg.type == "int":
        low, high = arg.range or (None, None)
        if low is None and high is None:
            return "INT"
        return f"{'' if low is None else low}..{'' if high is None else high}"
    if arg.type == "path":
        access = arg.access if isinstance(arg, Positional) else None
        return f"a path under a {access or 'read'} root"
    return ""


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
        """The pieces of a positional's arg; its value as one authored piece if unknown."""
        index = self.binding.positionals.get(positional) if self.binding else None
        if index is not None and index < len(self.pieces):
            return self.pieces[index]
        value = self.positionals.get(positional)
        return () if value is None else (Piece(value),)

    def option_pieces(self, key: str) -> tuple[Piece, ...]:
        """The pieces of the first ``key=value`` option's value; ``key=`` is authored text."""
        index = (
            next((i for k, i in self.binding.options if k == key), None) if self.binding else None
        )
        if index is None or index >= len(self.pieces):
            value = self.option(key)
            return () if value is None else (Piece(value),)
        first, *rest = self.pieces[index]
        head = first.text[len(key) + 1 :]
        return (first._replace(text=head), *rest) if head else tuple(rest)

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


def match_operation(operations: Sequence[Operation], args: Sequence[str]) -> Operation | None:
    """The operation whose words are the longest prefix of ``args`` (the first declared of
    equals; an operation without words prefixes anything)."""
    best: Operation | None = None
    for op in operations:
        n = len(op.words)
        if tuple(args[:n]) == op.words and (best is None or n > len(best.words)):
            best = op
    return best


def similar_operations(operations: Sequence[Operation], args: Sequence[str]) -> list[str]:
    """The names of the operations ``args`` probably meant (``isue list``: ``issue list``),
    closest first: for a "did you mean" when no operation matches."""
    from difflib import SequenceMatcher

    scored = []
    for op in operations:
        typed = " ".join(args[: len(op.words)])
        ratio = SequenceMatcher(None, typed, op.name).ratio()
        if ratio >= 0.75:
            scored.append((-ratio, op.name))
    return [name for _, name in sorted(scored)[:3]]


def did_you_mean(names: Sequence[str]) -> str:
    """``did you mean 'issue list'?`` (or nothing) for a hint."""
    return f"did you mean {' or '.join(repr(n) for n in names)}? " if names else ""


def bind(operation: Operation, rest: Sequence[str]) -> tuple[Binding, list[BindingProblem]]:
    """Split the args after the operation words into positionals, options, passthrough.

    ``rest`` are the args *as authored*; indices in the result refer to it.
    """
    binding = Binding()
    problems: list[BindingProblem] = []
    names = operation.option_names()
    pending = list(operation.positionals)
    in_flags = False  # for pass-through operations, positionals come before the first flag
    taken: set[int] = set()  # args read as the value of a flag already refused
    for index, arg in enumerate(rest):
        if index in taken:
            continue
        if operation.passthrough and (in_flags or not pending or arg.startswith("-")):
            in_flags = True
            binding.passthrough.append(index)
            continue
        if arg.startswith("-") and len(arg) > 1 and operation.transport in ("rest", "graphql"):
            # an API call's positionals are names and routes: a flag written as for a CLI
            # (`--limit 5`) never binds as one (ORG, then GET /orgs/--limit/issues)
            problem, value_index = _flag_problem(operation, rest, index)
            problems.append(problem)
            if value_index is not None:
                taken.add(value_index)
            continue
        # an option is KEY=VALUE: without "=" the pattern is not tried
        match = OPTION_RE.match(arg) if "=" in arg and operation.accepts_options else None
        if match is not None:
            key = match.group(1)
            if operation.positionals_first and any(p.required for p in pending):
                problems.append(
                    BindingProblem(
                        index,
                        f"'{_short(arg)}' comes before {', '.join(p.name for p in pending)} "
                        f"in '{operation.name}'",
                        f"write {' and '.join(p.name for p in pending)} first, then the "
                        f"key=value options: {operation.form()}",
                        code="option-before-positional",
                    )
                )
                continue
            if operation.options is not None and key not in names:
                from difflib import get_close_matches

                problems.append(
                    BindingProblem(
                        index,
                        f"unknown option '{key}' for '{operation.name}'",
                        did_you_mean(get_close_matches(key, names, n=1, cutoff=0.75))
                        + "known options: "
                        + ", ".join(names),
                        code="unknown-option",
                    )
                )
                continue
            if operation.options is not None and any(k == key for k, _ in binding.options):
                # a declared option means one value: which of two would win is not written
                # anywhere (the request might take either)
                problems.append(
                    BindingProblem(
                        index,
                        f"option '{key}' is given twice for '{operation.name}'",
                        f"give {key}= once",
                        code="duplicate-option",
                    )
                )
                continue
            binding.options.append((key, index))
            continue
        if pending:
            binding.positionals[pending.pop(0).name] = index
            continue
        problems.append(
            BindingProblem(
                index,
                f"unexpected argument '{_short(arg)}' for '{operation.name}'",
                f"the form is: {operation.form()}",
                code="extra-argument",
            )
        )
    given = {key for key, _ in binding.options}
    missing_options = [
        o.name for o in operation.options or () if o.required and o.name not in given
    ]
    if missing_options:
        problems.append(
            BindingProblem(
                -1,
                f"'{operation.name}' needs the option"
                + ("s " if len(missing_options) > 1 else " ")
                + ", ".join(f"{name}=" for name in missing_options),
                f"the form is: {operation.form()}",
                code="missing-option",
            )
        )
    missing = [p.name for p in pending if p.required]
    if missing:
        problems.append(
            BindingProblem(
                -1,
                f"'{operation.name}' is missing its {', '.join(missing)} argument"
                + ("s" if len(missing) > 1 else ""),
                f"the form is: {operation.form()}",
                code="missing-argument",
            )
        )
    return binding, problems


def _flag_problem(
    operation: Operation, rest: Sequence[str], index: int
) -> tuple[BindingProblem, int | None]:
    """The refusal of the flag ``rest[index]``, with the key=value form it stands for when
    the operation has that option (``--limit 5``: ``limit=5``), and the index of the arg it
    took as its value, if any."""
    flag = rest[index]
    name, eq, value = flag.lstrip("-").partition("=")
    keys = operation.option_names()
    # the option it stands for: a declared one (--per-page: per_page), or any name where
    # the operation takes any key (api's fields), but not a one-letter flag (-f a=b)
    key = next(
        (
            k
            for k in (name, name.replace("-", "_"))
            if k in keys or (operation.options is None and len(k) > 1)
        ),
        None,
    )
    taken = None
    if key and not eq:
        following = rest[index + 1] if index + 1 < len(rest) else None
        if (
            following is not None
            and not following.startswith("-")
            and not ("=" in following and OPTION_RE.match(following))
        ):
            value, taken = following, index + 1
    message = f"'{_short(flag)}' is a flag; '{operation.name}' takes key=value options, not flags"
    if key:
        declared = next((o for o in operation.options or () if o.name == key), None)
        shown = value or ("true" if declared is not None and declared.type == "bool" else "VALUE")
        hint = f"write {key}={shown}"
    elif keys:
        hint = f"its options are key=value: {', '.join(keys)}"
    else:
        hint = f"the form is: {operation.form()}"
    return BindingProblem(index, message, hint, code="flag-argument"), taken


def resolve_call(
    binding: Binding,
    resolved_rest: Sequence[str],
    pieces: Sequence[tuple[Piece, ...]] = (),
) -> BoundCall:
    """The call of ``binding`` on the resolved args; ``pieces`` (per arg) say where they came from."""
    return BoundCall(
        positionals={name: resolved_rest[i] for name, i in binding.positionals.items()},
        options=[(key, OPTION_RE.match(resolved_rest[i]).group(2)) for key, i in binding.options]  # type: ignore[union-attr]
        if binding.options
        else [],
        passthrough=[resolved_rest[i] for i in binding.passthrough],
        args=list(resolved_rest),
        pieces=pieces,
        binding=binding if pieces else None,
    )


def argument_problems(operation: Operation, call: BoundCall) -> list[BindingProblem]:
    """The arguments whose value is not what the operation declares (type, range, choices),
    and text that is not UTF-8 (any argument but a path, and an undeclared key=value).

    Validation passes the args as authored, with a ``${reference}`` marked ``missing``;
    the plan passes them substituted. A value not known yet is not checked; a message
    names the inputs a value came from.
    """
    binding = call.binding
    found: list[tuple[Argument, int, str, str]] = []  # (declared, arg index, shown, value)
    for positional in operation.positionals:
        value = call.positionals.get(positional.name)
        if value is not None:
            index = binding.positionals.get(positional.name, -1) if binding else -1
            found.append((positional, index, f"{positional.name} '{_short(value)}'", value))
    declared = {o.name: o for o in operation.options or ()}
    problems: list[BindingProblem] = []
    for n, (key, value) in enumerate(call.options):
        option = declared.get(key)
        index = binding.options[n][1] if binding and n < len(binding.options) else -1
        if option is not None:
            found.append((option, index, f"{key}={_short(value)}", value))
        elif (byte := not_utf8(f"{key}={value}")) is not None:  # a field of `api`'s body
            problems.append(
                BindingProblem(
                    index,
                    f"{_short(key)}= is not UTF-8 text ({byte} of key=value)",
                    f"'{operation.name}' sends text: convert the value (iconv -t UTF-8)",
                    code="bad-value",
                )
            )
    for arg, index, shown, value in found:
        if arg.type != "path" and (byte := not_utf8(value)) is not None:
            # bytes of a command line that are not UTF-8 (Python keeps them as lone
            # surrogates): no step can write, send or record them as text; a path is
            # the file system's bytes and may hold them
            problems.append(
                BindingProblem(
                    index,
                    f"{arg.name} is not UTF-8 text ({byte})",
                    f"'{operation.name}' takes text for {arg.name}: convert the value "
                    "(iconv -t UTF-8)",
                    code="bad-value",
                )
            )
            continue
        if arg.type == "str" and not arg.choices:
            continue
        pieces = call.pieces[index] if 0 <= index < len(call.pieces) else ()
        if any(p.missing for p in pieces):
            continue
        problem = value_problem(arg, value)
        if problem is None:
            continue
        inputs = list(dict.fromkeys(p.input for p in pieces if p.input is not None))
        source = f" (from input {', '.join(repr(i) for i in inputs)})" if inputs else ""
        form = value_form(arg)
        takes = f"{arg.name}={form}" if isinstance(arg, Option) else f"{arg.name}: {form}"
        problems.append(
            BindingProblem(
                index,
                f"{shown}{source} {problem}",
                f"'{operation.name}' takes {takes}",
                code="bad-value",
            )
        )
    return problems


def context_defaults(
    operation: Operation, call: BoundCall, run: RunContext
) -> dict[str, Setting | None]:
    """Each positional the call leaves out (or empty) that declares a context default: the
    setting that stands in for it, or None when none is set."""
    return {
        p.name: run.setting(p.context_default)
        for p in operation.positionals
        if p.context_default is not None and not call.positionals.get(p.name)
    }


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- what a provider says of a call before it runs -------------------------------------------


class Decision(NamedTuple):
    """A policy decision: allowed or not, and the rule that decided."""

    allowed: bool
    rule: str  # which rule decided, e.g. "allowed_binaries: git (default)"
    reason: str = ""
    hint: str = ""  # what a refused author can do instead

    def to_json(self) -> dict[str, Any]:
        return {"allowed": self.allowed, "rule": self.rule, "reason": self.reason}


class ApiRoute(NamedTuple):
    """A documented API operation: method, path template and its OpenAPI operationId."""

    method: str
    path: str
    operation_id: str

    def to_json(self) -> dict[str, str]:
        return {"method": self.method, "path": self.path, "operation_id": self.operation_id}


@dataclass
class Inspection:
    """What a provider says about a call before it runs (no side effects)."""

    # a refusal beyond the generic rules (e.g. a path outside the roots)
    decision: Decision | None = None
    notes: list[str] = field(default_factory=list)  # e.g. "ORG from context 'work': acme"
    hosts: list[str] = field(default_factory=list)  # network hosts the call will contact
    paths: list[tuple[str, str]] = field(default_factory=list)  # (path, access) it will touch
    credential_host: str | None = None
    # args the call cannot take as resolved (an input value that would change a REST
    # route): invalid inputs, refused at plan time with exit 2 at the arg's position
    problems: list[BindingProblem] = field(default_factory=list)
    # the documented API operation the call is sent to, when the provider knows it
    route: ApiRoute | None = None


# -- what a provider may ask of the run --------------------------------------------------------

T = TypeVar("T")


class Roots(NamedTuple):
    paths: list[Path]  # real paths
    source: str  # where the policy took them from ("default", a file)


class ProtectedPaths(NamedTuple):
    """Real paths a step never writes, whatever the roots say."""

    home: str  # Runtime Home: the audit log, the policy, contexts, configuration
    policy_file: str | None  # the user's policy file, wherever it lies
    # the same folders by identity (device, inode): a bind mount reaches them by another
    # real path. Home's folder; the policy file's folder and the file's name
    home_id: tuple[int, int] | None = None
    policy_at: tuple[int, int, str] | None = None


class Setting(NamedTuple):
    """A value a provider declared (``github_host``), and where it came from."""

    value: str
    origin: str  # "context 'work'", "config.yaml"
    context: str | None = None  # the active context's name, when it came from one


class SecretFilter(Protocol):
    def add(self, secret: str | None) -> None: ...
    def text(self, value: str) -> str: ...


class ProgramResult(NamedTuple):
    """What a program a step ran did (its output bounded to a head and a tail)."""

    exit_code: int | None  # None when it was killed by the time limit
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    truncated: bool
    timed_out: bool
    # connections the step's network rules refused, each with its reason
    blocked: tuple[str, ...] = ()


# What stands for an input's value when a step is decided before its inputs are known
# (validation): no value contains it (an input with a NUL is refused). A rule that would
# decide on it does not decide (a program's ``refusal`` included): it is left to plan
# time, so that what is refused then is refused whatever the inputs are.
UNKNOWN = "\x00"


class Subcommand(NamedTuple):
    """The subcommand a program's args name (:meth:`ProgramProfile.subcommand`)."""

    name: str | None  # None: the args name no subcommand (``git --version``)
    position: int  # its index in the args (len(args) when none)
    problem: str = ""  # why no subcommand could be told, when the args cannot be read


class ApiRequest(NamedTuple):
    """The request a program's ``api`` subcommand sends (``gh api ARGS``), read from the
    args after the subcommand (:attr:`ProgramProfile.read_api`): the policy decides it as
    the owning provider's ``api`` operation (``github api METHOD ROUTE``) and, when it
    goes to the GraphQL endpoint, each of its ``documents`` as the provider's GraphQL
    operation."""

    method: str  # upper case ("" with a problem)
    route: str  # as the program requests it
    problem: str = ""  # why the args cannot be read as the program reads them
    hint: str = ""  # what to write instead, with a problem
    graphql: bool = False  # the route is the provider's GraphQL endpoint
    documents: tuple[str, ...] = ()  # the GraphQL documents it sends, in order
    graphql_problem: str = ""  # why its documents cannot be known before the step runs


class Handover(NamedTuple):
    """Args a program's call hands to another program (``gh repo clone REPO DIR -- ARGS``
    runs ``git clone ARGS DIR``), read by :attr:`ProgramProfile.hands_over`: the policy
    decides them as that program's own call (``git clone ARGS``), and an input among
    them must not start with ``-`` unless that program's ``--`` came first."""

    command: str  # the handing call's command, as its words ("repo clone")
    program: str  # the program handed to ("git")
    words: tuple[str, ...]  # what leads the handed args in that program's call: ("clone",)
    # indexes into the caller's args of what the other program gets, in its order
    indexes: tuple[int, ...]
    # the index of the caller's `--`, after which its args are the other program's
    # options again; None when there is none
    dash: int | None
    problem: str = ""  # why the args cannot be read as the program reads them
    hint: str = ""  # what to write instead, with a problem


def find_subcommand(
    program: str, global_options: Mapping[str, bool], args: Sequence[str]
) -> Subcommand:
    """The first positional of ``args`` after the ``global_options`` (option -> whether it
    takes a value) ``program`` accepts before its subcommand. Anything else before the
    subcommand is not understood, so no subcommand can be named."""
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("-") or arg == "-":
            return Subcommand(arg, index)
        name, eq, _ = arg.partition("=")
        if name not in global_options:
            return Subcommand(
                None,
                index,
                f"'{arg}' before the subcommand is not a global option runtime knows for {program}",
            )
        index += 2 if global_options[name] and not eq else 1
    return Subcommand(None, len(args))


@dataclass(frozen=True)
class ProgramProfile:
    """What runtime knows of a program a step runs, as data that the sandbox and the
    policy read.

    The engine declares the programs it knows (git); a provider declares the
    programs its operations run (github runs gh) and what they need from it.
    Profiles of one program are merged (the engine's, then the providers'). Inside the
    sandbox the program may execute itself, the programs it ``runs`` (found on PATH,
    with their own profiles), the programs in its ``helper_dirs`` (folders, relative to
    the folder the program's real file is in: git's exec path ``../lib/git-core``)
    and what the policy's ``admitted_helpers`` names; nothing else. It reaches the hosts
    of the credentials in ``hosts_of`` (the context's host and its aliases) and those
    the policy's ``binary_hosts`` names for it, through runtime's proxy; no other
    network.

    Its command-line grammar, as far as the policy reads it (every part optional; a
    program without one is read as knowing nothing of it):

    * ``global_options``: the options it accepts before its subcommand (option ->
      whether it takes a value), for :meth:`subcommand`;
    * ``api``: the subcommand that calls the owning provider's API as its ``api`` and
      GraphQL operations do (gh's ``api``), read by ``read_api`` (the args after the
      subcommand) into the :class:`ApiRequest` the policy decides as those operations;
    * ``hands_over``: the args a call hands to another program (:class:`Handover`), or
      None;
    * ``named_hosts``: (what, host) for each host a call names: a program with it is
      pinned to its credential's host, and a call naming another is refused;
    * ``refusal``: a refusal of the program's own (a :class:`Decision`), or None; an arg
      holding :data:`UNKNOWN` is not decided on.
    """

    name: str
    runs: tuple[str, ...] = ()
    helper_dirs: tuple[str, ...] = ()
    hosts_of: tuple[str, ...] = ()
    global_options: Mapping[str, bool] = field(default_factory=dict, hash=False)
    api: str | None = None
    read_api: Callable[[Sequence[str]], ApiRequest] | None = None
    hands_over: Callable[[Sequence[str]], Handover | None] | None = None
    named_hosts: Callable[[Sequence[str]], list[tuple[str, str]]] | None = None
    refusal: Callable[[Sequence[str]], Decision | None] | None = None

    def subcommand(self, args: Sequence[str]) -> Subcommand:
        """The first positional after the global options the program accepts."""
        return find_subcommand(self.name, self.global_options, args)


class RunContext(Protocol):
    """What a provider may ask of the run, at plan time and when a step runs.

    Nothing here has a side effect but :meth:`run_program` (and the state and
    credentials a provider asks for, which the run keeps and closes).
    """

    @property
    def cwd(self) -> Path: ...
    @property
    def environ(self) -> Mapping[str, str]: ...
    @property
    def redactor(self) -> SecretFilter: ...

    def roots(self, access: Access) -> Roots:
        """The policy's read or write roots, resolved from the working directory."""
        ...

    def protected_paths(self) -> ProtectedPaths:
        """Real paths a step never writes (resolved afresh at each call: a step may have
        put a link where one was)."""
        ...

    def home_key(self, purpose: str) -> bytes | None:
        """A secret of this Runtime Home for ``purpose`` (made once), or None if Home
        cannot hold one."""
        ...

    def setting(self, key: str) -> Setting | None:
        """A value the provider declared: from the active Runtime Context, else config.yaml."""
        ...

    def credential(self, name: str, host: str) -> str:
        """The credential ``name`` for ``host`` (registered with the redactor); raises
        :class:`MissingCredential` when it cannot be resolved."""
        ...

    def default_host(self, credential: str) -> str:
        """The host the credential ``name`` is for when nothing names another."""
        ...

    def state(self, make: Callable[[], T]) -> T:
        """This run's object made by ``make`` (made once per run; one per factory)."""
        ...

    def on_close(self, closer: Callable[[], None]) -> None:
        """Call ``closer`` when the run ends (close a client)."""
        ...

    def check_host(self, host: str) -> None:
        """Raise :class:`MissingCapability` when the capability's network rule forbids
        ``host``; providers ask before every connection."""
        ...

    def program_environment(self) -> dict[str, str]:
        """The environment every program a step runs starts from: the policy's
        allow-listed variables, nothing else."""
        ...

    def scratch(self, name: str) -> contextlib.AbstractContextManager[str]:
        """A folder of the program's own for one start (a config folder): pass it to
        :meth:`run_program` as ``scratch``."""
        ...

    def run_program(
        self,
        argv: list[str],
        environ: Mapping[str, str],
        *,
        timeout: float,
        on_output: Callable[[str, str], None],
        scratch: str | None = None,
    ) -> ProgramResult:
        """Run ``argv`` (argv[0] absolute) as the engine runs every program: confined
        where the system allows it, in a process group of its own, bounded in time and
        memory, its output streamed redacted. ``environ`` gets hardened git on top (the
        engine's ``GIT_*`` variables win over its own): any git the program starts, as
        gh starts one for ``repo clone`` or to read a checkout's remotes, reads no
        system or global configuration and runs no program that configuration names.
        Raises :class:`StepError` if it cannot start."""
        ...


# -- what a step gets, and gives back ----------------------------------------------------


@dataclass
class StepEnvironment:
    """Everything a step may use: the run, and this step's time and output."""

    run: RunContext
    timeout: float
    # Called with chunks of a step's own output while it runs (text mode streams it).
    on_output: Callable[[str, str], None] = field(default=lambda stream, text: None)
    # When the step started (time.monotonic()); ``timeout`` after it, its time is up.
    started: float = field(default_factory=time.monotonic)

    @property
    def cwd(self) -> Path:
        return self.run.cwd

    @property
    def environ(self) -> Mapping[str, str]:
        return self.run.environ

    @property
    def redactor(self) -> SecretFilter:
        return self.run.redactor

    @property
    def deadline(self) -> float:
        """When the step's time limit runs out (``time.monotonic()``): providers hold their
        own work (requests, retries, waits) to it, as programs are held to ``timeout``."""
        return self.started + self.timeout

    def check_host(self, host: str) -> None:
        self.run.check_host(host)

    def run_program(
        self, argv: list[str], environ: Mapping[str, str], scratch: str | None = None
    ) -> ProgramResult:
        """:meth:`RunContext.run_program` with this step's time limit and output."""
        return self.run.run_program(
            argv, environ, timeout=self.timeout, on_output=self.on_output, scratch=scratch
        )


@dataclass
class StepOutcome:
    ok: bool
    output: str = ""  # human-readable output of the step
    data: Any = None  # structured output (JSON-able)
    exit_code: int | None = None  # a binary's (or gh's) exit code
    http_status: int | None = None  # the last HTTP status of a REST/GraphQL step
    error: str | None = None
    hint: str | None = None
    output_bytes: int | None = None  # total bytes a process printed (output may be a head and tail)
    truncated: bool = False
    streamed: bool = False  # the output already reached the terminal while the step ran
    details: dict[str, Any] = field(default_factory=dict)
    # The output as bytes, where text would not keep them (an archive a REST call
    # answered): ``--output raw`` writes these, redacted, instead of ``output``, which is
    # then what text mode shows of them.
    raw: bytes | None = None


# -- URLs set by users --------------------------------------------------------------------


def split_url(url: str) -> Any:
    """``urlsplit(url)``, with the port checked too (:class:`ValueError` when unreadable).

    ``urlsplit`` refuses an unclosed IPv6 bracket at once but a port that is
    not a number in 0-65535 only when ``.port`` is read, which code asking for
    the host or the origin later does.
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    _ = parts.port
    return parts


def setting_url(url: str, variable: str) -> Any:
    """A URL set in ``variable`` (GITHUB_API_URL...), split; :class:`ValueError`, with a
    message naming the variable, if it cannot be read or carries a user or password
    (a host is never ``user:password@host``, and a token has a store of its own)."""
    try:
        parts = split_url(url)
    except ValueError as exc:
        raise ValueError(f"{variable}={url!r} is not a valid URL ({exc})") from None
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{variable} must not carry credentials in the URL")
    return parts


def ssl_context(environ: Mapping[str, str]) -> Any:
    """The TLS context every HTTPS client of the run uses (the system store, or
    SSL_CERT_FILE / SSL_CERT_DIR for a private CA); :class:`CertificateSetupError`."""
    from runtime.tls import ssl_context as shared

    return shared(environ)


from runtime.tls import CertificateSetupError as CertificateSetupError  # noqa: E402

# -- what a provider declares, and the protocol ---------------------------------------------


@dataclass(frozen=True)
class CredentialKind:
    """A credential a provider's operations need, and how the Auth Engine finds it.

    Looked up in the environment variable (config.yaml's ``variable_setting`` may
    name another), then in the OS keyring under ``keyring_service`` (``{host}``
    filled in). Programs mapped to it in the policy's ``binary_credentials``
    receive it through ``program_environment(token, host, config_dir)``.
    """

    name: str  # "github"
    variable: str  # "RUNTIME_GITHUB_TOKEN"
    keyring_service: str  # "runtime:github:{host}"
    default_host: str  # "github.com"
    variable_setting: str | None = None  # a config.yaml key naming another variable
    host_setting: str | None = None  # a setting naming the host ("github_host")
    # the host an environment variable points at (GITHUB_API_URL), when set
    host_from_environ: Callable[[Mapping[str, str]], str | None] | None = None
    program_environment: Callable[[str, str, str], dict[str, str]] | None = None
    # other names of a host that its programs may use (github.com: api.github.com)
    host_aliases: Callable[[str], tuple[str, ...]] | None = None
    # what a user is asked for at login ("a GitHub token (classic or fine-grained)")
    login_hint: str = ""


HOST_FORM = "a host name with an optional port (ghe.example.com or ghe.example.com:8443)"
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_PORT = re.compile(r"[1-9][0-9]{0,4}")


def host_problem(value: str) -> str | None:
    """Why ``value`` is not ``name[:port]``, or ``None``.

    ``name`` is a DNS name (letters, digits and '-' in dot-separated labels of
    at most 63 characters, 253 in all), an IPv4 address, or an IPv6 address in
    brackets; ``port`` is 1-65535. Nothing else: no scheme, user, path, query,
    zone or whitespace.
    """
    if value.startswith("["):
        inside, closed, rest = value[1:].partition("]")
        if not closed:
            return "the IPv6 bracket is not closed"
        if "%" in inside:
            return "a zone (%...) is not part of a host"
        try:
            ipaddress.IPv6Address(inside)
        except ValueError:
            return f"'{inside}' is not an IPv6 address"
        port = rest[1:] if rest.startswith(":") else None
        if rest and port is None:
            return "only ':PORT' may follow the IPv6 address"
    else:
        if "://" in value:
            return "it is a URL; give only its host"
        for char, what in (("@", "a user"), ("/", "a path"), ("?", "a query"), ("#", "a fragment")):
            if char in value:
                return f"it carries {what} ('{char}')"
        name, colon, port_text = value.partition(":")
        port = port_text if colon else None
        if port is not None and ":" in port:
            return "an IPv6 address must be written in brackets ([2001:db8::1]:8443)"
        if not name:
            return "the host name is empty"
        labels = name.split(".")
        if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
            return "a host name is letters, digits and '-' in labels separated by '.'"
        if labels[-1].isdigit():
            try:
                ipaddress.IPv4Address(name)
            except ValueError:
                return f"'{name}' is not an IPv4 address"
    if port is not None and not (_PORT.fullmatch(port) and int(port) <= 65535):
        return "the port must be a number from 1 to 65535"
    return None


def host_error(key: str, value: str) -> str | None:
    """The refusal of a host ``value`` for ``key``, or ``None`` when it is ``name[:port]``."""
    problem = host_problem(value)
    if problem is None:
        return None
    return f"{key} must be {HOST_FORM}, not {value!r} ({problem})"


def host_setting(key: str) -> Callable[[str], str | None]:
    """A :attr:`SettingKind.check` for a host setting: ``name[:port]``, nothing else."""

    def check(value: str) -> str | None:
        return host_error(key, value)

    return check


class SettingKind(NamedTuple):
    """A value a provider reads from a Runtime Context or config.yaml (``github_host``)."""

    name: str
    help: str
    check: Callable[[str], str | None] | None = None  # why a value is refused, or None
    in_config: bool = False  # config.yaml may set it too


class Provider(Protocol):
    """What the engine needs from a provider. Found through entry points."""

    name: str
    summary: str
    operations: tuple[Operation, ...]
    credentials: tuple[CredentialKind, ...]
    settings: tuple[SettingKind, ...]
    # what `runtime capability new --provider NAME` writes: inputs and workflow, and
    # the network rule the scaffold declares
    scaffold: str
    scaffold_network: str

    def execute(self, operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
        """Run one call; a failure is ``ok=False`` or a step error."""
        ...

    def inspect(self, operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
        """What the call will touch, or why it cannot run (plan time: looks only)."""
        ...

    def check(self, operation: Operation, args: Sequence[str]) -> list[BindingProblem]:
        """Problems with the args as authored, beyond their form (validation time)."""
        ...

    def check_token(
        self, run: RunContext, host: str, token: str, timeout: float
    ) -> dict[str, object]:
        """Read-only, within ``timeout`` seconds: what the token is (its login, scopes).
        A :class:`StepError` (with ``http_status`` when the host answered) when it cannot
        tell; :class:`NotImplementedError` when the provider has no such check."""
        ...

    def ping(self, run: RunContext, host: str, timeout: float, max_bytes: int) -> int:
        """Read-only and bounded: does the host answer? Its HTTP status."""
        ...


class ProviderBase:
    """Defaults for a provider's optional parts: no credentials or settings, nothing to
    inspect or check, no token check or ping."""

    credentials: tuple[CredentialKind, ...] = ()
    settings: tuple[SettingKind, ...] = ()
    # what the sandbox must know of the programs the provider's operations run
    programs: tuple[ProgramProfile, ...] = ()
    scaffold: str = ""
    scaffold_network: str = "none"

    def inspect(self, operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
        return Inspection()

    def check(self, operation: Operation, args: Sequence[str]) -> list[BindingProblem]:
        return []

    def check_token(
        self, run: RunContext, host: str, token: str, timeout: float
    ) -> dict[str, object]:
        raise NotImplementedError(f"no token check for {host}")

    def ping(self, run: RunContext, host: str, timeout: float, max_bytes: int) -> int:
        raise NotImplementedError(f"no live check for {host}")
