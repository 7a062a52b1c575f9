"""The audit log: one JSON line per event, appended to Home's ``audit/audit.jsonl``.

Each record is stamped, redacted and rendered as one JSON object (``event``
and ``time`` first, then the fields in the order the engine gives them), then
written with a single ``write`` on an ``O_APPEND`` descriptor under an
exclusive ``flock``, so records from concurrent runs never interleave. A
record that cannot be written is an error the caller must act on (the step
does not run).

The records are rendered with :mod:`json` directly rather than through
structlog's processor chain: importing structlog costs about 0.17 s here
(it imports its console renderer, and rich with it) and its chain about
0.15 ms a record, two records a step (measured in ``bench/``, figure 5).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
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


# Keys in a fixed order rather than sorted: as deterministic, and sorting cost about
# half of the encoding (bench/, figures 5-7). Records are trees the engine builds (no
# cycles to look for).
_ENCODER = json.JSONEncoder(check_circular=False)
_LENIENT = json.JSONEncoder(default=str, check_circular=False)  # ~5 us slower a record


def _one_shot(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode``, with the C encoder made once instead of once per call.

    ``JSONEncoder.encode`` builds its C encoder object on every call (a tenth of a
    record's cost, bench/ figure 6). Same output: the arguments are the ones
    ``JSONEncoder.iterencode`` passes. Falls back to ``encode`` without the C module.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None or encoder.indent is not None:
        return encoder.encode
    c_encoder = make(
        None,  # no cycle check (check_circular=False)
        encoder.default,
        json.encoder.encode_basestring_ascii,
        encoder.indent,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )

    def encode(value: Any) -> str:
        if isinstance(value, str):  # as encode() does: a bare string is not a record
            return encoder.encode(value)
        return "".join(c_encoder(value, 0))

    return encode


_encode_strict = _one_shot(_ENCODER)
_encode_lenient = _one_shot(_LENIENT)


class _Stamps:
    """``datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")``, faster.

    The date and time up to the second are formatted once per second (records come
    in bursts); the microseconds are rounded as ``datetime`` rounds them. Making and
    formatting a ``datetime`` was about a third of a record's cost (bench/, figure 6).
    """

    def __init__(self) -> None:
        self._second: int | None = None
        self._prefix = ""

    def __call__(self, t: float) -> str:
        fraction, whole = math.modf(t)
        micros = round(fraction * 1e6)
        if micros >= 1_000_000:
            whole, micros = whole + 1, micros - 1_000_000
        elif micros < 0:
            whole, micros = whole - 1, micros + 1_000_000
        second = int(whole)
        if second != self._second:
            self._prefix = datetime.fromtimestamp(second, UTC).isoformat()[: -len("+00:00")]
            self._second = second
        return f"{self._prefix}.{micros // 1000:03d}+00:00"


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
        return _encode_strict(value)
    except TypeError:  # a value JSON cannot hold: recorded as its text
        return _encode_lenient(value)


def _append(fd: int, line: str, our_end: int) -> int:
    """Append one line to ``fd`` under an exclusive lock, on a line of its own.

    ``our_end`` is where this process's previous record ended (-1 if none): when
    the file still ends there, its last byte is that record's newline. Returns
    where this record ends.
    """
    data = (line + "\n").encode("utf-8")
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        # a process killed in the middle of a record leaves a partial line: start on a
        # line of our own, so this record stays whole (the torn one is skipped on read)
        size = os.lseek(fd, 0, os.SEEK_END)  # the size; not fstat, whose result is ~30 objects
        if size and size != our_end and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        return size + written
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


class AuditLog:
    def __init__(
        self, path: Path, redactor: Redactor, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = path
        self._end = -1  # where this process's last record ended
        self.redactor = redactor
        self.clock = clock
        self._stamp = _Stamps()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            raise AuditError(f"cannot open the audit log {path}: {exc.strerror or exc}") from None

    def record(self, event: str, **fields: Any) -> None:
        record = {"event": event, "time": self._stamp(self.clock()), **fields}
        line = _encode(record)
        if len(line) > LONG_VALUE:
            # a long value (a 1 MiB input, substituted into many args) is stored as what
            # identifies it, not again in full in every record that names it; redacted
            # first, so that a head cut in the middle of a secret holds none of it
            line = _encode(_digested(self.redactor.data(record)))
        elif self.redactor.may_change_json(line):
            line = _encode(self.redactor.data(record))
        try:
            self._end = _append(self.fd, line, self._end)
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
