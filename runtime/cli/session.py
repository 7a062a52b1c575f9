"""What every command of the CLI shares: the output mode, the workspace, Runtime Home.

Kept apart from :mod:`runtime.cli` (the application and its entry point) so that
the command modules, which the application imports lazily, import this and not
the package that imports them.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

    from runtime.home.layout import Home, RefreshReport
    from runtime.plan.workspace import Workspace
    from runtime.problems import Problem


class _State:
    output: str = "text"
    quiet: bool = False  # -q/--quiet: only warnings and failures on stderr
    log_level: str | None = None  # --log-level, where given (else RUNTIME_LOG_LEVEL)
    log_format: str | None = None
    lost: OSError | None = None  # why stdout could not be written (see _Guard)

    def reset(self) -> None:
        """A new command line (the tests call main() many times in one process)."""
        self.output, self.log_level, self.log_format, self.lost = "text", None, None, None
        self.quiet = False


STATE = _State()


def json_mode() -> bool:
    return STATE.output == "json"


def raw_mode() -> bool:
    """``--output raw``: a run prints its last step's output exactly (other commands print
    text)."""
    return STATE.output == "raw"


def quiet_mode() -> bool:
    """``-q``/``--quiet`` in text mode: stderr gets only warnings and failures, as under
    raw (cron mails whatever a job prints); a run's steps still print on stdout. JSON
    and raw print what they always do: the document, the last step's output."""
    return STATE.quiet and STATE.output == "text"


def workspace() -> Workspace:
    from pathlib import Path

    from runtime.home.layout import alias_notes
    from runtime.plan.workspace import Workspace

    environ = dict(os.environ)
    if not (quiet_mode() or raw_mode()):
        from runtime.cli.render import err

        for note in alias_notes(environ):
            err(f"note: {note}")
    return Workspace(environ=environ, cwd=Path.cwd(), warn=_warn)


def _warn(problem: Problem) -> None:
    """A warning of what the command loaded (the policy): on stderr, in every output mode
    (stdout keeps its one document, or the step's output alone)."""
    from runtime.cli.render import err, problem_line

    err(problem_line(problem, sys.stderr), styled=True)
    if problem.hint:
        err(f"  hint: {problem.hint}")


def ensure_home(
    ws: Workspace, *, verify: bool = False, needed: bool = True
) -> RefreshReport | None:
    """Cheap on every command: one small file read when Home is current.

    Returns what was refreshed; ``verify`` compares every file (``runtime bootstrap``).

    ``needed=False``, for the commands that only read (validate, show, ``capability
    list`` and ``spec``): a Home that cannot be made or refreshed (a read-only HOME, one
    that does not exist and cannot be created) is no error, since they write nothing
    there and read what is there; one that cannot be located at all (no HOME, no home in
    the password database) is an empty one, private to the command. Returns None then:
    the specs in Home may not be this version's.
    """
    import errno
    from pathlib import Path

    from runtime.errors import UsageError
    from runtime.home.layout import refresh

    try:
        root = ws.home.root
    except UsageError:
        if needed:
            raise
        ws.home = _empty_home(ws)
        return None
    try:
        return refresh(ws.home, verify=verify)
    except OSError as exc:
        blocked = home_in_the_way(ws)
        if blocked is not None:
            problem, fix = blocked
            raise UsageError(f"cannot prepare Runtime Home: {problem}", hint=fix) from None
        if not needed:
            return None
        why = exc.strerror or str(exc)
        at = Path(exc.filename) if exc.filename else root
        if at == root or root not in at.parents:
            raise UsageError(
                f"cannot prepare Runtime Home at {root}: {why}",
                hint="set RUNTIME_HOME to a writable folder",
            ) from None
        if exc.errno == errno.EISDIR and at.is_dir():
            raise UsageError(
                f"cannot prepare Runtime Home at {root}: {at} is a folder, not a file",
                hint=f"runtime writes a file there: move the folder away (mv {at} {at}.moved), "
                "then run `runtime bootstrap`",
            ) from None
        raise UsageError(
            f"cannot prepare Runtime Home at {root}: {at}: {why}",
            hint="make it writable, or set RUNTIME_HOME to a writable folder",
        ) from None


def _empty_home(ws: Workspace) -> Home:
    """A Home with nothing in it, for a command that only reads, where none can be located:
    a temporary folder, removed when the command ends."""
    import tempfile
    import weakref
    from pathlib import Path

    from runtime.home.layout import Home

    folder = tempfile.TemporaryDirectory(prefix="runtime-no-home-")
    weakref.finalize(ws, folder.cleanup)
    return Home(Path(folder.name))


