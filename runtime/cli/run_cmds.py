"""capability execute / plan / preflight, `runtime command run`, direct provider calls.

The commands, and how their plan, preflight report and run's end are
rendered; what a run reports while its steps run is :mod:`runtime.cli.reporters`.
"""

from __future__ import annotations

import shlex
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from runtime.cli.commands import capability_app
from runtime.cli.completion import capability_names, input_names
from runtime.cli.documents import (
    applied_note,
    dry_run_exit,
    plan_document,
    planned,
    run_document,
)
from runtime.cli.render import emit_json, err, out, out_wrapped, plural, steps_named
from runtime.cli.reporters import QuietReporter, RawReporter, TextReporter
from runtime.cli.session import (
    ensure_home,
    json_mode,
    quiet_mode,
    raw_mode,
    reader_gone,
    workspace,
)
from runtime.errors import ExitCode

if TYPE_CHECKING:
    from signal import _HANDLER  # typeshed's name for what signal.signal returns
    from types import FrameType

    from runtime.execute.engine import RunResult
    from runtime.pipeline import Run
    from runtime.plan.build import PlannedStep
    from runtime.plan.workspace import Workspace
    from runtime.preflight.report import Report
    from runtime.provider import Provider

INPUT_HELP = (
    "An input as key=value (repeatable; the value may contain '='; key=@file reads a file)."
)
RUNNER_HELP = "A capability this runner offers (repeatable; for runnerCapability requirements)."
VERBOSE_HELP = (
    "each step's operation, program, policy rule and notes, and the preflight's full "
    "table (by default: one line per step and a preflight summary)."
)
STRICT_HELP = (
    "Count Unknown readiness as not ready, except what runtime can never check "
    "(MDA tools and model, packages it cannot find)."
)
EXECUTE_STRICT_HELP = STRICT_HELP + " Refuse an optional input left out (it would stay ${name})."


def _timeout(value: str | None) -> float | None:
    """``--timeout``, checked as the policy file's ``timeout_seconds`` is."""
    if value is None:
        return None
    from runtime.errors import UsageError
    from runtime.plan.policy_file import TIMEOUT_SECONDS

    seconds = TIMEOUT_SECONDS.number(value)
    if seconds is None:
        raise UsageError(
            f"--timeout must be {TIMEOUT_SECONDS.takes()} (seconds), not {value!r}",
            hint="give the per-step limit in seconds, e.g. --timeout 60; without it, the "
            "policy's timeout_seconds applies",
        )
    return seconds


# Signals that would end the process on the spot: while steps run, each becomes an exception
# in the main thread, so the step's processes are stopped and the run is recorded (exit 128+n).
# SIGPIPE is not among them: Python ignores it, so that a write to a closed socket is an
# error of that write; a closed stdout is handled where a reporter writes
# (runtime.cli.reporters).
TERMINATING_SIGNALS = ("SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM")


@contextmanager
def _signals_as_exceptions() -> Iterator[None]:
    from runtime.errors import Terminated

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    previous: dict[int, _HANDLER] = {}
    try:
        for name in TERMINATING_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                previous[number] = signal.signal(number, handler)
        yield
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


