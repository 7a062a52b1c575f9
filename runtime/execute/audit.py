"""The audit log: one JSON line per event, appended to Home's ``audit/audit.jsonl``.

Each record is stamped, redacted and rendered as one JSON object (``event``
and ``time`` first, then the fields in the order the engine gives them), then
written with a single ``write`` on an ``O_APPEND`` descriptor under an
exclusive ``flock``, so records from concurrent runs never interleave. A
record that cannot be written is an error the caller must act on (the step
does not run).

A record is one ``json.dumps`` of a dict the engine builds, rather than a
trip through structlog (which is the diagnostic stream, :mod:`runtime.log`,
imported only when ``--log-level`` turns it on). Measured 2026-12-01 against
the same records through a structlog chain (stamp, redact, digest, render):
per step the chain adds ~33 us (two records: ~59 us against ~26 us), within
the per-step budgets; but every ``execute`` would import structlog, and rich,
pygments and asyncio with it: bench figure 8's peak RSS went from 27.2 to
35.9 MiB (1.32 times, past the 1.2x budget) and a one-step run from 185 to
276 ms (``bench/README.md``, "Logging and the audit log").
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtime.redact import Redactor


class AuditError(Exception):
    pass


def new_run_id(clock: Callable[[], float] = time.time) -> str:
    stamp = datetime.fromtimestamp(clock(), UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(4)}"


# A string longer than this (characters) is recorded as its size, sha256 and first characters.
LONG_VALUE = 4096
HEAD_CHARS = 200


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


def _encode(value: Any) -> str:
    try:
        return json.dumps(value)
    except TypeError:  # a value JSON cannot hold: recorded as its text
        return json.dumps(value, default=str)


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


def _append(fd: int, line: str) -> None:
    """Append one line to ``fd`` under an exclusive lock, on a line of its own."""
    data = (line + "\n").encode("utf-8")
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        # a process killed in the middle of a record leaves a partial line: start on a
        # line of our own, so this record stays whole (the torn one is skipped on read)
        size = os.lseek(fd, 0, os.SEEK_END)
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


class AuditLog:
    def __init__(
        self, path: Path, redactor: Redactor, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = path
        self.redactor = redactor
        self.clock = clock
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            raise AuditError(f"cannot open the audit log {path}: {exc.strerror or exc}") from None

    def record(self, event: str, **fields: Any) -> None:
        record = {"event": event, "time": _stamp(self.clock()), **fields}
        line = _encode(record)
        if len(line) > LONG_VALUE:
            # a long value (a 1 MiB input, substituted into many args) is stored as what
            # identifies it, not again in full in every record that names it; redacted
            # first, so that a head cut in the middle of a secret holds none of it
            line = _encode(_digested(self.redactor.data(record)))
        elif self.redactor.may_change_json(line):
            line = _encode(self.redactor.data(record))
        try:
            _append(self.fd, line)
        except OSError as exc:
            raise AuditError(
                f"cannot write to the audit log {self.path}: {exc.strerror or exc}"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every whole record; a torn or foreign line is skipped, never fatal."""
    if not path.exists():
        return
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def run_states(records: list[dict[str, Any]], host: str | None = None) -> dict[str, str]:
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
        alive = record.get("host") == here and isinstance(pid, int) and _alive(pid)
        states[run_id] = "running" if alive else "abandoned"
    return states


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, and belongs to someone else
    return True
