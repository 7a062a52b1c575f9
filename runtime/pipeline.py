"""The program's table of contents: the stations every command walks, in order.

    load -> validate -> resolve -> policy -> preflight -> execute -> record

Each station takes the run so far and carries it one station further (nox's
workflow is the model). A command is a prefix of the walk:

    capability validate, show, completion    load, validate
    capability plan, policy check             ... resolve, policy (and an offline preflight)
    capability preflight                      ... preflight
    capability execute, runtime PROVIDER ...  ... execute, record

``runtime mcp serve`` walks the same prefixes for an assistant's tool calls
(runtime.cli.mcp_calls): a run knows who asked (``origin``), that its steps are
the assistant's own (``agent_authored``), what to ask before its first step
(``confirm``) and what stops it from another thread (``cancel``).

How far a problem stops the walk depends on the run's :class:`Mode`: while
inspecting (validate) problems are collected; while planning, an invalid
capability stops the walk and refusals are shown; when executing, a refusal
stops the walk before anything runs and is recorded in the audit log (one
``run.refused`` record, whichever station refused). The CLI parses arguments,
calls :func:`walk` and renders the run it gets back; it never calls a station
itself. With ``--log-level debug`` each station's entry and end is an event on
stderr (:mod:`runtime.log`), redacted with the run's secrets.
"""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.document.model import Arg, Capability, Step
from runtime.errors import (
    Declined,
    InvalidCapability,
    PolicyRefusal,
    RuntimeFailure,
    UsageError,
)
from runtime.log import DEBUG, WARNING, get_logger, use_redactor
from runtime.problems import Problem
from runtime.redact import SECRET_NAME, Redactor

if TYPE_CHECKING:
    from runtime.document.catalog import Target
    from runtime.execute.audit import Origin
    from runtime.execute.cancel import Cancellation
    from runtime.execute.engine import Reporter, RunResult, StepResult
    from runtime.execute.services import RunServices
    from runtime.plan.build import Plan, PlannedStep
    from runtime.plan.validate import Resolved
    from runtime.plan.workspace import Workspace
    from runtime.preflight.report import Report


_log = get_logger("runtime.pipeline")


class Mode(enum.Enum):
    INSPECT = "inspect"  # collect every problem; stop nowhere (validate, show)
    PLAN = "plan"  # an invalid capability stops; refusals are shown (plan, policy check)
    PREFLIGHT = "preflight"  # as PLAN; missing inputs are unmet requirements, not errors
    EXECUTE = "execute"  # any refusal stops before anything runs, and is recorded


@dataclass(frozen=True)
class Command:
    """A one-step run typed on the command line: ``runtime PROVIDER ARGS...`` or
    ``runtime command run BINARY ARGS...``; its args are literal (no inputs)."""

    provider: str | None
    binary: str | None
    args: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"runtime {self.provider or 'command run ' + (self.binary or '')}"


@dataclass
class Run:
    """What flows through the stations: what was asked, and what each station found."""

    ws: Workspace
    mode: Mode
    name: str | None = None  # the capability as the user named it (a path or a name)
    command: Command | None = None  # or the one step the user typed
    input_pairs: list[str] = field(default_factory=list)  # --input as given: key=value, key=@file
    inputs: dict[str, str] = field(default_factory=dict)
    # options of the stations that use them
    # preflight: Unknown readiness blocks too (advisory ones aside); validate: what the
    # policy would refuse is an error, not a warning
    strict: bool = False
    live: bool = False  # preflight: bounded read-only network checks
    runner_capabilities: tuple[str, ...] | None = None
    timeout: float | None = None  # execute: per-step limit (default: the policy's)
    reporter: Reporter | None = None  # execute: how the CLI follows the steps
    run_id: str = ""
    # load: the capability's text as given (an MCP client's own), not read from the target
    text: bytes | None = None
    # who asked (run.start and run.refused say it): None, the command line; else an MCP
    # client's name and version
    origin: Origin | None = None
    # policy: the steps are an agent's own (an MCP client's operation or capability
    # text), so each is limited to the effects the policy's agents section offers
    agent_authored: bool = False
    # execute: asked before the first step, once the plan is decided (a confirmation
    # the policy asks for); it refuses the run by raising
    confirm: Callable[[Plan], None] | None = None
    # execute: set from another thread, it stops the running step and the run
    cancel: Cancellation | None = None
    # what the stations found
    target: Target | None = None
    capability: Capability | None = None
    problems: list[Problem] = field(default_factory=list)
    resolved: Resolved = field(default_factory=dict)
    redactor: Redactor = field(default_factory=Redactor)
    services: RunServices | None = None
    plan: Plan | None = None
    report: Report | None = None
    result: RunResult | None = None

    @property
    def ok(self) -> bool:
        return not any(p.is_error for p in self.problems)

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if not p.is_error]

    @property
    def has_runtime_block(self) -> bool:
        """Whether the file holds a runtime block at all (validate skips plain Markdown)."""
        cap = self.capability
        return (cap is not None and cap.document.runtime_block is not None) or any(
            p.code == "multiple-runtime-blocks" for p in self.problems
        )


