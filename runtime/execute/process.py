"""Run one external program safely: no shell, bounded memory, a timeout, clean interruption.

:func:`run_process` starts ``argv`` (``argv[0]`` an absolute path) in a session
and process group of its own, with exactly the environment it is given and
stdin connected to ``/dev/null``. Both pipes are read in the calling thread
with poll(2), so a ``KeyboardInterrupt`` (or any other exception raised by
a signal handler) arrives while we wait and is handled here.

Memory stays bounded whatever the program prints: per stream only a head and
a tail (a ring of the last bytes) are kept, the rest is counted and replaced
by a marker saying how many bytes were omitted.

Whenever the run ends -- normally, by timeout or by an exception -- the whole
process group is terminated: SIGTERM, a short grace, then SIGKILL. Background
processes the program left behind in its group are therefore ended too. A
process that moved itself to another session or group cannot be reached; if
it keeps the pipes open we stop reading after a bounded wait.
"""

from __future__ import annotations

import codecs
import contextlib
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from runtime.execute.cancel import check as check_cancelled
from runtime.execute.cancel import current as cancellation
from runtime.provider.run import ProgramResult

CHUNK_SIZE = 64 * 1024
# Seconds between SIGTERM and SIGKILL of the process group.
TERM_GRACE = 2.0
# After SIGKILL, seconds to wait (at most) for the group to die.
KILL_WAIT = 1.0
# After the program exits, seconds its descendants may keep the pipes open.
EOF_GRACE = 1.0
# Seconds a stopped group's last output is read for, once the group is gone
DRAIN_WAIT = 0.1
# How often to check on the program when its exit cannot be waited for (no pidfd).
POLL_INTERVAL = 0.05
# A partial line longer than this is streamed without waiting for its newline.
MAX_PENDING_CHARS = CHUNK_SIZE
# How much of such a line stays held back (longer than any secret redacted).
HOLD_BACK_CHARS = 4096

_UTF8_DECODER = codecs.getincrementaldecoder("utf-8")


