"""The audit log: one JSON line per event, appended to Home's ``audit/audit.jsonl``.

Each record is stamped, redacted and rendered as one JSON object (``event``
and ``time`` first, then the fields in the order the engine gives them), then
written with a single ``write`` on an ``O_APPEND`` descriptor under an
exclusive ``flock``, so records from concurrent runs never interleave. A
record that cannot be written is an error the caller must act on (the step
does not run).

The log rotates as logrotate does: when a record would take ``audit.jsonl``
past :attr:`Rotation.max_bytes`, the file becomes ``audit.jsonl.1`` (the older
ones move up to ``.2``, ``.3``..., and those past :attr:`Rotation.keep` are
deleted) and a new ``audit.jsonl`` begins. Only the holder of the current
file's lock rotates it; a writer that finds, once it holds the lock, that its
descriptor is no longer the current file (another process rotated it) opens
the new one. Readers hold a shared lock on the current file while they open
the files, so they see each rotated file once, oldest first.

A record is one :func:`runtime.text.json_dumps` of a dict the engine builds
(UTF-8 that the strictest JSON reader takes), rather than a trip through
structlog (which is the diagnostic stream, :mod:`runtime.log`, imported only
when ``--log-level`` turns it on): through structlog every ``execute`` would
import structlog, and rich, pygments and asyncio with it, and take more memory
than its budget allows (ARCHITECTURE.md, "Measured choices").
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NamedTuple

from runtime.execute import auditfile
from runtime.execute.auditfile import ATTEMPTS as _ATTEMPTS
from runtime.execute.auditfile import LogFile, current_size, stamp
from runtime.home.config import Rotation
from runtime.redact import Redactor
from runtime.text import json_dumps


class AuditError(Exception):
    """The audit log cannot be opened, written or read; ``path`` is the file at fault, and
    ``hint`` what would fix it, where that is known."""

    def __init__(self, message: str, path: Path | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.hint = hint


@dataclass
class Skipped:
    """The lines of one of the log's files that hold no record: how many, and the first."""

    path: Path
    count: int
    first_line: int
    why: str


class Origin(NamedTuple):
    """Who asked for a run, as its ``run.start`` and ``run.refused`` records say: ``cli``
    (the command line), or ``mcp`` with the client's name and version as its
    ``clientInfo`` gave them (None when it gave none)."""

    name: str = "cli"
    client: dict[str, str] | None = None

    def fields(self) -> dict[str, Any]:
        return {"origin": self.name, "client": self.client}


def new_run_id(clock: Callable[[], float] = time.time) -> str:
    stamp = datetime.fromtimestamp(clock(), UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(4)}"


# A string longer than this (characters) is recorded as its size, sha256 and first characters.
LONG_VALUE = 4096
HEAD_CHARS = 200
# A record still longer than this once its long strings are digests (many medium values:
# 300 args of 3,000 characters) keeps each long field as the digest of its JSON text.
MAX_RECORD = 64 * 1024


def digest(value: str) -> dict[str, Any]:
    """What the audit log keeps of a long value: its size in bytes, its sha256, its head."""
    import hashlib

    data = value.encode("utf-8", "surrogatepass")
    return {
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "head": value[:HEAD_CHARS],
    }