# -- the stations ------------------------------------------------------------------------


def load(run: Run) -> None:
    """Read what was asked: the inputs as given (``key=@file`` reads the file), and the
    capability (a path, or a name in the capability sources), its Markdown and its
    runtime block parsed against the closed grammar; or the step the user typed."""
    from runtime.document.catalog import resolve_one
    from runtime.document.grammar import check_capability
    from runtime.document.loader import load_document
    from runtime.plan.substitute import parse_input_pairs

    ws = run.ws
    if run.input_pairs:
        run.inputs = parse_input_pairs(run.input_pairs, ws.cwd)
    if run.command is not None:
        run.capability, run.resolved = _typed_capability(ws, run.command)
        return
    if run.target is None:
        assert run.name is not None
        run.target = resolve_one(run.name, ws.sources, ws.cwd)
    document = load_document(run.target.path, run.target.display, run.text)
    run.capability, problems = check_capability(document)
    run.problems.extend(problems)


def validate(run: Run) -> None:
    """Check each step against what is registered: providers, operations and their form,
    allowed binaries, inputs referenced. While inspecting, problems are only collected."""
    from runtime.plan.substitute import unsupplied_problems
    from runtime.plan.validate import check_steps, policy_problems
    from runtime.problems import sorted_problems

    cap = _capability(run)
    if run.target is None:  # a typed command was checked as it was built
        return
    ws = run.ws
    found = check_steps(cap, ws.registry, ws.policy, run.resolved)
    if run.mode is Mode.INSPECT:
        # what the policy would refuse, said before plan time (plan shows it per step)
        found += policy_problems(cap, ws.registry, ws.policy, run.resolved, strict=run.strict)
        # where an optional input left out stays literal: to know, not to fix
        found += unsupplied_problems(cap, {}, "info")
    run.problems = sorted_problems([*run.problems, *found])
    if run.mode is Mode.INSPECT or run.ok:
        return
    errors = [p for p in run.problems if p.is_error]
    plural = "s" if len(errors) != 1 else ""
    raise InvalidCapability(
        f"{run.target.display} is not a valid capability ({len(errors)} error{plural}); "
        "nothing ran",
        hint=f"run `runtime capability validate {run.name}` for details"
        if run.text is None
        else "each problem is listed at its line and column of the text given",
        problems=errors,
    )


def resolve(run: Run) -> None:
    """Check the inputs, substitute them and give each step its bound call (its operation
    or binary, its effect, what its provider sees of it): the plan. Nothing outside the
    process changes."""
    from runtime.execute.services import RunServices
    from runtime.plan.build import build_plan, provider_warnings
    from runtime.plan.substitute import (
        check_inputs,
        check_sizes,
        refuse_unsupplied,
        unsupplied_problems,
    )

    cap = _capability(run)
    inspecting = run.mode is Mode.INSPECT
    # while inspecting, what the steps infer without inputs (show's requirements): only
    # if they validate
    if inspecting and not run.ok:
        return
    for key, value in run.inputs.items():  # before a check may quote one
        if SECRET_NAME.search(key):
            run.redactor.add(value)
    if run.mode is not Mode.INSPECT:
        check_inputs(cap, run.inputs, require=run.mode is not Mode.PREFLIGHT)
        check_sizes(cap, run.inputs)
    if run.mode in (Mode.PLAN, Mode.EXECUTE):
        # an optional input left out stays literally ${name} (the grammar has no default):
        # said before anything runs, and refused with --strict
        if run.strict:
            refuse_unsupplied(cap, run.inputs)
        run.problems += unsupplied_problems(cap, run.inputs, "warning")
    run.services = RunServices(run.ws, run.redactor)
    run.plan = build_plan(
        cap, run.inputs, run.ws, run.services, run.resolved, refuse=not inspecting
    )
    run.problems += provider_warnings(run.plan, run.redactor)