class ProcessStartError(Exception):
    """The program could not be started (missing, not executable, bad directory, arguments
    over the system's limit...); ``errno`` says which."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errno = errno


# What run_process returns: the provider interface's record of a program's run.
ProcessResult = ProgramResult


def omission_marker(omitted: int) -> str:
    """The text put between head and tail of a stream that was cut."""
    return f"\n[... {omitted} bytes omitted ...]\n"


def _complete_head(data: bytes | bytearray) -> int:
    """Length of ``data`` without a UTF-8 sequence cut at its end."""
    n = len(data)
    i = n - 1
    while i >= 0 and n - i < 4 and data[i] & 0xC0 == 0x80:
        i -= 1
    if i < 0:
        return n
    lead = data[i]
    if 0xC0 <= lead < 0xE0:
        needed = 2
    elif 0xE0 <= lead < 0xF0:
        needed = 3
    elif 0xF0 <= lead < 0xF8:
        needed = 4
    else:
        return n
    return i if n - i < needed else n


def _complete_tail(data: bytes | bytearray) -> int:
    """Offset of the first byte of ``data`` that does not continue a cut UTF-8 sequence."""
    i = 0
    while i < min(3, len(data)) and data[i] & 0xC0 == 0x80:
        i += 1
    return i


class _Stream:
    """One output pipe: keeps a head and a tail, counts bytes, streams text."""

    def __init__(
        self,
        name: str,
        fd: int,
        *,
        head_bytes: int,
        tail_bytes: int,
        on_output: Callable[[str, str], None] | None,
        redact: Callable[[str], str],
    ) -> None:
        self.name = name
        self.fd = fd  # the read end of the pipe
        self.head_limit = head_bytes
        self.tail_limit = tail_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.open = True
        self._on_output = on_output
        self._redact = redact
        # a byte that is not UTF-8 streams as the lone surrogate that stands for it, so
        # that raw output writes the program's bytes back exactly (text output shows
        # its escape); the output kept for the record reads it as U+FFFD (text())
        self._decoder = _UTF8_DECODER(errors="surrogateescape")
        self._pending = ""

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        rest = memoryview(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += rest[:room]
            rest = rest[room:]
        if rest and self.tail_limit > 0:
            if len(rest) >= self.tail_limit:
                self.tail[:] = rest[len(rest) - self.tail_limit :]
            else:
                self.tail += rest
                excess = len(self.tail) - self.tail_limit
                if excess > 0:
                    del self.tail[:excess]
        if self._on_output is not None:
            self._stream_text(self._decoder.decode(data))

    def _stream_text(self, text: str) -> None:
        # Streamed text goes out in whole lines, so that ``redact`` sees a secret
        # whole even when the program wrote it in pieces (or a read split it).
        assert self._on_output is not None
        text = self._pending + text
        cut = text.rfind("\n") + 1
        if cut == 0 and len(text) > MAX_PENDING_CHARS:
            # a long line without a newline: pass it on, but keep its end back, so a secret
            # written across two reads is still whole when redacted
            cut = len(text) - HOLD_BACK_CHARS
        self._pending = text[cut:]
        if cut:
            self._on_output(self.name, self._redact(text[:cut]))

    def finish(self) -> None:
        """Stream whatever is left (a last line without newline, a cut UTF-8 sequence)."""
        if self._on_output is None:
            return
        text = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        if text:
            self._on_output(self.name, self._redact(text))

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        """The kept output: all of it, or head + marker + tail (both redacted)."""
        if not self.truncated:
            if not self.total:
                return ""
            return self._redact(bytes(self.head + self.tail).decode("utf-8", errors="replace"))
        head = bytes(self.head[: _complete_head(self.head)])
        tail = bytes(self.tail[_complete_tail(self.tail) :])
        omitted = self.total - len(head) - len(tail)
        return (
            self._redact(head.decode("utf-8", errors="replace"))
            + omission_marker(omitted)
            + self._redact(tail.decode("utf-8", errors="replace"))
        )


def _group_alive(pgid: int, *, subreaper: bool = False) -> bool:
    """Whether a process of group ``pgid`` is still alive (zombies count as dead).

    When the runtime is a child subreaper, every member of the group that outlives
    its parent becomes our child, so a dead member is a zombie of ours: it is reaped
    here, and whatever still answers a signal is alive. Otherwise orphans are reaped
    by init, which may take a moment; a zombie can do no harm, so on Linux /proc is
    read to ignore them (a read of every process's entry).
    """
    if subreaper:
        _reap_dead_members(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if subreaper or not sys.platform.startswith("linux"):
        return True
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        # "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _reap_dead_members(pgid: int) -> None:
    """Reap the members of group ``pgid`` that are dead and are our children."""
    while True:
        try:
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
        except OSError:  # ChildProcessError: none of ours left in the group
            return
        if pid == 0:
            return


class _Runner:
    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        pipes: tuple[int, int],
        *,
        head_bytes: int,
        tail_bytes: int,
        on_output: Callable[[str, str], None] | None,
        redact: Callable[[str], str],
        subreaper: bool,
    ) -> None:
        self.proc = proc
        self.pgid = proc.pid  # start_new_session: the child leads its own group
        self.subreaper = subreaper
        # poll(2) itself, not an epoll set or the selectors module: three descriptors, one
        # wait per wake-up, and none of the per-step bookkeeping objects
        self._poll = select.poll()
        self._watched: dict[int, _Stream | None] = {}  # fd -> its stream (None: the pidfd)
        self.streams: list[_Stream] = []
        for name, fd in zip(("stdout", "stderr"), pipes, strict=True):
            stream = _Stream(
                name,
                fd,
                head_bytes=head_bytes,
                tail_bytes=tail_bytes,
                on_output=on_output,
                redact=redact,
            )
            self.streams.append(stream)
            self._watch(fd, stream)
        # a run cancelled from another thread (runtime.execute.cancel) ends the wait too
        self.cancellation = cancellation()
        if self.cancellation is not None:
            self._watch(self.cancellation.fileno(), None)
        # A pidfd makes the wait end when the program exits (Linux >= 5.3).
        self.pidfd: int | None = None
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is not None:
            with contextlib.suppress(OSError):
                pidfd: int = pidfd_open(proc.pid)
                try:
                    self._watch(pidfd, None)
                except (OSError, ValueError):
                    os.close(pidfd)  # not watched: the exit is asked for instead
                else:
                    self.pidfd = pidfd

    def _watch(self, fd: int, stream: _Stream | None) -> None:
        self._poll.register(fd, select.POLLIN)
        self._watched[fd] = stream

    def _unwatch(self, fd: int) -> None:
        if self._watched.pop(fd, False) is not False:
            self._poll.unregister(fd)

    # -- waiting and reading ------------------------------------------------

    def exited(self) -> bool:
        if self.proc.returncode is not None:
            return True
        if self.pidfd is not None:
            return False  # the pidfd becomes readable when it exits: no need to ask
        return self.proc.poll() is not None

    def streams_open(self) -> bool:
        return any(s.open for s in self.streams)

    def pump(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for output or the program's exit; take what came."""
        if self.pidfd is None and self.proc.returncode is None:
            if not self._watched:
                # both pipes are closed and only the exit is missing: wait for it, rather
                # than sleep a whole interval in poll(2) with nothing to watch
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(max(timeout, 0.0))
                return
            timeout = min(timeout, POLL_INTERVAL)
        for fd, _ in self._poll.poll(math.ceil(timeout * 1000) if timeout > 0 else 0):
            stream = self._watched.get(fd)
            if self.cancellation is not None and fd == self.cancellation.fileno():
                self.cancellation.check()  # raises: the group is ended as for a signal
                continue
            if stream is None:  # the pidfd: the program exited
                self._close_pidfd()
                self.proc.poll()
                continue
            data = os.read(fd, CHUNK_SIZE)
            if data:
                stream.feed(data)
            else:
                self._close_stream(stream)
                stream.finish()

    def _close_stream(self, stream: _Stream) -> None:
        if not stream.open:
            return
        stream.open = False
        self._unwatch(stream.fd)
        os.close(stream.fd)

    def _close_pidfd(self) -> None:
        if self.pidfd is not None:
            self._unwatch(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None

    def collect(self, timeout: float, start: float) -> bool:
        """Read until the program is done; returns whether it timed out."""
        deadline = start + timeout
        eof_deadline: float | None = None
        while True:
            now = time.monotonic()
            if self.exited():
                if not self.streams_open():
                    break
                if eof_deadline is None:
                    eof_deadline = now + EOF_GRACE
                if now >= eof_deadline:
                    break  # descendants hold the pipes: they are terminated below
                self.pump(eof_deadline - now)
            elif now >= deadline:
                if self.proc.poll() is not None:
                    continue  # it exited as time ran out, before its pidfd was read
                self.terminate(drain=True)
                return True
            else:
                self.pump(deadline - now)
        if self._group_alive():
            self.terminate(drain=True)
        return False

    def _group_alive(self) -> bool:
        """Whether the step's group has a live process: its leader (reaped by
        :attr:`proc` alone: its exit status is the step's), or any other member."""
        if self.proc.returncode is None:
            return True
        return _group_alive(self.pgid, subreaper=self.subreaper)

    # -- ending the process group -------------------------------------------

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, signum)

    def _wait_group(self, seconds: float, *, drain: bool) -> bool:
        """Wait (reading output if ``drain``) until the group is dead; whether it is."""
        end = time.monotonic() + seconds
        # a member that is already on its way out (a confined program's bubblewrap helper
        # tearing its namespace down) is gone almost at once: look again soon,
        # then at the usual interval
        pause = 0.001
        while True:
            self.proc.poll()  # reap the leader, or it stays a zombie of ours
            if not self._group_alive():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            step = min(left, pause)
            pause = min(pause * 2, POLL_INTERVAL)
            if drain and self.streams_open():
                self.pump(step)
            else:
                time.sleep(step)

    def terminate(self, *, drain: bool) -> None:
        """SIGTERM the group, wait a grace, SIGKILL it; then stop reading."""
        self._signal_group(signal.SIGTERM)
        if not self._wait_group(TERM_GRACE, drain=drain):
            self._signal_group(signal.SIGKILL)
            # Bounded: a member we may not signal (it changed its user) must not hang us.
            self._wait_group(KILL_WAIT, drain=drain)
        if drain:
            # what the group wrote before it ended is still in the pipes: take it (for a
            # moment only, should a process that escaped the group keep writing)
            end = time.monotonic() + DRAIN_WAIT
            while self.streams_open() and self._poll.poll(0) and time.monotonic() < end:
                self.pump(0)
        # Whatever still holds the pipes escaped the group: stop reading from it.
        for stream in self.streams:
            if stream.open:
                self._close_stream(stream)
                if drain:
                    stream.finish()

    def abort(self) -> None:
        """End the group after an exception, without calling back into the caller."""
        try:
            for stream in self.streams:
                self._close_stream(stream)
            self.terminate(drain=False)
        except BaseException:
            # Interrupted again while cleaning up: no more grace.
            self._signal_group(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(KILL_WAIT)
            raise

    def close(self) -> None:
        for stream in self.streams:
            self._close_stream(stream)
        self._close_pidfd()
        if self.cancellation is not None:  # the run's to close, not ours: only unwatched
            self._unwatch(self.cancellation.fileno())


def _start_error(argv0: str, cwd: Path, exc: OSError) -> ProcessStartError:
    reason = exc.strerror or str(exc)
    if exc.filename is not None and os.fspath(exc.filename) == os.fspath(cwd) != argv0:
        # not the program's fault: no errno, so that no hint blames the program
        return ProcessStartError(f"cannot start {argv0}: working directory {cwd}: {reason}")
    if isinstance(exc, FileNotFoundError):
        return ProcessStartError(f"cannot start {argv0}: no such file", exc.errno)
    if isinstance(exc, PermissionError):
        return ProcessStartError(
            f"cannot start {argv0}: permission denied (not executable?)", exc.errno
        )
    return ProcessStartError(f"cannot start {argv0}: {reason}", exc.errno)


# Signals whose handler may raise (SIGINT's KeyboardInterrupt, the CLI's Terminated).
_HELD_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM")
    if hasattr(signal, name)
)


def _hold_signals(pending: list[int]) -> dict[int, Any]:
    """Record the signals above instead of handling them; the handlers they replaced.

    Only in the main thread (the only one signal handlers run in); elsewhere nothing
    is held, as nothing could be.
    """
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _HELD_SIGNALS:
            previous[signum] = signal.signal(signum, lambda n, f: pending.append(n))
    return previous


def _release_signals(previous: dict[int, Any]) -> None:
    """Put the handlers back (once: a second call finds nothing to do)."""
    while previous:
        signum, handler = previous.popitem()
        signal.signal(signum, handler)


def _handle_held(pending: list[int]) -> None:
    """Handle, now, the signals held while the child started (its handler may raise)."""
    for signum in pending:
        handler = signal.getsignal(signum)
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(signum)


_DEVNULL: int | None = None


def _devnull() -> int:
    """A descriptor of /dev/null for children's stdin, opened once per process."""
    global _DEVNULL
    if _DEVNULL is None:
        _DEVNULL = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    return _DEVNULL


def run_process(
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float,
    on_output: Callable[[str, str], None] | None = None,
    redact: Callable[[str], str] = lambda s: s,
    head_bytes: int = 64 * 1024,
    tail_bytes: int = 64 * 1024,
    subreaper: bool = False,
) -> ProcessResult:
    """Run ``argv`` to completion, or until ``timeout`` seconds, and return its output.

    ``env`` is the child's complete environment. ``on_output(stream, text)`` is
    called while the program runs with redacted text in whole lines (a partial
    line is passed on at the end of the stream, or once it grows past
    :data:`MAX_PENDING_CHARS`). Raises :class:`ProcessStartError` if the program
    cannot be started. Any exception raised while waiting (``KeyboardInterrupt``
    included) terminates the process group and is re-raised. ``subreaper``: the caller
    made this process a child subreaper (see :func:`_group_alive`).
    """
    if not argv:
        raise ValueError("run_process: argv is empty")
    if not os.path.isabs(argv[0]):
        raise ValueError(f"run_process: {argv[0]!r} is not an absolute path")
    if head_bytes < 0 or tail_bytes < 0:
        raise ValueError("run_process: head_bytes and tail_bytes must not be negative")

    check_cancelled()  # a run cancelled meanwhile starts nothing more
    start = time.monotonic()
    # Plain pipes, read as descriptors: file objects around them would cost a few
    # system calls each (isatty, seek checks) and nothing here reads through them.
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    try:
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
    except BaseException:
        os.close(out_r)
        os.close(out_w)
        raise
    pipes = (out_r, err_r)
    # A signal handler that raises while Popen waits for the child's exec, or before the
    # runner that can end the child's group exists, would leave a started child nobody
    # knows the pid of (it runs in a session of its own). Such signals are held from
    # before the start until the runner exists, then handled inside the same try that
    # ends the group.
    pending: list[int] = []
    held = _hold_signals(pending)
    proc: subprocess.Popen[bytes] | None = None
    runner: _Runner | None = None
    try:
        try:
            proc = subprocess.Popen(
                argv,
                env=dict(env),
                cwd=cwd,
                stdin=_devnull(),
                stdout=out_w,
                stderr=err_w,
                start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(out_w)  # the child has its copies; EOF comes when it closes them
            os.close(err_w)
        runner = _Runner(
            proc,
            pipes,
            head_bytes=head_bytes,
            tail_bytes=tail_bytes,
            on_output=on_output,
            redact=redact,
            subreaper=subreaper,
        )
        _release_signals(held)
        _handle_held(pending)  # the group is ours to end now, whatever the handler raises
        timed_out = runner.collect(timeout, start)
    except BaseException as exc:
        _release_signals(held)
        if runner is not None:
            runner.abort()
        else:
            if proc is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(KILL_WAIT)
            for fd in pipes:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if proc is None and isinstance(exc, OSError):
                raise _start_error(argv[0], cwd, exc) from exc
        raise
    finally:
        if runner is not None:
            runner.close()

    out, err = runner.streams
    return ProcessResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        truncated=out.truncated or err.truncated,
        timed_out=timed_out,
    )
