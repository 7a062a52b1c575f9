"""How a running capability reports itself, one reporter per output mode.

The engine calls a reporter as the run goes (``run_started``, then each
step's ``step_started``, ``step_output`` and ``step_finished``):
:class:`TextReporter` for people (progress on stderr, each step's output on
stdout; under ``--quiet``, for cron, no progress: stderr has only warnings and
failures, as under raw), :class:`RawReporter` for ``--output raw`` (the last step's bytes, for
piping), :class:`QuietReporter` for JSON (the document at the end says it
all). Each says the capability's warnings before the first step
(:func:`_warn`). The commands that pick one are :mod:`runtime.cli.run_cmds`.

Once the reader of stdout has gone (``| head -1``), a reporter says nothing more:
the run ends as a program SIGPIPE ends (:func:`_emit`).
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from typing import TYPE_CHECKING, TextIO

from runtime.cli.render import err
from runtime.cli.session import reader_gone
from runtime.text import printable

if TYPE_CHECKING:
    import threading

    from runtime.execute.engine import StepResult
    from runtime.plan.build import PlannedStep
    from runtime.problems import Problem
    from runtime.redact import Redactor


def short_args(args: list[str], limit: int = 80) -> str:
    text = shlex.join(args)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def step_label(planned: PlannedStep, total: int, redactor: Redactor) -> str:
    """``[2/6] files write n/a.txt hello``: a step as its progress line names it."""
    shown = planned.args[len(planned.operation.words) :] if planned.operation else planned.args
    args = short_args([redactor.text(a) for a in shown])
    return printable(f"[{planned.index}/{total}] {planned.label} {args}".rstrip())


def _emit(stream: TextIO, text: str) -> None:
    """Write and flush; a reader that went away (EPIPE) ends the run like SIGPIPE would:
    the step's processes are stopped, the run is recorded, exit 141. Output lost
    otherwise (a full disk) does not stop the run: the exit code says it at the end."""
    stream.write(text)
    stream.flush()
    if stream is sys.stdout and reader_gone():
        from runtime.errors import Terminated

        raise Terminated(signal.SIGPIPE)


def _emit_bytes(data: bytes, stream: TextIO | None = None) -> None:
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
        from runtime.errors import Terminated

        raise Terminated(signal.SIGPIPE)


def _utf8_bytes(text: str) -> bytes:
    """``text`` as the bytes it was read from: UTF-8, a byte that was not UTF-8 as itself
    (its lone surrogate, ``\\udcff``); any other lone surrogate, which no bytes decode to,
    as its escape."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def _warn(warnings: list[Problem]) -> None:
    """Before the first step: the capability's warnings, on stderr."""
    for p in warnings:
        err(f"{p.file}:{p.line}:{p.column}: warning: {p.message}")
        if p.hint:
            err(f"  hint: {p.hint}")


