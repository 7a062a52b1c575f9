"""The audit log: one JSON line per event, appended to Home's ``audit/audit.jsonl``.

Records are rendered by structlog with a redaction processor and written
with a single ``write`` on an ``O_APPEND`` descriptor under an exclusive
``flock``, so records from concurrent runs never interleave. A record that
cannot be written is an error the caller must act on (the step does not run).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtime.redact import Redactor


class AuditError(Exception):
    pass


def new_run_id(clock: Callable[[], float] = time.time) -> str:
    stamp = datetime.fromtimestamp(clock(), UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(4)}"


class _AppendLogger:
    """A structlog logger that appends one line per message to a file descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def msg(self, message: str) -> None:
        data = (message + "\n").encode("utf-8")
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        try:
            # a process killed in the middle of a record leaves a partial line: start on a
            # line of our own, so this record stays whole (the torn one is skipped on read)
            size = os.fstat(self.fd).st_size
            if size and os.pread(self.fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            written = 0
            while written < len(data):
                written += os.write(self.fd, data[written:])
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    info = msg


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
        import structlog

        def redact(_: Any, __: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
            return self.redactor.data(dict(event))  # type: ignore[no-any-return]

        def stamp(_: Any, __: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
            event["time"] = datetime.fromtimestamp(self.clock(), UTC).isoformat(
                timespec="milliseconds"
            )
            return event

        self._log = structlog.wrap_logger(
            _AppendLogger(self.fd),
            processors=[
                stamp,
                redact,
                structlog.processors.JSONRenderer(sort_keys=True, default=str),
            ],
        )

    def record(self, event: str, **fields: Any) -> None:
        try:
            self._log.info(event, **fields)
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
