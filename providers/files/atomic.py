"""Atomic writes for the files provider: a temporary file, flushed, renamed over the target.

The new content goes to a temporary file in the same folder, is flushed to
disk and renamed over the target (:func:`replace`): whatever survives a
crash is the old content or the new, never a mix. A file written over keeps
only the read and write bits of its old mode (never execute, setuid, setgid
or sticky bits), and its owner and group where this user may give them.

A temporary is named ``.NAME.runtime-tmp-PID-RANDOM-TAG``, where TAG is an
HMAC of the rest of the name keyed with Runtime Home's ``temporaries.key``
(:class:`TempNames`). The first write into a folder in a run removes the
temporaries of processes that are gone (:func:`sweep_stale`), and only names
whose TAG checks out: a file of the user's named like one (or made by a
runtime with another Home) is never deleted. Recognising one costs an HMAC of
its name; naming one costs no file access beyond reading the key once per run.

:func:`in_run` gives the helpers the run's names and the folders it swept;
the operations that call them are :mod:`providers.files.ops`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar

# The bits of an existing file's mode a write or append keeps: read and write only.
KEPT_MODE_BITS = 0o666
TEMP_MARK = ".runtime-tmp-"
_RANDOM_HEX = 12  # the RANDOM part of a temporary's name
_TAG_HEX = 16  # its TAG: 64 bits of HMAC-SHA256


def _temp_prefix(name: str) -> str:
    prefix = f".{name}{TEMP_MARK}"
    # Keep room for "{pid}-{random}-{tag}" under the usual 255-byte name limit.
    while len(os.fsencode(prefix)) > 200:
        name = name[:-1]
        prefix = f".{name}{TEMP_MARK}"
    return prefix


class TempNames:
    """Names of runtime's temporary files, and the test that a name is one of them.

    ``.NAME.runtime-tmp-PID-RANDOM-TAG``: TAG is the first 64 bits of
    HMAC-SHA256 of everything before ``-TAG``, keyed with Runtime Home's
    ``temporaries.key`` (a random secret made once, 0600). Without the key no
    one can make a name that passes :meth:`pid_of`, so a sweep deletes only
    files runtime created. When Home cannot hold a key, this process uses one
    of its own: its temporaries are then never recognised by a later run
    (left in place rather than risk a user's file).
    """

    _process_key: bytes | None = None

    def __init__(self, home_key: Callable[[], bytes | None]) -> None:
        self._home_key = home_key
        self._key: bytes | None = None

    @property
    def key(self) -> bytes:
        if self._key is None:
            key = self._home_key()
            if key is None:
                if TempNames._process_key is None:
                    TempNames._process_key = secrets.token_bytes(32)
                key = TempNames._process_key
            self._key = key
        return self._key

    def _tag(self, base: str) -> str:
        message = os.fsencode(base)
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()[:_TAG_HEX]

    def new(self, name: str, pid: int | None = None) -> str:
        """A fresh temporary's name for target ``name`` in process ``pid`` (this one)."""
        pid = os.getpid() if pid is None else pid
        base = f"{_temp_prefix(name)}{pid}-{secrets.token_hex(_RANDOM_HEX // 2)}"
        return f"{base}-{self._tag(base)}"

    def pid_of(self, candidate: str) -> int | None:
        """The PID of the process that made ``candidate``, if runtime made it; else ``None``."""
        head, mark, rest = candidate.rpartition(TEMP_MARK)
        if not mark or not head.startswith("."):
            return None
        parts = rest.split("-")
        if len(parts) != 3:
            return None
        pid, rand, tag = parts
        if not (pid.isascii() and pid.isdigit() and len(rand) == _RANDOM_HEX):
            return None
        if len(tag) != _TAG_HEX or not hmac.compare_digest(
            self._tag(candidate[: -_TAG_HEX - 1]), tag
        ):
            return None
        return int(pid)


# This run's TempNames (set by execute); a direct call of the helpers, outside any run,
# gets one keyed for this process only.
_NAMES: ContextVar[TempNames | None] = ContextVar("files_temp_names", default=None)


def _names() -> TempNames:
    return _NAMES.get() or TempNames(lambda: None)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


# Folders (device, inode) already swept in this run: a folder is listed once per run, not
# once per write (a 500-step workflow writing into one folder was quadratic). The set lives
# in the run's services; without one (a direct call in tests) every write sweeps.
_SWEPT: ContextVar[set[tuple[int, int]] | None] = ContextVar("files_swept", default=None)


def sweep_stale(fd: int, name: str) -> list[str]:
    """Remove temporary files left in this folder by runtime processes that are gone.

    Done by the first write or append into a folder in each run, for every target
    in it, so whatever a killed run left behind is gone after the next one. Only
    names :meth:`TempNames.pid_of` recognises are removed: never a file runtime did
    not create.
    """
    st_dir = os.fstat(fd)
    key = (st_dir.st_dev, st_dir.st_ino)
    swept = _SWEPT.get()
    if swept is not None:
        if key in swept:
            return []
        swept.add(key)
    removed: list[str] = []
    with os.scandir(fd) as entries:
        candidates = [e.name for e in entries if e.name.startswith(".") and TEMP_MARK in e.name]
    if not candidates:
        return removed
    names = _names()
    for candidate in candidates:
        pid = names.pid_of(candidate)
        if pid is None or pid == os.getpid() or _pid_alive(pid):
            continue
        try:
            st = os.stat(candidate, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                continue
            os.unlink(candidate, dir_fd=fd)
        except OSError:
            continue
        removed.append(candidate)
    return removed


def replace(fd: int, name: str, chunks: Iterable[bytes], replaced: os.stat_result | None) -> int:
    """Write ``chunks`` to a temporary file, flush it to disk, rename it over ``name``.

    ``replaced`` is the file it replaces: the new one keeps its read and write bits
    (:func:`_kept_mode`), and its owner and group where this user may give them (root,
    or a group it is in), as ``>`` would leave them; ``None`` creates it with 0o666 less
    the umask (the kernel applies it). Returns the bytes written.
    """
    mode = _kept_mode(replaced) if replaced is not None else None
    temp = _names().new(name)
    written = 0
    try:
        # created inside the try: a signal arriving as open() returns still removes it
        tfd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666,
            dir_fd=fd,
        )
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    n = os.write(tfd, view)
                    view = view[n:]
                    written += n
            if replaced is not None:
                _keep_owner(tfd, replaced)
            if mode is not None:
                os.fchmod(tfd, mode)  # after the owner: a chown clears setuid-like bits
            os.fsync(tfd)
        finally:
            os.close(tfd)
        os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp, dir_fd=fd)
        raise
    # The file's data is on disk before the rename, so whatever survives a crash or a
    # power loss is the old content or the new, never a mix. The folder itself is not
    # fsynced: after a power loss the rename may be lost (the old content remains), which
    # saves each write a second fsync, of its folder.
    return written


def _keep_owner(tfd: int, st: os.stat_result) -> None:
    """Give the new file the replaced one's owner and group, as far as this user may."""
    mine = os.fstat(tfd)
    if (mine.st_uid, mine.st_gid) == (st.st_uid, st.st_gid):
        return
    for uid, gid in ((st.st_uid, st.st_gid), (-1, st.st_gid)):
        try:
            os.fchown(tfd, uid, gid)
            return
        except PermissionError:  # not root: perhaps the group alone
            continue


def _kept_mode(st: os.stat_result) -> int:
    """An existing file's read and write bits: a write never keeps execute, setuid,
    setgid or sticky bits (replacing a script's content must not leave it runnable)."""
    return stat.S_IMODE(st.st_mode) & KEPT_MODE_BITS


@contextmanager
def in_run(names: TempNames, swept: set[tuple[int, int]]) -> Iterator[None]:
    """While a step runs: temporaries named with the run's ``names``, and each folder
    swept once in the run (``swept``, kept in the run's state)."""
    token = _SWEPT.set(swept)
    names_token = _NAMES.set(names)
    try:
        yield
    finally:
        _NAMES.reset(names_token)
        _SWEPT.reset(token)