def policy(run: Run) -> None:
    """Decide each step against the policy, on its bound call; before executing, one
    refusal naming every refused step (3), a missing binary or a promise this machine
    cannot keep for a program (5). Planning shows them instead."""
    from runtime.plan.gate import decide, enforce

    if run.plan is not None and run.services is not None:
        decide(run.plan, run.ws, run.services)
        if run.agent_authored:
            from runtime.plan.agents import limit_own_steps

            limit_own_steps(run.plan.steps, run.ws.policy.agents)
    if run.plan is not None and _log.enabled(WARNING):
        for s in run.plan.refused:
            _log.warning(
                "step.refused",
                step=s.index,
                target=s.label,
                rule=s.decision.rule,
                reason=s.decision.reason,
            )
    if run.mode is Mode.EXECUTE and run.plan is not None and run.services is not None:
        run.problems += enforce(run.plan, run.ws.policy, run.services, run.redactor)
    if run.mode is not Mode.INSPECT and run.plan is not None and run.services is not None:
        from runtime.execute.outside import warnings

        # what a confined step's args name that it will not find or cannot write: said
        # before anything runs (and, executing, kept in the step's notes for the document)
        run.problems += warnings(
            run.plan,
            run.services,
            run.redactor,
            probe=run.mode is not Mode.PLAN,
            notes=run.mode is Mode.EXECUTE,
        )


def preflight(run: Run) -> None:
    """Check what the capability needs from this machine: declared and inferred
    requirements, resolution and readiness. Offline unless asked; before executing, a
    required requirement that is not ready refuses the run."""
    from runtime.preflight.checks import run_preflight
    from runtime.preflight.gate import require_ready

    if run.plan is None or run.services is None:
        return
    cap = _capability(run)
    if not cap.document.text:
        return  # a typed command declares no requirements; its step reports what it lacks
    run.report = run_preflight(
        run.ws,
        run.services,
        run.plan,
        run.inputs,
        live=run.live,
        strict=run.strict,
        probe=run.mode is not Mode.PLAN,  # plan starts no process
        runner_capabilities=run.runner_capabilities,
    )
    if run.mode is Mode.EXECUTE:
        require_ready(run.report)


def execute(run: Run) -> None:
    """Run the steps in order, each announced in the audit log before it runs and recorded
    after, stopping at the first failure."""
    from runtime.execute.cancel import cancellable
    from runtime.execute.run import run_plan

    assert run.plan is not None and run.services is not None
    if run.confirm is not None:
        run.confirm(run.plan)
    reporter: Reporter = run.reporter if run.reporter is not None else _Silent()
    reporter.run_started(run.warnings)
    timeout = run.timeout if run.timeout is not None else run.ws.policy.timeout()
    with cancellable(run.cancel):
        run.result = run_plan(
            run.plan,
            run.inputs,
            run.services,
            run.redactor,
            reporter,
            run.run_id,
            timeout,
            origin=run.origin,
        )


def record(run: Run) -> None:
    """The run's end is recorded (the engine wrote run.end); what the run kept is closed."""
    if run.services is not None:
        run.services.close()


STATIONS: tuple[Callable[[Run], None], ...] = (
    load,
    validate,
    resolve,
    policy,
    preflight,
    execute,
    record,
)


def walk(run: Run, until: Callable[[Run], None]) -> Run:
    """Carry ``run`` through the stations up to and including ``until``.

    When executing, a refusal on the way, at whichever station, is recorded in the
    audit log (the refusal is the answer; nothing ran). Whatever the run opened is
    closed.
    """
    from runtime.execute.audit import new_run_id

    if run.mode is Mode.EXECUTE and not run.run_id:
        run.run_id = new_run_id(run.ws.clock)
    use_redactor(run.redactor)  # events are redacted with the run's secrets
    # known before the first station: a refusal at any of them may quote an input that
    # holds a token the environment gives (or its base64), and leaves through this run
    run.redactor.add_environment(run.ws.environ)
    station = STATIONS[0]
    try:
        for station in STATIONS:
            traced = _log.enabled(DEBUG)
            if traced:
                _log.debug(
                    "station.entered",
                    station=station.__name__,
                    capability=_shown(run),
                    mode=run.mode.value,
                )
                started = time.perf_counter()
            station(run)
            if traced:
                _log.debug(
                    "station.finished",
                    station=station.__name__,
                    capability=_shown(run),
                    ms=round((time.perf_counter() - started) * 1000, 3),
                    **_found(run, station),
                )
            if station is until:
                break
    except RuntimeFailure as failure:
        failure.redact(run.redactor)  # it may quote a secret-named input's value
        _log.warning(
            "station.failed",
            station=station.__name__,
            capability=_shown(run),
            code=failure.code,
            exit_code=int(failure.exit_code),
            message=failure.message,
        )
        if run.mode is Mode.EXECUTE:
            _record_refusal(run, failure)
        raise
    finally:
        if run.services is not None:
            run.services.close()
    return run


