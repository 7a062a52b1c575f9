"""The provider interface: operations declared as data, and how args bind to them.

A provider publishes a tuple of :class:`Operation`. Help output, validation,
planning, policy and preflight all read that one table. Binding an
operation's args happens on the args *as authored* (before substitution), so
an input value can never change which argument is an option and which is a
positional: structure belongs to the author, values to the inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

if TYPE_CHECKING:
    from runtime.execution import StepEnvironment, StepOutcome

Transport = Literal["local", "rest", "graphql", "cli"]
Effect = Literal["read", "write", "destroy"]

OPTION_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*(?:\[[A-Za-z0-9_.\-]*\])*)=(.*)$", re.DOTALL)


class Positional(NamedTuple):
    name: str
    required: bool = True
    help: str = ""

    def form(self) -> str:
        return self.name if self.required else f"[{self.name}]"


class Option(NamedTuple):
    name: str
    help: str = ""
    required: bool = False


class EffectRule(NamedTuple):
    """The effect when a resolved positional matches a pattern (``api DELETE`` destroys)."""

    positional: str
    pattern: str
    effect: Effect


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
    # The effect read off the bound call by the provider (a GraphQL document parsed: a
    # mutation is a write, whatever comments precede it); takes the place of effect_rules.
    effect_from: Callable[[BoundCall], Effect] | None = None

    @cached_property
    def name(self) -> str:
        # asked several times for every step of a run (labels, records, plan)
        return " ".join(self.words)

    @property
    def accepts_options(self) -> bool:
        return self.options is None or len(self.options) > 0

    def option_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.options or ())

    def effect_of(self, call: BoundCall | None) -> Effect:
        if call is not None and self.effect_from is not None:
            return self.effect_from(call)
        if call is not None:
            for rule in self.effect_rules:
                value = call.positionals.get(rule.positional)
                if value is not None and re.search(rule.pattern, value):
                    return rule.effect
        return self.effect

    def possible_effects(self) -> tuple[Effect, ...]:
        found = {self.effect, *(rule.effect for rule in self.effect_rules)}
        if self.effect_from is not None:
            found |= {"read", "write"}
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


class Provider(Protocol):
    """What the engine needs from a provider. Found through entry points."""

    name: str
    summary: str
    operations: tuple[Operation, ...]

    def execute(
        self, operation: Operation, call: BoundCall, env: StepEnvironment
    ) -> StepOutcome: ...


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

    def options_dict(self) -> dict[str, str]:
        return dict(self.options)

    def to_json(self) -> dict[str, Any]:
        return {
            "positionals": dict(self.positionals),
            "options": [[k, v] for k, v in self.options],
            "passthrough": list(self.passthrough),
        }


def match_operation(operations: Sequence[Operation], args: Sequence[str]) -> Operation | None:
    """The operation whose words are the longest prefix of ``args``."""
    index = _by_first_word(operations)
    best: Operation | None = None
    for op in index.get(args[0], index[None]) if args else index[None]:
        n = len(op.words)
        if tuple(args[:n]) == op.words and (best is None or n > len(best.words)):
            best = op
    return best


# id(operations) -> (operations, first word -> the operations that can match).
# A provider's operations are one tuple for the life of the process: a step looks
# only at the operations its first arg can start (a GitHub step looked at all
# twenty; bench/, figure 7d).
_FIRST_WORDS: dict[int, tuple[Sequence[Operation], dict[str | None, list[Operation]]]] = {}


def _by_first_word(operations: Sequence[Operation]) -> dict[str | None, list[Operation]]:
    """First word -> the operations starting with it, in declared order, plus those
    without words (a prefix of any args); ``None`` -> only those without words."""
    known = _FIRST_WORDS.get(id(operations))
    if known is not None and known[0] is operations:
        return known[1]
    index: dict[str | None, list[Operation]] = {None: [op for op in operations if not op.words]}
    for op in operations:
        first = op.words[0] if op.words else None
        if first is not None and first not in index:
            index[first] = [o for o in operations if not o.words or o.words[0] == first]
    if isinstance(operations, tuple):  # kept (with the tuple itself); a list may change
        _FIRST_WORDS[id(operations)] = (operations, index)
    return index


def bind(operation: Operation, rest: Sequence[str]) -> tuple[Binding, list[BindingProblem]]:
    """Split the args after the operation words into positionals, options, passthrough.

    ``rest`` are the args *as authored*; indices in the result refer to it.
    """
    binding = Binding()
    problems: list[BindingProblem] = []
    names = operation.option_names()
    pending = list(operation.positionals)
    in_flags = False  # for pass-through operations, positionals come before the first flag
    for index, arg in enumerate(rest):
        if operation.passthrough and (in_flags or not pending or arg.startswith("-")):
            in_flags = True
            binding.passthrough.append(index)
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
                problems.append(
                    BindingProblem(
                        index,
                        f"unknown option '{key}' for '{operation.name}'",
                        "known options: " + ", ".join(names),
                        code="unknown-option",
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


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