def render_plan_text(prepared: Run, *, verbose: bool = False) -> None:
    """The plan: one line per step (``verbose``: each step's details); under ``--quiet``
    only the steps something stands in the way of, and the warnings."""
    from runtime.cli.plan_text import fits, print_step_lines, step_details, step_lines

    cap, plan = planned(prepared)
    red = prepared.redactor
    quiet = quiet_mode()
    total = len(plan.steps)

    def label(s: PlannedStep) -> str:
        shown = s.args[len(s.operation.words) :] if s.operation else s.args
        return f"[{s.index}/{total}] {s.label} {shlex.join(red.text(a) for a in shown)}".rstrip()

    if not quiet:
        out(f"plan for {cap.path} (sha256 {cap.sha256[:12]})")
        # a name found in a capabilities/ folder above: its paths still start here (said
        # always with --verbose; by default when the file is not below the working folder)
        cwd = prepared.ws.cwd
        if verbose or not Path(cap.path).resolve().is_relative_to(cwd.resolve()):
            out(f"  working folder: {cwd} (the roots and relative paths start here)")
        for key, value in red.inputs(prepared.inputs).items():
            line = f"  input {key} = {value!r}"
            out(line if verbose else fits(line))
    if verbose and not quiet:
        for s in plan.steps:
            out(label(s))
            step_details(s, red)
    else:  # each line cut to the terminal's width; --verbose has the arguments whole
        print_step_lines(step_lines(plan.steps, label, quiet=quiet, red=red))
    for p in prepared.warnings:
        out(f"{p.file}:{p.line}:{p.column}: warning: {p.message}")
        if p.hint:
            out(f"  hint: {p.hint}")


def render_preflight_text(report: Report, heading: str = "") -> None:
    from runtime.cli.render import table

    if heading:
        out(heading)
    rows = []
    for c in report.checks:
        req = c.requirement
        flag = "optional" if req.optional else "required"
        rows.append((req.id, req.type, req.origin, flag, c.resolution, c.readiness, c.reason))
    headers = ("REQUIREMENT", "TYPE", "ORIGIN", "NEED", "RESOLVED", "READY", "REASON")
    for line in table(rows, headers=headers, indent="  "):
        out(line)
    for c in report.checks:
        if c.fix and c.readiness != "True":
            out_wrapped(f"fix {c.requirement.id}: {c.fix}", "  ")
    for w in report.warnings:
        out_wrapped(f"warning: {w}", "  ")
    if report.cost_hints:
        hints = ", ".join(f"{k}={v}" for k, v in report.cost_hints.items())
        out_wrapped(f"cost hints: {hints}", "  ")


def show_plan(prepared: Run, command: str, *, verbose: bool = False) -> int:
    """The plan as JSON, or as text: short, or whole with ``verbose``; under ``--quiet``
    only what stands in the way of a run."""
    _, plan = planned(prepared)
    code = dry_run_exit(plan)
    report = prepared.report
    if json_mode():
        emit_json(plan_document(prepared, command))
    else:
        render_plan_text(prepared, verbose=verbose)
        heading = "preflight (offline, no version probes):"
        if report is not None and verbose and not quiet_mode():
            render_preflight_text(report, heading=heading)
        elif report is not None:
            from runtime.cli.plan_text import preflight_summary

            preflight_summary(report, heading, quiet=quiet_mode())
        if code == int(ExitCode.POLICY_REFUSED):
            out(
                f"{plural(len(plan.refused), 'step')} would be refused by policy; nothing would run"
            )
        elif code == int(ExitCode.MISSING_CAPABILITY):
            out("a program is missing on PATH; nothing would run")
        elif code == int(ExitCode.STEP_FAILED):
            which = steps_named([s.index for s in plan.unpreviewable])
            out(
                f"the change of {which} cannot be previewed (above): a dry run refuses a "
                "change it cannot show; nothing was run"
            )
        elif not quiet_mode():
            more = "" if verbose else " (--verbose: each step's rule and every check)"
            out(f"{plural(len(plan.steps), 'step')} planned; nothing was run{more}")
    return code


def execute_run(run: Run) -> int:
    """Walk ``run`` (Mode.EXECUTE) to the end, following its steps; render the result."""
    from runtime.pipeline import record, walk

    if json_mode():
        run.reporter = QuietReporter(run.redactor)
    elif raw_mode():
        run.reporter = RawReporter(run.redactor)
    else:
        run.reporter = TextReporter(run.redactor, quiet=quiet_mode())
    with _signals_as_exceptions():
        walk(run, until=record)
    result = run.result
    assert result is not None  # walked to the end: the run has its result
    _render_run(run, result)
    return int(result.exit_code)