def _record_refusal(run: Run, failure: RuntimeFailure) -> None:
    """One ``run.refused`` record: what was refused, why, and the rules or problems that
    decided it."""
    from runtime.execute.run import record_refusal

    cap = run.capability
    rules = []
    if isinstance(failure, Declined):
        rules = failure.rules
    elif isinstance(failure, PolicyRefusal) and run.plan is not None:
        rules = [s.decision.rule for s in run.plan.refused]
    record_refusal(
        run.ws,
        run.redactor,
        run.run_id,
        capability=cap.path if cap is not None else run.name,
        sha256=cap.sha256 if cap is not None and cap.sha256 else None,
        failure=failure,
        rules=rules,
        origin=run.origin,
    )


def capability_run(ws: Workspace, name: str, mode: Mode, **options: Any) -> Run:
    """A run of the capability ``name`` (a path, or a name in the capability sources)."""
    return Run(ws, mode, name=name, **options)


def command_run(
    ws: Workspace, provider: str | None, binary: str | None, args: list[str], **options: Any
) -> Run:
    """A one-step run of what the user typed: `runtime PROVIDER ...`, `runtime command run`;
    the load station checks and builds its step, the policy decides it as any other."""
    command = Command(provider, binary, tuple(args))
    return Run(ws, Mode.EXECUTE, name=command.label, command=command, **options)


def _typed_capability(ws: Workspace, command: Command) -> tuple[Capability, Resolved]:
    """The one-step capability of a typed command, and its call bound once as it is built:
    a provider call is matched to its operation and bound (a usage error names what is
    wrong); later stations use that binding, as they use validate's for a capability."""
    from runtime.document.loader import Document
    from runtime.plan.binding import (
        authored_call,
        bind,
        did_you_mean,
        match_operation,
        similar_operations,
    )

    provider, args = command.provider, list(command.args)
    resolved: Resolved = {}
    if provider is not None:
        found = ws.registry.get(provider)
        assert found is not None
        op = match_operation(found.operations, args)
        if op is None:
            raise UsageError(
                f"'{' '.join(args[:2])}' is not an operation of '{provider}'",
                hint=did_you_mean(similar_operations(found.operations, args))
                + f"run `runtime {provider} --help` for the operations",
            )
        rest = args[len(op.words) :]
        binding, problems = bind(op, rest)
        # then what the provider tells from the args as typed, as validate asks of a
        # capability's (an OWNER/REPO that is not one), before any credential is looked for
        problems = problems or found.check(op, authored_call(binding, rest))
        if problems:  # with its own code, as the same problem in a capability has
            first = problems[0]
            raise UsageError(first.message, hint=first.hint, code=first.code)
        resolved[1] = (op, binding)
    step = Step(1, provider, _named(ws, command.binary), tuple(Arg(a, 0, 0) for a in args), 0, 0)
    label = command.label
    return Capability(label, "", Document(label, "", ""), steps=[step]), resolved


def _named(ws: Workspace, binary: str | None) -> str | None:
    """A binary typed as a path (`runtime command run /usr/bin/git`) is the allowed binary
    of its name when it is the very file PATH finds for that name; then it is run, decided
    and hardened as that name. Any other path stays a path, which the policy refuses."""
    if binary is None or "/" not in binary:
        return binary
    name = os.path.basename(binary)
    found = ws.which(name) if ws.policy.binary_listed(name) else None
    try:
        same = found is not None and os.path.samefile(found, binary)
    except OSError:
        same = False
    return name if same else binary


def _shown(run: Run) -> str | None:
    """The capability, for an event: its path, or what the user typed for a direct call."""
    if run.target is not None:
        return str(run.target.path)
    if run.capability is not None:
        return run.capability.path
    return run.name


def _found(run: Run, station: Callable[[Run], None]) -> dict[str, Any]:
    """What a station found, for its ``station.finished`` event."""
    found: dict[str, Any] = {}
    if station is resolve and run.plan is not None:
        found["steps"] = len(run.plan.steps)
    elif station is policy and run.plan is not None:
        found["refused"] = len(run.plan.refused)
    elif station is execute and run.result is not None:
        found["status"] = run.result.status
    if station in (load, validate):
        found["problems"] = len(run.problems)
    return found


def _capability(run: Run) -> Capability:
    assert run.capability is not None, "load comes first"
    return run.capability


class _Silent:
    def run_started(self, warnings: list[Problem]) -> None:
        pass

    def step_started(self, planned: PlannedStep, total: int) -> None:
        pass

    def step_output(self, planned: PlannedStep, stream: str, text: str) -> None:
        pass

    def step_finished(self, result: StepResult, total: int) -> None:
        pass
