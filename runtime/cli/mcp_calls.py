"""One MCP tool call, walked through the pipeline as the command line walks it.

:func:`call_tool` runs in a worker thread of the server (:mod:`runtime.cli.mcp_server`)
and knows nothing of the SDK: it gets the tool's name and arguments and a
:class:`Caller` (who asks, how to ask the user to confirm, where progress goes,
the call's :class:`~runtime.execute.cancel.Cancellation`) and gives back an
:class:`Answer`, the very document ``--output json`` prints for the same run
and whether it is an error.

Each call is a run of its own: a new workspace (the policy, config and catalog
read again; the provider registry is the process's), a new ``Run`` with its own
redactor, walked to the same station as the command that does the same thing:

    a catalog capability, ``execute``   capability execute     (record)
    ``operation``                       runtime PROVIDER ...   (record)
    ``plan``                            capability plan        (preflight, offline)
    ``validate``                        capability validate    (validate)

A refusal at any station is what the command line refuses, with the same
message, hint, problems and exit code, recorded in the audit log as
``run.refused`` (origin ``mcp``, the client's name and version). Where the
policy's ``agents.confirm`` names a step's effect, the user is asked before the
first step (:func:`confirmation`); a declined confirmation refuses the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from runtime.errors import Declined, ExitCode, Failure, InternalError, RuntimeFailure, UsageError

if TYPE_CHECKING:
    from runtime.cli.validation import Validated
    from runtime.execute.cancel import Cancellation
    from runtime.execute.engine import StepResult
    from runtime.pipeline import Run
    from runtime.plan.build import Plan, PlannedStep
    from runtime.plan.workspace import Workspace
    from runtime.problems import Problem

# The name a capability the assistant wrote goes by: where its problems are
TEXT_LABEL = "(text)"

Answered = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True)
class Question:
    """What the user is asked to confirm: the steps, and a digest of them that an
    answer must match (the plan of a later round may differ: then it is asked again)."""

    message: str
    digest: str


class NeedsInput(Exception):
    """The call waits for the user's answer to ``question`` (a 2026-07-28 client gets
    ``input_required``, and calls again with the answer): nothing ran, and nothing is
    recorded (not a failure: the walk records none for it)."""

    def __init__(self, question: Question) -> None:
        super().__init__(question.message)
        self.question = question


@dataclass
class Caller:
    """Who asks, and what the server does for the call."""

    client: dict[str, str] | None
    # asks the user (elicitation), or raises NeedsInput; a str: why it cannot be asked
    ask: Callable[[Question], Answered | str]
    progress: Callable[[float, float, str], None]
    cancel: Cancellation


@dataclass
class Answer:
    document: dict[str, Any]
    is_error: bool
    summary: str  # a line or a few for the assistant, beside the document


@dataclass
class Session:
    """What the server keeps between calls, on purpose: the environment and working
    folder it was started with; everything a run reads from them is read again."""

    environ: Mapping[str, str]
    cwd: Path
    warn: Callable[[Problem], None] | None = None

    def workspace(self) -> Workspace:
        from runtime.cli.session import ensure_home
        from runtime.plan.workspace import Workspace

        ws = Workspace(environ=dict(self.environ), cwd=self.cwd, warn=self.warn)
        ensure_home(ws)
        return ws


def call_tool(session: Session, name: str, arguments: Mapping[str, Any], caller: Caller) -> Answer:
    """Answer one tool call; never raises but :class:`NeedsInput` (and a signal)."""
    from runtime.redact import Redactor

    redact = Redactor()
    redact.add_environment(session.environ)
    try:
        return _call(session, name, arguments, caller)
    except NeedsInput:
        raise
    except RuntimeFailure as failure:
        return _failed(failure, redact)
    except Exception as exc:
        bug = InternalError(
            f"internal error: {type(exc).__name__}",
            hint="this is a bug in runtime; rerun the server with RUNTIME_DEBUG=1 to see "
            "where, and report it",
        )
        if session.environ.get("RUNTIME_DEBUG") == "1":
            import sys
            import traceback

            sys.stderr.write(redact.text(traceback.format_exc()))
        return _failed(bug, redact)


def _failed(failure: Failure, redact: Any) -> Answer:
    from runtime.cli.documents import error_document

    doc = redact.data(error_document(failure))
    return Answer(doc, True, redact.text(failure_summary(failure)))


def failure_summary(failure: Failure) -> str:
    """The failure as the command line says it: each problem at its position with its
    hint, the message, the hint, and what the exit code means."""
    lines = []
    for p in failure.problems:
        lines.append(f"{p.file}:{p.line}:{p.column}: {p.severity}: {p.message}")
        if p.hint:
            lines.append(f"  hint: {p.hint}")
    told = {p.message for p in failure.problems} | {
        f"{p.file}:{p.line}:{p.column}: {p.message}" for p in failure.problems
    }
    if failure.message not in told:
        lines.append(f"error: {failure.message}")
    if failure.hint:
        lines.append(f"  hint: {failure.hint}")
    lines.append(f"exit {int(failure.exit_code)}: {exit_meaning(int(failure.exit_code))}")
    return "\n".join(lines)


def exit_meaning(code: int) -> str:
    """What an exit code means, as the README's table says."""
    found = next((c for c in ExitCode if c == code), None)
    if found is not None:
        return found.meaning
    return ExitCode.TERMINATED.meaning if code > 128 else "failure"


