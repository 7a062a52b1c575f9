"""Cancelling a run from another thread, as a signal ends one in the main thread.

The MCP server (``runtime mcp serve``) walks each tool call in a worker thread;
a client's ``notifications/cancelled`` arrives in the event loop's thread,
where no signal handler can reach the worker. A :class:`Cancellation` is what
that thread sets: the run checks it before each step, and the program a step
is running watches its descriptor as it watches its pipes
(:mod:`runtime.execute.process`), so a cancellation ends the step's process
group at once (SIGTERM, a grace, SIGKILL), never after the step would have
ended. The step ends as :class:`~runtime.errors.Cancelled` and the run is
recorded as any interrupted run is.

A run is made cancellable for the thread that executes it
(:func:`cancellable`); code that starts a program asks :func:`current`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from runtime.errors import Cancelled, Terminated

_local = threading.local()


class Cancellation:
    """Set once, from any thread; readable (its descriptor) once set."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._set = threading.Event()
        self._by: Terminated | None = None

    @property
    def cancelled(self) -> bool:
        return self._set.is_set()

    def cancel(self, by: Terminated | None = None) -> None:
        """Cancel the run: as the client's cancellation, or ``by`` a signal the server
        got (the step then ends as that signal ends one)."""
        if self._set.is_set():
            return
        self._by = by
        self._set.set()
        with contextlib.suppress(OSError):  # full or closed: it was written already
            os.write(self._write, b"x")

    def fileno(self) -> int:
        """Readable once cancelled: what a program's wait watches besides its pipes."""
        return self._read

    def check(self) -> None:
        """Raise :class:`~runtime.errors.Cancelled` once cancelled (or what ended it)."""
        if self._set.is_set():
            raise self._by if self._by is not None else Cancelled()

    def close(self) -> None:
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def cancellable(cancellation: Cancellation | None) -> Iterator[None]:
    """While the block runs, what this thread starts watches ``cancellation``."""
    before = getattr(_local, "cancellation", None)
    _local.cancellation = cancellation
    try:
        yield
    finally:
        _local.cancellation = before


def current() -> Cancellation | None:
    """The cancellation this thread's run watches, if it has one."""
    found: Cancellation | None = getattr(_local, "cancellation", None)
    return found


def check() -> None:
    """Raise :class:`~runtime.errors.Cancelled` if this thread's run was cancelled."""
    found = current()
    if found is not None:
        found.check()
