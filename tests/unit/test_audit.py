"""The audit log's line discipline: every record whole, on a line of its own."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from runtime.execute.audit import AuditLog, read_records, rotated_files
from runtime.home.config import Rotation
from runtime.redact import REDACTED, Redactor
from runtime.text import json_dumps


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


def test_a_torn_line_left_before_the_log_was_opened_does_not_swallow_a_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"event": "whole", "time": "t"}\n{"event": "torn", "ste', encoding="utf-8")
    first, second = AuditLog(path, Redactor()), AuditLog(path, Redactor())
    first.record("first")
    second.record("second")  # two writers, each after the other's record
    first.record("third")
    first.close()
    second.close()
    assert [r["event"] for r in read_records(path)] == ["whole", "first", "second", "third"]


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


def test_record_time_comes_from_the_clock(tmp_path: Path) -> None:
    times = iter([1764478000.25, 1764478000.9996, 1764478061.0])
    log = AuditLog(tmp_path / "audit.jsonl", Redactor(), clock=lambda: next(times))
    for event in ("a", "b", "c"):
        log.record(event)
    log.close()
    assert [r["time"] for r in read_records(tmp_path / "audit.jsonl")] == [
        "2025-11-30T04:46:40.250+00:00",
        "2025-11-30T04:46:40.999+00:00",
        "2025-11-30T04:47:41.000+00:00",
    ]


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=12), _JSON_VALUES, max_size=6))
def test_a_record_is_one_json_line_with_event_and_time_first(
    tmp_path_factory: pytest.TempPathFactory, fields: dict[str, object]
) -> None:
    fields = {k: v for k, v in fields.items() if k not in ("event", "time")}
    assume("://" not in json.dumps(fields))  # a URL with userinfo would be redacted
    path = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    log = AuditLog(path, Redactor(), clock=lambda: 1764478000.25)
    log.record("step", **fields)
    log.close()
    (line,) = path.read_text(encoding="utf-8").splitlines()
    expected = {"event": "step", "time": "2025-11-30T04:46:40.250+00:00", **fields}
    # keys in the order given, JSON's default separators, UTF-8 as every JSON runtime writes
    assert line == json_dumps(expected)


def test_a_value_json_cannot_hold_is_recorded_as_its_text(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl", Redactor())
    log.record("a", path=tmp_path, data={"when": datetime(2026, 1, 2, tzinfo=UTC)})
    log.close()
    (record,) = read_records(tmp_path / "audit.jsonl")
    assert record["path"] == str(tmp_path)
    assert record["data"] == {"when": "2026-01-02 00:00:00+00:00"}


def test_a_writer_whose_file_another_rotated_writes_to_the_new_file(tmp_path: Path) -> None:
    """Two writers (two processes) on one log: the one that did not rotate it finds, under
    the lock, that its descriptor is an old file now, and writes to the current one."""
    path = tmp_path / "audit.jsonl"
    small = Rotation(max_bytes=1024, keep=3)
    first = AuditLog(path, Redactor(), rotation=small)
    second = AuditLog(path, Redactor(), rotation=small)
    for i in range(40):
        first.record("first", i=i, pad="x" * 100)
    second.record("second")
    first.close()
    second.close()
    assert [p.name for p in rotated_files(path)] == [f"audit.jsonl.{n}" for n in (1, 2, 3)]
    assert all(p.stat().st_size <= 1024 for p in [path, *rotated_files(path)])
    events = [r["event"] for r in read_records(path)]
    assert events[-1] == "second"
    kept = [r["i"] for r in read_records(path) if r["event"] == "first"]
    assert kept == list(range(40 - len(kept), 40))  # the oldest went with the file past keep


def test_lowering_keep_drops_the_files_past_it_at_the_next_rotation(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, Redactor(), rotation=Rotation(max_bytes=1024, keep=5))
    for i in range(60):
        log.record("a", i=i, pad="x" * 100)
    assert len(rotated_files(path)) == 5
    log.rotation = Rotation(max_bytes=1024, keep=2)
    for i in range(10):
        log.record("b", i=i, pad="x" * 100)
    log.close()
    assert [p.name for p in rotated_files(path)] == ["audit.jsonl.1", "audit.jsonl.2"]


def test_a_record_of_many_medium_values_is_bounded(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl", Redactor())
    log.record("step", step=1, args=["m" * 3000] * 300, status="ok")
    log.close()
    (record,) = read_records(tmp_path / "audit.jsonl")
    assert (tmp_path / "audit.jsonl").stat().st_size < 2048
    assert record["step"] == 1 and record["status"] == "ok"
    assert record["args"]["size"] == len(json.dumps(["m" * 3000] * 300))
