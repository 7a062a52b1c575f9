"""capability execute / plan, `runtime command run`, direct provider calls, and their rendering."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from runtime.cli.commands import capability_app
from runtime.cli.completion import capability_names, input_names
from runtime.cli.render import emit_json, err, out, out_wrapped, plural, step_ranges
from runtime.cli.session import (
    ensure_home,
    json_mode,
    raw_mode,
    reader_gone,
    workspace,
)
from runtime.errors import ExitCode
from runtime.text import printable

INPUT_HELP = (
    "An input as key=value (repeatable; the value may contain '='; key=@file reads a file)."
)
RUNNER_HELP = "A capability this runner offers (repeatable; for runnerCapability requirements)."
STRICT_HELP = (
    "Count Unknown readiness as not ready, except what runtime can never check "
    "(MDA tools and model, packages it cannot find)."
)


def _timeout(value: str | None) -> float | None:
    """``--timeout``, checked as the policy file's ``timeout_seconds`` is."""
    if value is None:
        return None
    from runtime.errors import UsageError
    from runtime.plan.policy import TIMEOUT_SECONDS

    seconds = TIMEOUT_SECONDS.number(value)
    if seconds is None:
        raise UsageError(
            f"--timeout must be {TIMEOUT_SECONDS.takes()} (seconds), not {value!r}",
            hint="give the per-step limit in seconds, e.g. --timeout 60; without it, the "
            "policy's timeout_seconds applies",
        )
    return seconds


def _short_args(args: list[str], limit: int = 80) -> str:
    text = shlex.join(args)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _emit(stream: Any, text: str) -> None:
    """Write and flush; a reader that went away (EPIPE) ends the run like SIGPIPE would:
    the step's processes are stopped, the run is recorded, exit 141. Output lost
    otherwise (a full disk) does not stop the run: the exit code says it at the end."""
    stream.write(text)
    stream.flush()
    if stream is sys.stdout and reader_gone():
        from runtime.provider import Terminated

        raise Terminated(signal.SIGPIPE)


def _emit_bytes(data: bytes, stream: Any = None) -> None:
    """:func:`_emit` of bytes (stdout by default): written as they are, whatever the
    stream's encoding."""
    stream = stream or sys.stdout
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text-only stream put in its place: the best it can take
        stream.write(data.decode("utf-8", "replace"))
    else:
        buffer.write(data)
        buffer.flush()
    if stream is sys.stdout and reader_gone():
        from runtime.provider import Terminated

        raise Terminated(signal.SIGPIPE)


def _utf8_bytes(text: str) -> bytes:
    """``text`` as the bytes it was read from: UTF-8, a byte that was not UTF-8 as itself
    (its lone surrogate, ``\\udcff``); any other lone surrogate, which no bytes decode to,
    as its escape."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def _steps(indices: list[int]) -> str:
    """``step 3``, ``steps 3, 4``."""
    return step_ranges((i, i) for i in indices)


def _warn(warnings: list[Any]) -> None:
    """Before the first step: the capability's warnings, on stderr."""
    for p in warnings:
        err(f"{p.file}:{p.line}:{p.column}: warning: {p.message}")


def _failure_lines(result: Any, redactor: Any, indent: str) -> str:
    """A failed step's error and hint, for stderr."""
    lines = ""
    if result.error:
        lines += f"{indent}error: {printable(redactor.text(result.error))}\n"
    if result.hint:
        lines += f"{indent}hint: {printable(redactor.text(result.hint))}\n"
    return lines


