"""What every command of the CLI shares: the output mode, the workspace, Runtime Home.

Kept apart from :mod:`runtime.cli` (the application and its entry point) so that
the command modules, which the application imports lazily, import this and not
the package that imports them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any


class _State:
    output: str = "text"
    lost: OSError | None = None  # why stdout could not be written (see write)


STATE = _State()


def json_mode() -> bool:
    return STATE.output == "json"


def workspace() -> Any:
    from pathlib import Path

    from runtime.workspace import Workspace

    return Workspace(environ=dict(os.environ), cwd=Path.cwd())


def ensure_home(ws: Any, *, verify: bool = False) -> Any:
    """Cheap on every command: one small file read when Home is current.

    Returns what was refreshed; ``verify`` compares every file (``runtime bootstrap``).
    """
    from runtime.errors import UsageError
    from runtime.home.layout import refresh

    try:
        return refresh(ws.home, verify=verify)
    except OSError as exc:
        raise UsageError(
            f"cannot prepare Runtime Home at {ws.home.root}: {exc.strerror or exc}",
            hint="set RUNTIME_HOME to a writable folder",
        ) from None


def open_standard_streams() -> None:
    """Give every standard descriptor closed at start (``>&-``, ``<&-``) a /dev/null,
    as git does (``sanitize_stdfds``).

    Otherwise the next file runtime opens (the audit log) takes descriptor 1 or 2, and
    whatever is written there, or inherited by a program a step starts, lands in it.
    It is opened read-only: stdin reads as empty, and a write to stdout or stderr fails
    as it would on the closed descriptor, so :func:`write` finds out that the output is
    lost. Python left ``sys.stdin``/``stdout``/``stderr`` ``None`` for such a descriptor.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        opened = os.open(os.devnull, os.O_RDONLY)  # the lowest free descriptor: this one
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
        if getattr(sys, name) is None:  # as Python opens them; stderr line-buffered
            stream = open(  # noqa: SIM115
                fd, "r" if fd == 0 else "w", buffering=1 if fd == 2 else -1, closefd=False
            )
            setattr(sys, name, stream)


def write(stream: Any, text: str, *, flush: bool = False) -> None:
    """Write to ``sys.stdout`` or ``sys.stderr``; never raises for the stream itself.

    A stream that cannot be written (closed, full, its reader gone) is lost, not a
    failure of the command: it is pointed at /dev/null, so that nothing more fails (the
    interpreter's last flush included), and a lost stdout is remembered
    (:func:`lost_output`), for the exit code. A lost stderr just stays silent: there is
    nowhere left to say anything.
    """
    try:
        stream.write(text)
        if flush:
            stream.flush()
    except OSError as exc:
        lose(stream, exc)


def flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except OSError as exc:
        lose(sys.stdout, exc)


def lose(stream: Any, exc: OSError) -> None:
    """``stream`` failed with ``exc``: see :func:`write`."""
    if stream is sys.stdout and STATE.lost is None:
        STATE.lost = exc
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def lost_output() -> OSError | None:
    """Why stdout could not be written, if it could not (the first error)."""
    return STATE.lost


def reader_gone() -> bool:
    """stdout was a pipe whose reader went away (EPIPE: what SIGPIPE would end us for)."""
    return isinstance(STATE.lost, BrokenPipeError)
