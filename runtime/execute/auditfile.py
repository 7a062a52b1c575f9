"""The audit log's file: appending one line under the lock, rotating, the record's stamp.

:class:`runtime.execute.audit.AuditLog` writes through :class:`LogFile`, and so does
the shell-hook guard (``runtime agent hook``, :mod:`runtime.agent.hook`), which runs
on every shell command an assistant issues and so imports only what it uses: this
module needs nothing but the standard library's ``os``, ``fcntl``, ``re`` and
``time`` (ARCHITECTURE.md, "Measured choices"). How the log is locked and rotated is
described in :mod:`runtime.execute.audit`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time

# Attempts to find the current file before a record is given up (it is replaced only by
# a rotation, so more than two means something else keeps replacing it).
ATTEMPTS = 10


def stamp(t: float) -> str:
    """A record's ``time``: UTC, to the millisecond, as ``datetime.isoformat`` writes it."""
    ms = int(t * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}+00:00"


def rotated_files(path: str) -> list[str]:
    """``path.1``, ``path.2``... that exist, newest first."""
    folder, name = os.path.split(path)
    pattern = re.compile(re.escape(name) + r"\.([1-9][0-9]*)")
    try:
        names = os.listdir(folder or ".")
    except FileNotFoundError:
        return []
    found = [(int(m.group(1)), n) for n in names if (m := pattern.fullmatch(n))]
    return [os.path.join(folder, n) for _, n in sorted(found)]


def current_size(fd: int, path: str) -> int | None:
    """The size of the file open at ``fd`` if it is the file at ``path``; None if a
    rotation renamed it away."""
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return None
    st = os.fstat(fd)
    return st.st_size if (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino) else None


def _rotate(path: str, keep: int) -> None:
    """``path`` becomes ``path.1``, ``path.N`` becomes ``path.N+1``; files past ``keep``
    are deleted. Called holding the lock of the current file: one rotation at a time."""
    for old in reversed(rotated_files(path)):
        number = int(old.rsplit(".", 1)[1])
        if number >= keep:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(old)
        else:
            os.replace(old, f"{path}.{number + 1}")
    os.replace(path, f"{path}.1")


def _write_line(fd: int, size: int, data: bytes) -> None:
    # a process killed in the middle of a record leaves a partial line: start on a
    # line of our own, so this record stays whole (the torn one is skipped on read)
    if size and os.pread(fd, 1, size - 1) != b"\n":
        data = b"\n" + data
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])


class LogFile:
    """The current file of the log at ``path``, open for appending (``OSError`` if it
    cannot be opened; the caller makes its folder)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = self._open()

    def _open(self) -> int:
        return os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)

    def append(self, data: bytes, max_bytes: int, keep: int) -> None:
        """Append ``data`` (one record and its newline) to the current file under its
        exclusive lock, on a line of its own; first rotate the file if ``data`` would take
        it past ``max_bytes`` (keeping ``keep`` rotated files)."""
        for _ in range(ATTEMPTS):
            fd = self.fd
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                size = current_size(fd, self.path)
                if size is not None:
                    if not size or size + len(data) <= max_bytes:
                        _write_line(fd, size, data)
                        return
                    _rotate(self.path, keep)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            # rotated, by this process or another: the record goes to the new file
            self.fd = self._open()
            os.close(fd)
        raise OSError(f"{self.path} was replaced {ATTEMPTS} times while a record was written")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