def _failure_lines(result: StepResult, redactor: Redactor, indent: str) -> str:
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
    ``quiet`` (``--quiet``): no progress, so stderr has only the warnings, what the
    programs write there, and a failed step (its line, error and hint), as under raw.

    It writes to the streams itself (a step's output as it comes), so it escapes what it
    shows itself (:func:`runtime.text.printable`): a step's output keeps its lines and
    tabs, streamed from a program or not, on a terminal or not; the exact bytes are in
    the JSON and raw outputs.
    """

    def __init__(self, redactor: Redactor, *, quiet: bool = False) -> None:
        import threading

        self.redactor = redactor
        self.quiet = quiet
        self.open_line = False
        # the stream the step's streamed output left without a final newline, if any
        self.unterminated: TextIO | None = None  # the stream a line was left open on
        from runtime.log import ERROR, Logger

        # diagnostic events share stderr: with them on, no line is left open for an
        # event to land in the middle of
        self.whole_lines = Logger.enabled(ERROR)
        # live progress (elapsed seconds on the open line) only on a terminal
        self.live = (
            not quiet
            and not self.whole_lines
            and sys.stderr.isatty()
            and os.environ.get("TERM") != "dumb"
        )
        from runtime.cli.render import colour_enabled

        self.colour = colour_enabled(sys.stderr)  # asked once, not once per step
        self.lock = threading.Lock()
        self.ticker: threading.Timer | None = None
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

    def run_started(self, warnings: list[Problem]) -> None:
        _warn(warnings)

    def step_started(self, planned: PlannedStep, total: int) -> None:
        self.line = step_label(planned, total, self.redactor)
        self.unterminated = None
        if self.quiet:  # said only if the step fails
            return
        # flushed: a pipe (a CI log) sees which step is running, not only its end
        _emit(sys.stderr, self.line + (" ...\n" if self.whole_lines else " ..."))
        self.open_line = not self.whole_lines
        if self.live:
            import threading
            import time

            self.ticker = threading.Timer(1.0, self._tick, (time.monotonic(),))
            self.ticker.daemon = True
            self.ticker.start()

    def step_output(self, planned: PlannedStep, stream: str, text: str) -> None:
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

    def step_finished(self, result: StepResult, total: int) -> None:
        self._stop_ticker()
        if reader_gone():  # the step was stopped for it: a newline ends its open line
            if self.open_line:
                _emit(sys.stderr, "\n")
                self.open_line = False
            return
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
            if not self.quiet:
                _emit(sys.stderr, f"[{result.planned.index}/{total}] {status} {timing}\n")
            elif result.failure is not None:  # its first line: name it whole
                _emit(sys.stderr, f"{self.line} {status} {timing}\n")
        self.open_line = False
        outcome = result.outcome
        if outcome is not None and outcome.output and not outcome.streamed:
            lines = self.redactor.text(outcome.output).splitlines()  # \r too: no overwriting
            _emit(sys.stdout, "".join(printable(line, "\t") + "\n" for line in lines))
        notes = ""
        if outcome is not None and outcome.truncated and not self.quiet:
            notes += f"    (output was {outcome.output_bytes} bytes; kept its head and tail)\n"
        notes += _failure_lines(result, self.redactor, "    ")
        if notes:
            _emit(sys.stderr, notes)


class RawReporter:
    """``--output raw``: the last step's output exactly on stdout (a program's stdout as
    it streams), for piping; nothing of the other steps there. Programs' stderr, and a
    failed step's error, on stderr; no progress."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.total = 0

    def run_started(self, warnings: list[Problem]) -> None:
        _warn(warnings)

    def step_started(self, planned: PlannedStep, total: int) -> None:
        self.total = total

    def step_output(self, planned: PlannedStep, stream: str, text: str) -> None:
        # a program's bytes as it wrote them: one that is not UTF-8 streams as the lone
        # surrogate that stands for it (an image `cat` writes stays that image)
        data = text.encode("utf-8", "surrogateescape")
        if stream != "stdout":
            _emit_bytes(data, sys.stderr)
        elif planned.index == self.total:
            _emit_bytes(data)

    def step_finished(self, result: StepResult, total: int) -> None:
        outcome = result.outcome
        last = result.planned.index == total
        if last and result.failure is None and outcome is not None and not outcome.streamed:
            if outcome.raw is not None:
                self._bytes(result.planned.index, outcome.raw)
            else:  # text: its bytes, UTF-8 as runtime read them, whatever stdout's encoding
                _emit_bytes(_utf8_bytes(self.redactor.text(outcome.output)))
        if reader_gone():  # the step was stopped for it: nothing to say
            return
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
    """JSON: nothing while the run goes; the document at the end has it all."""

    def __init__(self, redactor: Redactor) -> None:
        pass

    def run_started(self, warnings: list[Problem]) -> None:
        pass

    def step_started(self, planned: PlannedStep, total: int) -> None:
        pass

    def step_output(self, planned: PlannedStep, stream: str, text: str) -> None:
        pass

    def step_finished(self, result: StepResult, total: int) -> None:
        pass