class TextReporter:
    """Progress and status on stderr, one line per step as it starts and ends (as gh
    reports what it does); each step's output on stdout, ending with a newline.

    It writes to the streams itself (a step's output as it comes), so it escapes what it
    shows itself (:func:`runtime.text.printable`): a step's output keeps its lines and
    tabs, streamed from a program or not, on a terminal or not; the exact bytes are in
    the JSON and raw outputs.
    """

    def __init__(self, redactor: Any) -> None:
        import threading

        self.redactor = redactor
        self.open_line = False
        # the stream the step's streamed output left without a final newline, if any
        self.unterminated: Any = None
        from runtime.log import ERROR, Logger

        # diagnostic events share stderr: with them on, no line is left open for an
        # event to land in the middle of
        self.whole_lines = Logger.enabled(ERROR)
        # live progress (elapsed seconds on the open line) only on a terminal
        self.live = (
            not self.whole_lines and sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
        )
        from runtime.cli.render import colour_enabled

        self.colour = colour_enabled(sys.stderr)  # asked once, not once per step
        self.lock = threading.Lock()
        self.ticker: Any = None
        self.line = ""

    def _tick(self, started: float) -> None:
        """Rewrite the open line with the time elapsed, until the step prints or ends."""
        import threading
        import time

        with self.lock:
            if not self.open_line or self.ticker is None:
                return
            # a dead terminal drops what is written (the stream guard); the step's end
            # stops the ticker
            sys.stderr.write(f"\r{self.line} ... {time.monotonic() - started:.0f}s")
            sys.stderr.flush()
            self.ticker = threading.Timer(1.0, self._tick, (started,))
            self.ticker.daemon = True
            self.ticker.start()

    def _stop_ticker(self) -> None:
        with self.lock:
            if self.ticker is not None:
                self.ticker.cancel()
                self.ticker = None
                if self.open_line:
                    _emit(sys.stderr, f"\r{self.line} ...\x1b[K")

    def run_started(self, warnings: list[Any]) -> None:
        _warn(warnings)

    def _label(self, planned: Any, total: int) -> str:
        shown = planned.args[len(planned.operation.words) :] if planned.operation else planned.args
        args = _short_args([self.redactor.text(a) for a in shown])
        return printable(f"[{planned.index}/{total}] {planned.label} {args}".rstrip())

    def step_started(self, planned: Any, total: int) -> None:
        self.line = self._label(planned, total)
        # flushed: a pipe (a CI log) sees which step is running, not only its end
        _emit(sys.stderr, self.line + (" ...\n" if self.whole_lines else " ..."))
        self.open_line = not self.whole_lines
        self.unterminated = None
        if self.live:
            import threading
            import time

            self.ticker = threading.Timer(1.0, self._tick, (time.monotonic(),))
            self.ticker.daemon = True
            self.ticker.start()

    def step_output(self, planned: Any, stream: str, text: str) -> None:
        self._stop_ticker()
        if self.open_line:
            _emit(sys.stderr, "\n")
            self.open_line = False
        target = sys.stdout if stream == "stdout" else sys.stderr
        # a CR starts a new line, as in the output of a step that does not stream: it never
        # rewrites a line already shown
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        _emit(target, printable(text, "\n\t"))
        if text:
            self.unterminated = None if text.endswith("\n") else target

    def step_finished(self, result: Any, total: int) -> None:
        self._stop_ticker()
        status = result.status
        if self.colour:
            from runtime.cli.render import paint

            status = paint(status, "green" if status == "ok" else "red", sys.stderr)
        timing = f"{result.duration_ms:.0f} ms"
        if self.open_line:
            _emit(sys.stderr, f" {status} {timing}\n")
        else:
            if self.unterminated is not None:
                _emit(self.unterminated, "\n")
            _emit(sys.stderr, f"[{result.planned.index}/{total}] {status} {timing}\n")
        self.open_line = False
        outcome = result.outcome
        if outcome is not None and outcome.output and not outcome.streamed:
            lines = self.redactor.text(outcome.output).splitlines()  # \r too: no overwriting
            _emit(sys.stdout, "".join(printable(line, "\t") + "\n" for line in lines))
        notes = ""
        if outcome is not None and outcome.truncated:
            notes += f"    (output was {outcome.output_bytes} bytes; kept its head and tail)\n"
        notes += _failure_lines(result, self.redactor, "    ")
        if notes:
            _emit(sys.stderr, notes)


class RawReporter:
    """``--output raw``: the last step's output exactly on stdout (a program's stdout as
    it streams), for piping; nothing of the other steps there. Programs' stderr, and a
    failed step's error, on stderr; no progress."""

    def __init__(self, redactor: Any) -> None:
        self.redactor = redactor
        self.total = 0

    def run_started(self, warnings: list[Any]) -> None:
        _warn(warnings)

    def step_started(self, planned: Any, total: int) -> None:
        self.total = total

    def step_output(self, planned: Any, stream: str, text: str) -> None:
        # a program's bytes as it wrote them: one that is not UTF-8 streams as the lone
        # surrogate that stands for it (an image `cat` writes stays that image)
        data = text.encode("utf-8", "surrogateescape")
        if stream != "stdout":
            _emit_bytes(data, sys.stderr)
        elif planned.index == self.total:
            _emit_bytes(data)

    def step_finished(self, result: Any, total: int) -> None:
        outcome = result.outcome
        last = result.planned.index == total
        if last and result.failure is None and outcome is not None and not outcome.streamed:
            if outcome.raw is not None:
                self._bytes(result.planned.index, outcome.raw)
            else:  # text: its bytes, UTF-8 as runtime read them, whatever stdout's encoding
                _emit_bytes(_utf8_bytes(self.redactor.text(outcome.output)))
        lines = _failure_lines(result, self.redactor, "")
        if lines:
            _emit(sys.stderr, lines)

    def _bytes(self, index: int, raw: bytes) -> None:
        """A step's output as bytes (an archive): written exactly, but for a secret in
        them, redacted as everywhere; then they are no longer what the step received,
        which stderr says (a file with [REDACTED] in it may no longer open)."""
        redacted = self.redactor.binary(raw)
        if redacted is not raw:
            _emit(
                sys.stderr,
                f"warning: step {index}'s output holds a secret, or text shaped like a token "
                "or a URL's user: [REDACTED] stands in its place, so the bytes written are "
                "not the ones received\n",
            )
        _emit_bytes(redacted)