def _call(session: Session, name: str, arguments: Mapping[str, Any], caller: Caller) -> Answer:
    from runtime.cli.mcp_tools import offered_entries

    ws = session.workspace()
    if name in ("validate", "plan", "execute", "operation"):
        if name == "execute" and not ws.policy.agents.execute_own_text[0]:
            _unknown(name)
        return _built_in(ws, name, arguments, caller)
    entries, _ = offered_entries(ws)
    entry = entries.get(name)
    if entry is None:
        _unknown(name)
    from runtime.document.catalog import Target
    from runtime.pipeline import Mode, Run

    target = Target(entry.path, _shown(entry.path, ws.cwd), True, entry.name)
    run = Run(ws, Mode.EXECUTE, name=entry.name, target=target, inputs=_inputs(arguments))
    return _execute(run, caller)


def _unknown(name: str) -> NoReturn:
    raise UsageError(
        f"no tool named '{name}'",
        hint="list the tools (tools/list): a capability the policy's agents section does "
        "not offer is not one, nor a capability outside the catalog",
    )


def _shown(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def _inputs(arguments: Mapping[str, Any], key: str | None = None) -> dict[str, str]:
    """The inputs as given: strings, by name (``key``: under that argument)."""
    given = arguments.get(key, {}) if key is not None else arguments
    if not isinstance(given, Mapping):
        raise UsageError(
            f"'{key}' must be an object of inputs, by name", hint='e.g. {"path": "notes.md"}'
        )
    bad = sorted(k for k, v in given.items() if not isinstance(v, str))
    if bad:
        raise UsageError(
            f"input{'s' if len(bad) > 1 else ''} {', '.join(repr(b) for b in bad)} must be "
            "a string",
            hint="every input of a capability is text: give it as a JSON string",
        )
    return {str(k): v for k, v in given.items()}


def _text(arguments: Mapping[str, Any]) -> bytes:
    text = arguments.get("text")
    if not isinstance(text, str):
        raise UsageError(
            "'text' must be the capability's Markdown, as a string",
            hint="the grammar is the resource runtime://specs/capability-spec.md",
        )
    return text.encode("utf-8", "surrogatepass")


def _built_in(ws: Workspace, name: str, arguments: Mapping[str, Any], caller: Caller) -> Answer:
    from runtime.document.catalog import Target
    from runtime.pipeline import Mode, Run, command_run, preflight, validate, walk

    if name == "operation":
        provider, args = arguments.get("provider"), arguments.get("args")
        if not isinstance(provider, str) or ws.registry.get(provider) is None:
            raise UsageError(
                f"no provider named {provider!r}"
                if isinstance(provider, str)
                else "'provider' must name a provider",
                hint=f"providers: {', '.join(ws.registry.names())}",
            )
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise UsageError(
                "'args' must be a list of strings: the operation's words, then its arguments",
                hint='e.g. {"provider": "files", "args": ["read", "notes.md"]}',
            )
        if not args:
            raise UsageError(
                f"'args' names no operation of '{provider}'",
                hint=f"the operations: the resource runtime://specs/{provider}.md",
            )
        run = command_run(ws, provider, None, list(args), agent_authored=True)
        return _execute(run, caller)
    text = _text(arguments)
    target = Target(ws.cwd / TEXT_LABEL, TEXT_LABEL, True)
    if name == "validate":
        from runtime.cli.validation import Validated, validated_document

        found = Validated()
        found.results.append(
            walk(Run(ws, Mode.INSPECT, name=TEXT_LABEL, target=target, text=text), until=validate)
        )
        return Answer(validated_document(found), not found.ok, _validate_summary(found))
    inputs = _inputs(arguments, "inputs")
    if name == "plan":
        from runtime.cli.documents import plan_document

        planned = walk(
            Run(
                ws,
                Mode.PLAN,
                name=TEXT_LABEL,
                target=target,
                text=text,
                inputs=inputs,
                agent_authored=True,
            ),
            until=preflight,
        )
        doc = plan_document(planned, "plan")
        return Answer(doc, not doc["ok"], _plan_summary(planned, doc))
    run = Run(
        ws,
        Mode.EXECUTE,
        name=TEXT_LABEL,
        target=target,
        text=text,
        inputs=inputs,
        agent_authored=True,
    )
    return _execute(run, caller)


def _execute(run: Run, caller: Caller) -> Answer:
    """Walk ``run`` to the end, as ``capability execute`` and direct calls do."""
    from runtime.cli.documents import run_document
    from runtime.execute.audit import Origin
    from runtime.pipeline import record, walk

    run.origin = Origin("mcp", caller.client)
    run.cancel = caller.cancel
    run.reporter = Progress(caller, run)
    run.confirm = lambda plan: confirmation(run, plan, caller)
    walk(run, until=record)
    result = run.result
    assert result is not None
    doc = run_document(run, result)
    failed = result.failed_step
    summary = f"{result.status}: {doc['summary']['ok']}/{doc['summary']['total']} steps succeeded"
    if failed is not None:
        summary += f"; step {failed.planned.index} ({failed.planned.label}) {failed.status}"
        if failed.error:
            summary += f"\nerror: {run.redactor.text(failed.error)}"
        if failed.hint:
            summary += f"\n  hint: {run.redactor.text(failed.hint)}"
    summary += f" (run {result.run_id})"
    if result.exit_code:
        summary += f"\nexit {result.exit_code}: {exit_meaning(result.exit_code)}"
    return Answer(doc, result.exit_code != 0, summary)


def confirmation(run: Run, plan: Plan, caller: Caller) -> None:
    """Before the first step: where the policy's ``agents.confirm`` names a step's effect,
    the user confirms the run through the client, or it is refused (Declined, recorded)."""
    from runtime.cli.reporters import step_label

    agents = run.ws.policy.agents
    asked = [s for s in plan.steps if agents.confirms(s.effect)]
    if not asked:
        return
    effects, source = agents.confirm
    rule = f"agents.confirm: {', '.join(effects)} ({source})"
    total = len(plan.steps)
    lines = [f"{step_label(s, total, run.redactor)} ({s.effect})" for s in asked]
    cap = plan.capability
    message = (
        f"runtime asks you to confirm {cap.path}: the policy asks for it before "
        + ("this step" if len(asked) == 1 else "these steps")
        + " (nothing runs until you do):\n"
        + "\n".join(lines)
    )
    # what was confirmed, exactly (the args as resolved, secrets and all: the digest
    # travels only inside the sealed request state)
    confirmed = [cap.sha256, *(f"{s.index} {s.label} {s.effect} {s.args!r}" for s in asked)]
    digest = hashlib.sha256("\0".join(confirmed).encode("utf-8", "surrogatepass")).hexdigest()
    answer = caller.ask(Question(message, digest))
    if answer == "accept":
        return
    named = ", ".join(f"step {s.index} ({s.label})" for s in asked)
    if answer == "decline":
        why = f"the user declined to confirm {named}"
    elif answer == "cancel":
        why = f"the user dismissed the confirmation of {named}"
    else:
        why = f"the confirmation of {named} could not be asked: {answer}"
    raise Declined(
        f"{why}, which the policy asks for ({rule}); nothing ran",
        hint="confirm it when asked; or a user policy's agents.confirm can leave out "
        + ", ".join(sorted({s.effect for s in asked})),
        rules=[rule],
    )


class Progress:
    """The engine's reporter for a tool call: a progress notification as each step
    starts and ends (the step's output is in the result), none once it is cancelled."""

    def __init__(self, caller: Caller, run: Run) -> None:
        self.caller = caller
        self.run = run

    def run_started(self, warnings: list[Problem]) -> None:
        pass

    def step_started(self, planned: PlannedStep, total: int) -> None:
        from runtime.cli.reporters import step_label

        if not self.caller.cancel.cancelled:
            label = step_label(planned, total, self.run.redactor)
            self.caller.progress(planned.index - 1, total, label)

    def step_output(self, planned: PlannedStep, stream: str, text: str) -> None:
        pass

    def step_finished(self, result: StepResult, total: int) -> None:
        if not self.caller.cancel.cancelled:
            planned = result.planned
            message = f"[{planned.index}/{total}] {planned.label} {result.status}"
            self.caller.progress(planned.index, total, message)


def _validate_summary(found: Validated) -> str:
    lines = []
    for r in found.results:
        for p in r.problems:
            lines.append(
                r.redactor.text(f"{p.file}:{p.line}:{p.column}: {p.severity}: {p.message}")
            )
            if p.hint:
                lines.append(r.redactor.text(f"  hint: {p.hint}"))
    verdict = "valid" if found.ok else f"not valid ({found.errors} errors)"
    lines.append(f"{verdict}; {found.warnings} warnings")
    return "\n".join(lines)


def _plan_summary(planned: Run, doc: dict[str, Any]) -> str:
    from runtime.cli.reporters import step_label

    assert planned.plan is not None
    total = len(planned.plan.steps)
    lines = []
    for s in planned.plan.steps:
        verdict = "allowed" if s.decision.allowed else f"refused ({s.decision.rule})"
        lines.append(f"{step_label(s, total, planned.redactor)}: {s.effect}, {verdict}")
        if not s.decision.allowed and s.decision.reason:
            lines.append(f"  {planned.redactor.text(s.decision.reason)}")
    code = doc["exit_code"]
    lines.append("nothing was run" + (f"; exit {code}: {exit_meaning(code)}" if code else ""))
    return "\n".join(lines)
