"""The audit log's line discipline: every record whole, on a line of its own."""

from __future__ import annotations

import json
from pathlib import Path

from runtime.audit import AuditLog, read_records
from runtime.redact import REDACTED, Redactor


def test_a_torn_line_written_between_two_records_does_not_swallow_the_next(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, Redactor())
    log.record("first", step=1)
    with open(path, "a", encoding="utf-8") as other:  # another writer, killed mid-record
        other.write('{"event": "torn", "ste')
    log.record("second", step=2)
    log.record("third", step=3)
    log.close()
    assert [r["event"] for r in read_records(path)] == ["first", "second", "third"]
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1] == '{"event": "torn", "ste'
    assert json.loads(lines[2])["event"] == "second"


def test_records_keep_event_and_time_first_and_redact_registered_secrets(tmp_path: Path) -> None:
    redactor = Redactor()
    redactor.add("s3cr3t-token-value")
    log = AuditLog(tmp_path / "audit.jsonl", redactor, clock=lambda: 0.0)
    log.record("step", args=["--token", "s3cr3t-token-value"], step=1)
    log.close()
    line = (tmp_path / "audit.jsonl").read_text(encoding="utf-8")
    assert line.startswith('{"event": "step", "time": "1970-01-01T00:00:00.000+00:00", ')
    assert "s3cr3t-token-value" not in line
    assert json.loads(line)["args"] == ["--token", REDACTED]