class QuietReporter:
    def __init__(self, redactor: Any) -> None:
        pass

    def run_started(self, warnings: list[Any]) -> None:
        pass

    def step_started(self, planned: Any, total: int) -> None:
        pass

    def step_output(self, planned: Any, stream: str, text: str) -> None:
        pass

    def step_finished(self, result: Any, total: int) -> None:
        pass


# Signals that would end the process on the spot: while steps run, each becomes an exception
# in the main thread, so the step's processes are stopped and the run is recorded (exit 128+n).
# SIGPIPE is not among them: Python ignores it, so that a write to a closed socket is an
# error of that write; a closed stdout is handled where the reporter writes (_emit).
TERMINATING_SIGNALS = ("SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM")


@contextmanager
def _signals_as_exceptions() -> Iterator[None]:
    from runtime.provider import Terminated

    def handler(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    previous: dict[int, Any] = {}
    try:
        for name in TERMINATING_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                previous[number] = signal.signal(number, handler)
        yield
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


def plan_json(prepared: Any, report: Any = None) -> dict[str, Any]:
    cap = prepared.capability
    extra = {"preflight": report.to_json()} if report is not None else {}
    return {
        **extra,
        "capability": {"path": cap.path, "sha256": cap.sha256},
        "inputs": prepared.redactor.inputs(prepared.inputs),
        "steps": [s.to_json(prepared.redactor) for s in prepared.plan.steps],
        "warnings": [p.to_json() for p in prepared.warnings],
    }


def render_plan_text(prepared: Any) -> None:
    cap = prepared.capability
    red = prepared.redactor
    out(f"plan for {cap.path} (sha256 {cap.sha256[:12]})")
    for key, value in red.inputs(prepared.inputs).items():
        out(f"  input {key} = {value!r}")
    total = len(prepared.plan.steps)
    for s in prepared.plan.steps:
        shown = s.args[len(s.operation.words) :] if s.operation else s.args
        out(
            f"[{s.index}/{total}] {s.label} {_short_args([red.text(a) for a in shown], 200)}".rstrip()
        )
        if s.binary is not None:
            out(f"      binary: {s.binary_path or '(not found on PATH)'}")
        else:
            out(
                f"      operation: {s.operation.name if s.operation else '?'}  transport: {s.transport}  effect: {s.effect}"
            )
            if s.program is not None:
                out(f"      program: {s.binary_path or f'{s.program} (not found on PATH)'}")
        verdict = "allowed" if s.decision.allowed else "REFUSED"
        reason = f": {s.decision.reason}" if s.decision.reason else ""
        out(f"      policy: {verdict} [{s.decision.rule}]{reason}")
        for note in s.inspection.notes:
            out(f"      note: {red.text(note)}")
    for p in prepared.warnings:
        out(f"{p.file}:{p.line}:{p.column}: warning: {p.message}")


def render_preflight_text(report: Any, heading: str = "") -> None:
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


def _plan_exit(plan: Any) -> int:
    if plan.refused:
        return int(ExitCode.POLICY_REFUSED)
    if plan.waiting:  # planned without a required input: the run cannot start as asked
        return int(ExitCode.INVALID)
    if plan.missing_binaries:
        return int(ExitCode.MISSING_CAPABILITY)
    return 0


def show_plan(prepared: Any, command: str) -> int:
    code = _plan_exit(prepared.plan)
    report = prepared.report
    if json_mode():
        doc = {
            "ok": code == 0,
            "exit_code": code,
            "command": command,
            "dry_run": True,
            **plan_json(prepared, report),
        }
        emit_json(doc)
    else:
        render_plan_text(prepared)
        if report is not None:
            render_preflight_text(report, heading="preflight (offline, no version probes):")
        if code == int(ExitCode.POLICY_REFUSED):
            out(
                f"{plural(len(prepared.plan.refused), 'step')} would be refused by policy; "
                "nothing would run"
            )
        elif code == int(ExitCode.MISSING_CAPABILITY):
            out("a program is missing on PATH; nothing would run")
        else:
            out(f"{plural(len(prepared.plan.steps), 'step')} planned; nothing was run")
    return code


def execute_run(run: Any) -> int:
    """Walk ``run`` (Mode.EXECUTE) to the end, following its steps; render the result."""
    from runtime.pipeline import record, walk

    reporter = QuietReporter if json_mode() else RawReporter if raw_mode() else TextReporter
    run.reporter = reporter(run.redactor)
    with _signals_as_exceptions():
        walk(run, until=record)
    result = run.result
    _render_run(run, result)
    return int(result.exit_code)


def _render_run(prepared: Any, result: Any) -> None:
    red = prepared.redactor
    total = len(result.results)
    ok_count = sum(1 for r in result.results if r.status == "ok")
    not_run = [r.planned.index for r in result.results if r.status == "not-run"]
    failed = result.failed_step
    applied_note = None
    if failed is not None and ok_count:
        done = [str(r.planned.index) for r in result.results if r.status == "ok"]
        applied_note = (
            f"{'step' if len(done) == 1 else 'steps'} {', '.join(done)} "
            f"{'stays' if len(done) == 1 else 'stay'} applied: capabilities are not transactional"
        )
    if json_mode():
        cap = prepared.capability
        emit_json(
            {
                "ok": result.exit_code == 0,
                "exit_code": result.exit_code,
                "status": result.status,
                "run_id": result.run_id,
                "capability": {"path": cap.path, "sha256": cap.sha256},
                "inputs": red.inputs(prepared.inputs),
                "steps": [r.to_json(red) for r in result.results],
                "summary": {
                    "total": total,
                    "ok": ok_count,
                    "not_run": len(not_run),
                    "failed_step": failed.planned.index if failed else None,
                },
                "note": applied_note,
            }
        )
    elif failed is None and result.exit_code == 0:
        if not raw_mode():  # raw: stdout holds the result, and all went well
            err(f"ok: {ok_count}/{total} steps succeeded (run {result.run_id})")
    elif failed is None:
        # stopped between steps, no step failing (a signal, the reader of stdout gone)
        line = f"{result.status}: {ok_count}/{total} steps succeeded"
        if not_run:
            line += f"; {_steps(not_run)} not run"
        err(line + f" (run {result.run_id})")
    else:
        line = (
            f"{result.status}: step {failed.planned.index} ({failed.planned.label}) {failed.status}"
        )
        if not_run:
            line += f"; {_steps(not_run)} not run"
        err(line + f" (run {result.run_id})")
        if applied_note:
            err(f"note: {applied_note}")


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
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    runner_capability: list[str] = typer.Option(None, "--runner-capability", help=RUNNER_HELP),
) -> None:
    """Run a capability's steps in order, stopping at the first failure (after an offline preflight)."""
    from runtime.pipeline import Mode, capability_run, preflight, walk

    seconds = _timeout(timeout)
    ws = workspace()
    ensure_home(ws)
    offered = tuple(runner_capability) if runner_capability is not None else None
    pairs = inputs or []
    if dry_run:
        run = walk(
            capability_run(ws, name, Mode.PLAN, input_pairs=pairs, runner_capabilities=offered),
            until=preflight,
        )
        raise typer.Exit(show_plan(run, "capability execute --dry-run"))
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
) -> None:
    """Show exactly what execute would do, with each policy decision. Causes no side effect."""
    from runtime.pipeline import Mode, capability_run, preflight, walk

    ws = workspace()
    ensure_home(ws)
    run = walk(capability_run(ws, name, Mode.PLAN, input_pairs=inputs or []), until=preflight)
    raise typer.Exit(show_plan(run, "capability plan"))


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


def run_direct(ws: Any, provider: Any, args: list[str]) -> int:
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
    else:
        mode = " (live)" if live else " (offline)"
        render_preflight_text(report, heading=f"preflight of {cap.path}{mode}:")
        blocking = report.blocking()
        if blocking:
            out_wrapped(f"not ready: {', '.join(c.requirement.id for c in blocking)}")
        else:
            out("ready")
    raise typer.Exit(code)
