"""Reading a file the user named, without ever blocking.

A capability, the policy file, ``config.yaml``, ``contexts.json``, an ``--input
key=@FILE``: any of them may turn out to be a named pipe (whose ``open`` waits for a
writer, for ever if none comes), a device (``/dev/zero`` never ends) or a socket. Each
is opened with ``O_NONBLOCK`` and judged by ``fstat`` of the descriptor it opened (a
check of the path before the open could be raced), and only a regular file is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind(mode: int) -> str | None:
    """What a file of this mode is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((words for test, words in _KINDS if test(mode)), "not a file")


class NotRegularFile(OSError):
    """The path names something other than a regular file; ``strerror`` says what."""

    def __init__(self, path: str | Path, what: str) -> None:
        super().__init__(errno.EINVAL, f"it is {what}, not a regular file", str(path))
        self.what = what

    def __str__(self) -> str:  # where the path is already said, as strerror is
        return str(self.strerror)


def read_file(path: str | Path, limit: int | None = None, *, pipes: bool = False) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit``); :class:`OSError` if it
    cannot be read, :class:`NotRegularFile` if it is not a regular file.

    ``pipes``: a pipe is read too, until its writer closes it (``--input key=@<(cmd)``);
    a named pipe that no writer has open reads as empty instead of waiting for one.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if pipes and stat.S_ISFIFO(mode):
            os.set_blocking(fd, True)
        elif (what := kind(mode)) is not None:
            raise NotRegularFile(path, what)
        chunks: list[bytes] = []
        total = 0
        while limit is None or total < limit:
            chunk = os.read(fd, 65536 if limit is None else min(65536, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def position(data: bytes, offset: int) -> tuple[int, int]:
    """The 1-based line and column of byte ``offset`` in ``data`` (where a decoder
    stopped): for a FILE:LINE:COL that names a byte that is not UTF-8."""
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1