def home_in_the_way(ws: Workspace) -> tuple[str, str] | None:
    """What is wrong and what to do when Home cannot be a folder because a file is where it
    (or a folder above it) would be; None when nothing is in the way."""
    from runtime.home.layout import in_the_way

    root = ws.home.root
    found = in_the_way(root)
    if found is None:
        return None
    at, what = found
    variable = bool(ws.environ.get("RUNTIME_HOME"))
    if at != root:
        problem = f"{root} cannot be created: {at} is {what}, not a folder"
    elif variable:
        problem = f"RUNTIME_HOME points at {what}, not a folder: {root}"
    else:
        problem = f"{root} is {what}, not a folder"
    away = f"move {at} away (mv {at} {at}.moved)"
    if variable:
        fix = f"set RUNTIME_HOME to a folder (a missing one is created), or {away}"
    else:
        fix = f"{away}, or set RUNTIME_HOME to a folder"
    return problem, fix


def guard_standard_streams() -> None:
    """Make the standard streams safe for whatever their descriptors turn out to be.

    A descriptor closed at start (``>&-``, ``<&-``) gets /dev/null, as git does
    (``sanitize_stdfds``): otherwise the next file runtime opens (the audit log) takes
    descriptor 1 or 2, and what is written there, or inherited by a program a step
    starts, lands in it. It is opened read-only: stdin reads as empty, and a write to
    stdout or stderr fails as it would on the closed descriptor.

    Then ``sys.stdout`` and ``sys.stderr`` write through :class:`_Guard`: a write that
    fails (closed, full, the reader gone) is lost, not raised, wherever it happens (our
    output, click's help), and a lost stdout is remembered for the exit code
    (:func:`lost_output`). Streams already replaced (a test's capture) are left alone.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDONLY)  # the lowest free descriptor: fd
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
        current = getattr(sys, name)
        if fd == 0:
            if current is None:
                sys.stdin = open(0, closefd=False)  # noqa: SIM115
        elif current is None or current is getattr(sys, f"__{name}__"):
            if current is not None:
                with contextlib.suppress(OSError):
                    current.flush()
            setattr(sys, name, _guarded(fd, current))


class _Guard(io.RawIOBase):
    """Descriptor 1 or 2, written as is; after a failed write, every write is dropped."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.failed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data: ReadableBuffer) -> int:
        if not self.failed:
            try:
                return os.write(self.fd, data)
            except BlockingIOError:
                raise
            except OSError as exc:
                self.failed = True
                if self.fd == 1 and STATE.lost is None:
                    STATE.lost = exc
        return memoryview(data).nbytes


def _guarded(fd: int, current: TextIO | None) -> io.TextIOWrapper:
    """``current`` (Python's stream for ``fd``, or None if it was closed) over a guard.

    In an encoding other than UTF-8 (a Latin-1 locale, ``PYTHONIOENCODING=ascii``) a
    character it cannot hold is written as its ``\\uXXXX`` escape (:data:`runtime.text.ESCAPE`), not
    raised: the output is whole, and a JSON document or event line stays valid JSON."""
    from runtime.text import ESCAPE, utf8

    encoding = getattr(current, "encoding", None)
    errors = getattr(current, "errors", None) or ("backslashreplace" if fd == 2 else None)
    if not utf8(encoding):
        errors = ESCAPE
    return io.TextIOWrapper(
        io.BufferedWriter(_Guard(fd)),
        encoding=encoding,
        errors=errors,
        line_buffering=getattr(current, "line_buffering", fd == 2),
        write_through=getattr(current, "write_through", False),
    )


def lost_output() -> OSError | None:
    """Why stdout could not be written, if it could not (the first error)."""
    return STATE.lost


def reader_gone() -> bool:
    """stdout was a pipe whose reader went away (EPIPE: what SIGPIPE would end us for)."""
    return isinstance(STATE.lost, BrokenPipeError)


def start_log(level: str | None, fmt: str | None) -> None:
    """Turn the diagnostic event stream on or off for this process (:mod:`runtime.log`):
    from ``--log-level`` / ``--log-format``, else ``RUNTIME_LOG_LEVEL`` /
    ``RUNTIME_LOG_FORMAT``; off by default, and then structlog is not imported. A value
    that is not one of the choices is a usage error (exit 2)."""
    from runtime import log

    try:
        chosen = log.settings(level, fmt)
    except log.LogSettingError as exc:
        from runtime.errors import UsageError

        raise UsageError(exc.message, hint=exc.hint) from None
    log.configure(chosen)