def _render_run(prepared: Run, result: RunResult) -> None:
    total = len(result.results)
    ok_count = sum(1 for r in result.results if r.status == "ok")
    not_run = [r.planned.index for r in result.results if r.status == "not-run"]
    failed = result.failed_step
    note = applied_note(result)
    if json_mode():
        emit_json(run_document(prepared, result))
    elif reader_gone():
        # the reader of stdout went away (`| head -1`): the run ends as a program SIGPIPE
        # ends, saying nothing; its progress so far stands, the audit log has the rest
        return
    elif failed is None and result.exit_code == 0:
        # raw: stdout holds the result, and all went well; quiet: only failures are said
        if not raw_mode() and not quiet_mode():
            err(f"ok: {ok_count}/{total} steps succeeded (run {result.run_id})")
    elif failed is None:
        # stopped between steps, no step failing (a signal, the reader of stdout gone)
        line = f"{result.status}: {ok_count}/{total} steps succeeded"
        if not_run:
            line += f"; {steps_named(not_run)} not run"
        err(line + f" (run {result.run_id})")
    else:
        line = (
            f"{result.status}: step {failed.planned.index} ({failed.planned.label}) {failed.status}"
        )
        if not_run:
            line += f"; {steps_named(not_run)} not run"
        err(line + f" (run {result.run_id})")
        if note:
            err(f"note: {note}")


@capability_app.command("execute")
def execute_cmd(
    name: str = typer.Argument(
        ..., help="Capability path or name.", autocompletion=capability_names
    ),
    inputs: list[str] = typer.Option(
        None, "--input", "-i", help=INPUT_HELP, autocompletion=input_names
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show the plan and policy decisions; run nothing."
    ),
    timeout: str = typer.Option(
        None,
        "--timeout",
        metavar="SECONDS",
        help="Per-step time limit in seconds, above 0 and at most 86400 (default: policy).",
    ),
    strict: bool = typer.Option(False, "--strict", help=EXECUTE_STRICT_HELP),
    runner_capability: list[str] = typer.Option(None, "--runner-capability", help=RUNNER_HELP),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="With --dry-run: " + VERBOSE_HELP),
) -> None:
    """Run a capability's steps in order, stopping at the first failure (after an offline preflight)."""
    from runtime.errors import UsageError
    from runtime.pipeline import Mode, capability_run, preflight, walk

    if verbose and not dry_run:
        raise UsageError(
            "--verbose is for the plan: it goes with --dry-run",
            hint=f"`runtime capability execute {shlex.quote(name)} --dry-run --verbose` shows "
            "the plan whole; a run prints the same lines without it",
        )
    seconds = _timeout(timeout)
    ws = workspace()
    ensure_home(ws)
    offered = tuple(runner_capability) if runner_capability is not None else None
    pairs = inputs or []
    if dry_run:
        run = walk(
            capability_run(
                ws, name, Mode.PLAN, input_pairs=pairs, runner_capabilities=offered, strict=strict
            ),
            until=preflight,
        )
        raise typer.Exit(show_plan(run, "capability execute --dry-run", verbose=verbose))
    run = capability_run(
        ws,
        name,
        Mode.EXECUTE,
        input_pairs=pairs,
        timeout=seconds,
        strict=strict,
        runner_capabilities=offered,
    )
    raise typer.Exit(execute_run(run))