def _digested(value: Any) -> Any:
    if isinstance(value, str):
        return digest(value) if len(value) > LONG_VALUE else value
    if isinstance(value, dict):
        return {k: _digested(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_digested(v) for v in value]
    return value


def _bounded(record: dict[str, Any]) -> str:
    """``record`` as one line, each long string a digest; if that is still over
    :data:`MAX_RECORD`, each field whose JSON is long is the digest of its JSON text."""
    record = _digested(record)
    line = _encode(record)
    if len(line) <= MAX_RECORD:
        return line
    fields = {k: _encode(v) for k, v in record.items()}
    return _encode(
        {k: digest(fields[k]) if len(fields[k]) > LONG_VALUE else v for k, v in record.items()}
    )


def _encode(value: Any) -> str:
    # as every JSON runtime writes: I-JSON, a value JSON cannot hold as its text, and a
    # lone surrogate (a byte of a file name that is not UTF-8) as its escape
    return json_dumps(value)


def _is_current(fd: int, path: Path) -> bool:
    """Whether ``fd`` is the file at ``path`` (not one a rotation renamed away)."""
    return current_size(fd, str(path)) is not None


def rotated_files(path: Path) -> list[Path]:
    """``path.1``, ``path.2``... that exist, newest first."""
    return [Path(p) for p in auditfile.rotated_files(str(path))]


class AuditLog:
    def __init__(
        self,
        path: Path,
        redactor: Redactor,
        clock: Callable[[], float] = time.time,
        rotation: Rotation | None = None,
    ) -> None:
        self.path = path
        self.redactor = redactor
        self.clock = clock
        self.rotation = rotation or Rotation()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.file = LogFile(str(path))
        except OSError as exc:
            raise AuditError(f"cannot open the audit log {path}: {exc.strerror or exc}") from None

    def record(self, event: str, **fields: Any) -> None:
        record = {"event": event, "time": stamp(self.clock()), **fields}
        line = _encode(record)
        if len(line) > LONG_VALUE:
            # a long value (a 1 MiB input, substituted into many args) is stored as what
            # identifies it, not again in full in every record that names it; redacted
            # first, so that a head cut in the middle of a secret holds none of it
            line = _bounded(self.redactor.data(record))
        elif self.redactor.may_change_json(line):
            line = _encode(self.redactor.data(record))
        try:
            self.file.append(
                (line + "\n").encode("utf-8"), self.rotation.max_bytes, self.rotation.keep
            )
        except OSError as exc:
            raise AuditError(
                f"cannot write to the audit log {self.path}: {exc.strerror or exc}"
            ) from None

    def close(self) -> None:
        self.file.close()


def _open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file; :class:`NotRegularFile` if it
    is not (a named pipe would block the open, a folder fail the read)."""
    from runtime.reading import NotRegularFile, kind

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        what = kind(os.fstat(fd).st_mode)
        if what is not None:
            raise NotRegularFile(path, what)
        os.set_blocking(fd, True)
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _open_files(path: Path) -> list[tuple[Path, IO[bytes]]]:
    """The log's files, oldest first, opened while no rotation can move them."""
    for _ in range(_ATTEMPTS):
        try:
            current: IO[bytes] | None = _open_regular(path)
        except FileNotFoundError:
            current = None
        if current is not None:
            fcntl.flock(current.fileno(), fcntl.LOCK_SH)
            if not _is_current(current.fileno(), path):
                current.close()  # rotated between the open and the lock
                continue
        files: list[tuple[Path, IO[bytes]]] = []
        try:
            for old in reversed(rotated_files(path)):
                with contextlib.suppress(FileNotFoundError):
                    files.append((old, _open_regular(old)))
        except BaseException:
            for _, fh in files:
                fh.close()
            if current is not None:
                current.close()  # and its lock with it
            raise
        if current is not None:
            fcntl.flock(current.fileno(), fcntl.LOCK_UN)
            files.append((path, current))
        return files
    raise OSError(f"{path} kept being replaced while it was read")


def _unreadable(path: Path, exc: OSError) -> AuditError:
    """Why a file of the log at ``path`` cannot be read, naming the file (or folder) at
    fault and what would let it be read."""
    import errno

    at = Path(exc.filename) if exc.filename else path
    why = exc.strerror or str(exc)
    if exc.errno == errno.ENOTDIR:  # audit/ itself is not a folder
        at, why = path.parent, "it is not a folder"
    elif exc.errno in (errno.EACCES, errno.EPERM) and not os.access(at.parent, os.R_OK | os.X_OK):
        at = at.parent
        hint = f"let yourself read the folder (chmod u+rx {at})"
        return AuditError(f"cannot read the audit log {at}: {why}", at, hint)
    hint = f"move it away (mv {at} {at}.broken)"
    if at in (path, path.parent):
        hint += "; the next run starts a new log"
    if exc.errno in (errno.EACCES, errno.EPERM):
        hint = f"let yourself read it (chmod u+r {at}), or {hint}"
    return AuditError(f"cannot read the audit log {at}: {why}", at, hint)


def _parsed(raw: bytes) -> tuple[Any, str | None]:
    """A line's record, or why it holds none (a line a killed writer tore, a hand edit)."""
    try:
        line = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, "not UTF-8"
    if not line:
        return None, None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested past what a record holds
        return None, "not JSON"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    # what every record runtime writes has, and what audit.schema.json promises a reader
    for key in ("event", "time"):
        if not isinstance(value.get(key), str):
            return None, f"its '{key}' is not a string"
    if not isinstance(value.get("run_id", ""), str):
        return None, "its 'run_id' is not a string"
    return value, None


def read_records(path: Path, skipped: list[Skipped] | None = None) -> Iterator[dict[str, Any]]:
    """Every whole record of the log and its rotated files, oldest first.

    A line that holds no record (torn, not UTF-8, not a JSON object with a string
    ``event`` and ``time``) is skipped, never fatal; ``skipped`` gets one entry for each
    file that had such lines. A file that cannot be read (not a regular file, no
    permission) is :class:`AuditError`.
    """
    try:
        files = _open_files(path)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    try:
        for where, fh in files:
            found: Skipped | None = None
            try:
                for number, raw in enumerate(fh, 1):
                    value, why = _parsed(raw)
                    if value is not None:
                        yield value
                    elif why is not None:
                        if found is None:
                            found = Skipped(where, 0, number, why)
                        found.count += 1
            except OSError as exc:
                raise _unreadable(where, exc) from None
            if found is not None and skipped is not None:
                skipped.append(found)
    finally:
        for _, fh in files:
            fh.close()


def run_states(records: Iterable[dict[str, Any]], host: str | None = None) -> dict[str, str]:
    """The state of each run that started in ``records`` and has no ``run.end``.

    ``running`` while the process that started it is alive on this host, else
    ``abandoned``: it was killed (SIGKILL, a power cut) before it could record
    its end, so its last step may have been cut short.
    """
    import socket

    here = host if host is not None else socket.gethostname()
    started: dict[str, dict[str, Any]] = {}
    for record in records:
        run_id = record.get("run_id")
        if not isinstance(run_id, str):
            continue
        if record.get("event") == "run.start":
            started[run_id] = record
        elif record.get("event") in ("run.end", "run.refused"):
            started.pop(run_id, None)
    states: dict[str, str] = {}
    for run_id, record in started.items():
        pid = record.get("pid")
        alive = (
            record.get("host") == here
            and isinstance(pid, int)
            and not isinstance(pid, bool)
            and _alive(pid)
        )
        states[run_id] = "running" if alive else "abandoned"
    return states


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: no pid is that large
        return False
    except OSError:
        return True  # it exists, and belongs to someone else
    return True
