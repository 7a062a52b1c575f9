"""File names that are not UTF-8, through the CLI: every JSON document runtime writes stays
valid Unicode (I-JSON, RFC 7493), which strict readers (Rust's serde_json) require.

Python holds such a name's byte as a lone surrogate (``b"caf\\xff.txt"`` is
``"caf\\udcff.txt"``); JSON's ``"\\udcff"`` escape is valid syntax but no character, and
a strict reader refuses the whole document for it. runtime writes it as the six
characters of its escape, ``caf\\udcff.txt``, as text output shows it, in the
``--output json`` documents (step data, args, errors), the audit log and the JSON
event stream.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.conftest import base_env, check_schema, run_checkout, write

NAME = os.fsdecode(b"caf\xff.txt")  # what Python makes of the byte 0xff in a name
SHOWN = "caf\\udcff.txt"  # what every output shows: the escape, as text
OTHER = os.fsdecode(b"caf\xfe.txt")  # another byte: another name


def strict(text: str) -> Any:
    """``text`` parsed as a strict JSON reader would: UTF-8, and no string in it that is
    not Unicode (json.loads takes a ``"\\udcff"`` escape; encoding its string fails)."""
    text.encode("utf-8")  # a raw lone surrogate
    doc = json.loads(text)
    json.dumps(doc, ensure_ascii=False).encode("utf-8")  # an escaped one
    return doc


def strings(value: Any) -> list[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def audit_lines(home: Path) -> list[str]:
    return (home / "audit" / "audit.jsonl").read_bytes().decode("utf-8").splitlines()


def test_files_list_names_a_file_that_is_not_utf8_in_strict_json(cli, work: Path) -> None:
    (work / "d").mkdir()
    for name in (NAME, OTHER, "plain.txt"):
        with open(os.fsencode(work / "d" / name), "w") as fh:
            fh.write("x\n")
    text = cli("files", "list", "d")
    assert text.code == 0, text.stderr
    assert SHOWN in text.stdout and "caf\\udcfe.txt" in text.stdout
    result = cli("--output", "json", "files", "list", "d")
    assert result.code == 0, result.stderr
    doc = strict(result.stdout)
    check_schema(doc, "execute")
    names = [e["name"] for e in doc["steps"][0]["data"]["entries"]]
    # each file still told apart, spelt as the text output spells it
    assert names == ["caf\\udcfe.txt", SHOWN, "plain.txt"]


def test_every_json_output_of_a_step_on_such_a_file_is_strict(cli, work: Path, home: Path) -> None:
    with open(os.fsencode(work / NAME), "w") as fh:
        fh.write("hello\n")
    read = cli("--output", "json", "files", "read", NAME)
    assert read.code == 0, read.stderr
    step = strict(read.stdout)["steps"][0]
    assert step["args"] == ["read", SHOWN]
    assert step["data"]["path"] == SHOWN and step["data"]["content"] == "hello\n"
    written = cli("--output", "json", "files", "append", NAME, "more")
    assert written.code == 0, written.stderr
    assert strict(written.stdout)["steps"][0]["data"]["path"] == SHOWN
    assert (work / NAME).read_bytes() == b"hello\nmore\n"  # the file itself, by its bytes
    # a failed step: its error names the path (as given and resolved)
    missing = cli("--output", "json", "files", "read", "nope" + NAME)
    assert missing.code == 1
    error = strict(missing.stdout)["steps"][0]["error"]
    assert f"'nope{SHOWN}'" in error and f"{work}/nope{SHOWN}" in error, error
    # a refused one (delete is a destroy): exit 3, the document as strict
    refused = cli("--output", "json", "files", "delete", NAME)
    assert refused.code == 3
    strict(refused.stdout)
    assert (work / NAME).exists()
    # the audit log's records, and `audit tail` that shows them
    lines = audit_lines(home)
    assert lines
    for line in lines:
        strict(line)
    recorded = [strict(line) for line in lines]
    assert ["read", SHOWN] in [r.get("args") for r in recorded]
    tail = cli("--output", "json", "audit", "tail", "-n", "50")
    assert tail.code == 0, tail.stderr
    doc = strict(tail.stdout)
    check_schema(doc, "audit")
    assert any(SHOWN in s for s in strings(doc["records"]))


def test_an_audit_record_written_before_is_shown_strict_too(cli, home: Path) -> None:
    # a log written by an earlier runtime holds JSON's "\udcff" escape itself
    old = '{"event": "step", "time": "2026-01-01T00:00:00.000+00:00", "run_id": "r1", '
    old += '"args": ["read", "caf\\udcff.txt"]}\n'
    write(home / "audit" / "audit.jsonl", old)
    result = cli("--output", "json", "audit", "tail")
    assert result.code == 0, result.stderr
    assert strict(result.stdout)["records"][0]["args"] == ["read", SHOWN]
    text = cli("audit", "tail")
    assert text.code == 0 and "r1" in text.stdout


def test_the_json_event_stream_is_strict(cli, work: Path) -> None:
    result = cli(
        "--log-level", "info", "--log-format", "json", "--output", "json", "files", "read", NAME
    )
    assert result.code == 1
    strict(result.stdout)
    events = [strict(line) for line in result.stderr.splitlines() if line.startswith("{")]
    finished = [e for e in events if e["event"] == "step.finished"]
    assert finished and SHOWN in finished[0]["error"], events


def test_the_bytes_on_stdout_are_utf8_in_a_real_process(work: Path, home: Path) -> None:
    # a child process, as a pipeline runs it: its stdout's bytes, not Python's strings
    with open(os.fsencode(work / NAME), "w") as fh:
        fh.write("x\n")
    result = run_checkout(base_env(home), work, "--output", "json", "files", "list", ".")
    assert result.code == 0, result.stderr  # text=True: bytes that are not UTF-8 would fail
    names = [e["name"] for e in strict(result.stdout)["steps"][0]["data"]["entries"]]
    assert names == [SHOWN]