@capability_app.command("plan")
def plan_cmd(
    name: str = typer.Argument(
        ..., help="Capability path or name.", autocompletion=capability_names
    ),
    inputs: list[str] = typer.Option(
        None, "--input", "-i", help=INPUT_HELP, autocompletion=input_names
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show " + VERBOSE_HELP),
) -> None:
    """Show exactly what execute would do, with each policy decision. Causes no side effect."""
    from runtime.pipeline import Mode, capability_run, preflight, walk

    ws = workspace()
    ensure_home(ws)
    run = walk(capability_run(ws, name, Mode.PLAN, input_pairs=inputs or []), until=preflight)
    raise typer.Exit(show_plan(run, "capability plan", verbose=verbose))


command_app = typer.Typer(
    rich_markup_mode=None, help="Run an allow-listed binary directly.", no_args_is_help=True
)


@command_app.callback()
def _command_group() -> None:
    """Run an allow-listed binary directly (a group, so that `run` stays a subcommand)."""


# Everything after BINARY is the binary's (`runtime command run git log -o x` hands -o to
# git); runtime's own options (--timeout, -o) come before BINARY.
@command_app.command(
    "run",
    context_settings={
        "ignore_unknown_options": True,
        "allow_extra_args": True,
        "allow_interspersed_args": False,
    },
)
def command_run_cmd(
    binary: str = typer.Argument(..., help="An allow-listed binary name."),
    args: list[str] = typer.Argument(
        None, help="The binary's arguments, as given: everything after BINARY is the binary's."
    ),
    timeout: str = typer.Option(
        None,
        "--timeout",
        metavar="SECONDS",
        help="Time limit in seconds, above 0 and at most 86400 (default: policy).",
    ),
) -> None:
    """Run an allow-listed binary with ARGS (no shell), under the same policy as a binary step.

    runtime's own options (--timeout, -o) come before BINARY."""
    from runtime.pipeline import command_run

    seconds = _timeout(timeout)
    ws = workspace()
    ensure_home(ws)
    raise typer.Exit(execute_run(command_run(ws, None, binary, list(args or []), timeout=seconds)))


def run_direct(ws: Workspace, provider: Provider, args: list[str]) -> int:
    from runtime.pipeline import command_run

    ensure_home(ws)
    return execute_run(command_run(ws, provider.name, None, args))


@capability_app.command("preflight")
def preflight_cmd(
    name: str = typer.Argument(
        ..., help="Capability path or name.", autocompletion=capability_names
    ),
    inputs: list[str] = typer.Option(
        None, "--input", "-i", help=INPUT_HELP, autocompletion=input_names
    ),
    live: bool = typer.Option(
        False, "--live", help="Add bounded, read-only network checks (token, scopes, hosts)."
    ),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    runner_capability: list[str] = typer.Option(None, "--runner-capability", help=RUNNER_HELP),
) -> None:
    """Check every requirement (declared and inferred): resolution and readiness. Runs no step."""
    from runtime.pipeline import Mode, capability_run, preflight, walk

    ws = workspace()
    ensure_home(ws)
    offered = tuple(runner_capability) if runner_capability is not None else None
    prepared = walk(
        capability_run(
            ws,
            name,
            Mode.PREFLIGHT,
            input_pairs=inputs or [],
            live=live,
            strict=strict,
            runner_capabilities=offered,
        ),
        until=preflight,
    )
    report, cap = prepared.report, prepared.capability
    assert report is not None and cap is not None
    code = 0
    if any(c.requirement.type == "input" for c in report.blocking()):
        # a required input not given is a usage error, as plan and execute say (2); the
        # report still shows everything else this machine has or lacks
        code = int(ExitCode.INVALID)
    elif not report.ready:
        code = int(ExitCode.MISSING_CAPABILITY)
    if json_mode():
        emit_json(
            {
                "ok": code == 0,
                "exit_code": code,
                "capability": {"path": cap.path, "sha256": cap.sha256},
                **report.to_json(),
            }
        )
    elif quiet_mode():  # what is not ready, and the warnings; nothing when all is
        from runtime.cli.plan_text import preflight_summary

        preflight_summary(report, f"preflight of {cap.path}:", quiet=True)
    else:
        mode = " (live)" if live else " (offline)"
        render_preflight_text(report, heading=f"preflight of {cap.path}{mode}:")
        blocking = report.blocking()
        if blocking:
            out_wrapped(f"not ready: {', '.join(c.requirement.id for c in blocking)}")
        else:
            out("ready")
    raise typer.Exit(code)
