"""Resolve and policy: bind each step to an operation or a binary, substitute, decide.

Third and fifth stations. Building a plan causes no side effect: no file is
written, no process started, no network contacted. Providers take part
through their optional ``inspect`` hook, which only looks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from runtime.document.grammar import REFERENCE
from runtime.document.model import Capability, Step
from runtime.errors import UsageError
from runtime.plan.binary import input_misuses, references
from runtime.plan.binding import argument_problems, bind, match_operation, resolve_call
from runtime.plan.policy import program_actions
from runtime.plan.programs import owned_profile
from runtime.plan.substitute import substitute
from runtime.plan.workspace import Workspace
from runtime.problems import Problem
from runtime.provider import BoundCall, Decision, Inspection, Operation, RunContext
from runtime.provider.operations import Binding, BindingProblem, Piece
from runtime.redact import Redactor
from runtime.text import printable

# The fields of a provider's own (Inspection.record) each step of the plan and execute
# documents carries, null where the provider gives none: the documents are closed, and
# their schemas name each (github's route: the documented API operation a call is sent to)
RECORD_FIELDS = ("route",)


# What a step's decision is until the policy station decides it (refused: nothing that
# skips the station can run a step).
UNDECIDED = Decision(False, "undecided", "the policy station has not decided this step")


@dataclass
class PlannedStep:
    index: int
    step: Step
    args: list[str]  # resolved
    # the policy's, once the policy station has decided (runtime.plan.gate.decide)
    decision: Decision
    provider: str | None = None
    operation: Operation | None = None
    call: BoundCall | None = None
    binary: str | None = None
    # the program the step starts (the binary, or the program an operation runs: gh), as
    # found on PATH; None when it is not there
    binary_path: str | None = None
    transport: str = "process"
    effect: str = "write"
    credential: str | None = None
    inspection: Inspection = field(default_factory=Inspection)
    # required inputs not supplied that the step's args name (planned without them, as
    # `policy check` and `preflight` may): its decision was made on the literal ${NAME}
    # and says nothing about the run
    waiting: tuple[str, ...] = ()
    # for a step that starts a program, once the policy station has looked: whether the
    # kernel confines it, and why not when a policy lets it run unconfined
    confined: bool | None = None
    unconfined: str | None = None

    @property
    def program(self) -> str | None:
        """The program the step starts: its binary, or the one its operation runs (gh)."""
        if self.binary is not None:
            return self.binary
        return self.operation.program if self.operation is not None else None

    @property
    def label(self) -> str:
        if self.provider is not None and self.operation is not None:
            return f"{self.provider} {self.operation.name}"
        return self.binary or "?"

    def to_json(self, redactor: Redactor) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": "provider" if self.provider is not None else "binary",
            "provider": self.provider,
            "operation": self.operation.name if self.operation else None,
            "binary": self.binary,
            "binary_path": self.binary_path,
            "args": redactor.data(self.args),
            "transport": self.transport,
            "effect": self.effect,
            "credential": self.credential,
            "decision": self.decision.to_json(),
            "notes": redactor.data(self.inspection.notes),
            "hosts": self.inspection.hosts,
            **{name: self.inspection.record.get(name) for name in RECORD_FIELDS},
            # what the step would change (a structured edit's diffs), as a file holds it:
            # a secret an input writes into a file is redacted here too
            "preview": (
                redactor.data(self.inspection.preview.to_json())
                if self.inspection.preview is not None
                else None
            ),
            "confined": self.confined,
            "unconfined_reason": self.unconfined,
        }


@dataclass
class Plan:
    capability: Capability
    inputs: dict[str, str]
    steps: list[PlannedStep]

    @property
    def refused(self) -> list[PlannedStep]:
        """Steps the policy refuses, whatever the missing inputs would be."""
        return [s for s in self.steps if not s.decision.allowed and not s.waiting]

    @property
    def waiting(self) -> list[PlannedStep]:
        """Steps whose decision waits for a required input that was not supplied."""
        return [s for s in self.steps if s.waiting]

    @property
    def unpreviewable(self) -> list[PlannedStep]:
        """Allowed steps whose change cannot be previewed (a structured edit whose file is
        not there yet, or whose expected count is not met): a dry run refuses them."""
        return [
            s
            for s in self.steps
            if s.inspection.preview is not None
            and s.inspection.preview.problem
            and s.decision.allowed
            and not s.waiting
        ]

    @property
    def missing_binaries(self) -> list[PlannedStep]:
        """Allowed steps whose program (a binary, or gh for an operation run through it) is
        not on PATH."""
        return [
            s
            for s in self.steps
            if s.program is not None and s.binary_path is None and s.decision.allowed
        ]


def build_plan(
    cap: Capability,
    inputs: dict[str, str],
    ws: Workspace,
    run: RunContext,
    resolved: Mapping[int, tuple[Operation, Binding]] | None = None,
    *,
    refuse: bool = True,
) -> Plan:
    """The plan of every step; ``resolved`` is what validation matched and bound (if given).
    ``run`` is what each provider's ``inspect`` is given; the plan asks nothing else of it.

    Refuses (exit 2, every case at its file:line:column) when an input value would
    become an option of a binary, or when a provider's ``inspect`` finds args its call
    cannot take (an input that would change a REST route, an ORG neither given nor set
    in the context): structure belongs to the author, values to inputs. ``refuse=False``
    (show, which plans without inputs) keeps those in the steps' inspections instead.
    """
    found = resolved or {}
    steps = [plan_step(step, inputs, ws, run, found.get(step.index)) for step in cap.steps]
    missing = {name for name, decl in cap.inputs.items() if decl.required and name not in inputs}
    if missing:
        for planned in steps:
            named = (n for text in planned.step.arg_texts for n in references(text))
            planned.waiting = tuple(dict.fromkeys(n for n in named if n in missing))
    if refuse:
        if inputs:
            _refuse_inputs_as_options(cap, steps, ws)
        _refuse_bad_arguments(cap, steps)
    return Plan(cap, dict(inputs), steps)


def provider_warnings(plan: Plan, redactor: Redactor) -> list[Problem]:
    """What the providers warn of the plan's calls (``Inspection.warnings``, a setting they
    ignore): warnings at the first step that says each, as the run's other warnings are
    (on stderr before the first step, in the plan's ``warnings``)."""
    found: list[Problem] = []
    seen: set[str] = set()
    for planned in plan.steps:
        for said in planned.inspection.warnings:
            if said in seen:  # the run's setting, said by every step that reads it
                continue
            seen.add(said)
            step = planned.step
            found.append(
                Problem(
                    plan.capability.path,
                    step.line or 1,
                    step.column or 1,
                    "warning",
                    "provider-warning",
                    redactor.text(f"step {planned.index} ({planned.label}): {said}"),
                )
            )
    return found


def _refuse_bad_arguments(cap: Capability, steps: list[PlannedStep]) -> None:
    """What providers found their calls cannot take (``Inspection.problems``): exit 2."""
    problems: list[Problem] = []
    first: BindingProblem | None = None
    for planned in steps:
        step, n = planned.step, len(planned.operation.words) if planned.operation else 0
        for bp in planned.inspection.problems:
            first = first or bp
            at = n + bp.arg_index if bp.arg_index >= 0 else -1  # -1: the whole call
            arg = step.args[at] if 0 <= at < len(step.args) else None
            line, column = (arg.line, arg.column) if arg and arg.line else (step.line, step.column)
            if line:  # a typed command has no position
                problems.append(
                    Problem(
                        cap.path,
                        line,
                        column,
                        "error",
                        bp.code,
                        f"step {step.index} ({planned.label}): {bp.message}",
                        bp.hint,
                    )
                )
    if first is None:
        return
    where = [p.index for p in steps if p.inspection.problems]
    plural = "s" if len(where) > 1 else ""
    raise UsageError(
        # one line, as each problem's: a value it quotes may hold a file's lines
        f"{printable(first.message)} (step{plural} {', '.join(map(str, where))}); nothing ran",
        hint=first.hint,
        problems=problems,
        code=first.code,
    )


def pieces(text: str, inputs: Mapping[str, str]) -> tuple[Piece, ...]:
    """``text`` after substitution, split into authored text and input values (one pass,
    as :func:`runtime.substitute.substitute` does it)."""
    if "${" not in text:
        return (Piece(text),)
    out: list[Piece] = []
    start = 0
    for match in REFERENCE.finditer(text):
        if match.start() > start:
            out.append(Piece(text[start : match.start()]))
        name = match.group(1)
        value = inputs.get(name)
        out.append(Piece(match.group(0), name, True) if value is None else Piece(value, name))
        start = match.end()
    if start < len(text):
        out.append(Piece(text[start:]))
    return tuple(out)


def _refuse_inputs_as_options(cap: Capability, steps: list[PlannedStep], ws: Workspace) -> None:
    """Every input that would become an option, once per step, at its file:line:column
    (read with the program's profile: the engine's and its owner's)."""
    problems: list[Problem] = []
    names: dict[str, None] = {}
    where: dict[int, None] = {}
    for planned in steps:
        runs_program = planned.operation is not None and planned.operation.program is not None
        if planned.binary is None and not runs_program:
            continue
        step = planned.step
        seen: set[str] = set()
        program = planned.program
        assert program is not None
        owner = (
            ws.registry.get(planned.provider)
            if planned.provider is not None
            else ws.registry.program_owner(program)
        )
        profile = owned_profile(program, owner)
        for misuse in input_misuses(step.arg_texts, planned.args, profile):
            if misuse.inputs[0] in seen:
                continue
            seen.add(misuse.inputs[0])
            names.update(dict.fromkeys(misuse.inputs))
            where[step.index] = None
            arg = step.args[misuse.arg_index]
            problems.append(
                Problem(
                    cap.path,
                    arg.line or step.line,
                    arg.column or step.column,
                    "error",
                    "input-as-option",
                    f"step {step.index} ({planned.label}): {misuse.message}",
                    misuse.hint,
                )
            )
    if not problems:
        return
    plural = "s" if len(where) > 1 else ""
    raise UsageError(
        f"input {', '.join(repr(n) for n in names)} would become an option of a program "
        f"(step{plural} {', '.join(map(str, where))}); nothing ran",
        hint=problems[0].hint,
        problems=problems,
        code="input-as-option",
    )


def plan_step(
    step: Step,
    inputs: dict[str, str],
    ws: Workspace,
    run: RunContext,
    bound: tuple[Operation, Binding] | None = None,
) -> PlannedStep:
    texts = step.arg_texts
    resolved = [substitute(a, inputs) for a in texts]
    policy = ws.policy
    if step.binary is not None:
        found_path = ws.which(step.binary)
        owner = ws.registry.program_owner(step.binary)
        # what the program's call does, action by action (gh api graphql's mutations)
        actions = program_actions(step.binary, resolved, owner)
        credential = policy.credential_for_binary(step.binary)
        return PlannedStep(
            step.index,
            step,
            resolved,
            UNDECIDED,
            binary=step.binary,
            binary_path=found_path,  # shown even when refused: plan names what would run
            transport="process",
            effect="destroy" if any(a.effect == "destroy" for a in actions) else "write",
            credential=credential,
            inspection=Inspection(notes=[a.note() for a in actions]),
        )

    def unplannable(reason: str, provider: str | None) -> PlannedStep:
        # validated earlier; kept total for safety
        return PlannedStep(
            step.index, step, resolved, Decision(False, "registry", reason), provider=provider
        )

    provider = ws.registry.get(step.provider or "")
    if provider is None:
        return unplannable("provider not registered", step.provider)
    if bound is not None:
        operation, binding = bound
    else:
        found = match_operation(provider.operations, texts)
        if found is None:
            return unplannable("no such operation", provider.name)
        operation = found
        binding, _ = bind(operation, texts[len(operation.words) :])
    n = len(operation.words)
    call = resolve_call(binding, resolved[n:], [pieces(a, inputs) for a in texts[n:]])
    inspection = provider.inspect(operation, call, run)
    # what the call does, action by action (a GraphQL document's mutations), after the
    # provider's own notes
    actions = operation.known_actions(call)
    if actions:
        notes = [*inspection.notes, *(a.note() for a in actions)]
        inspection = replace(inspection, notes=notes)
    # values that are not what the operation declares (a type, a range, a choice), now
    # that inputs are substituted: refused with the provider's own problems (exit 2)
    checked = argument_problems(operation, call)
    if checked:
        inspection = replace(inspection, problems=[*checked, *inspection.problems])
    return PlannedStep(
        step.index,
        step,
        resolved,
        UNDECIDED,
        provider=provider.name,
        operation=operation,
        call=call,
        binary_path=ws.which(operation.program) if operation.program else None,
        transport=operation.transport,
        effect=operation.effect_of(call),
        credential=operation.credential,
        inspection=inspection,
    )
