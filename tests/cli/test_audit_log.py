"""The audit log through the CLI: long values kept once as a digest, rotation that
`runtime audit` reads across, one record for every refused run, and a damaged or
unusable log said as such."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    capability,
    check_schema,
    run_checkout,
    without_read_override,
    write,
)


def audit_files(home: Path) -> list[Path]:
    """The audit log's files, oldest first: audit.jsonl.N ... audit.jsonl.1, audit.jsonl."""
    folder = home / "audit"
    if not folder.exists():
        return []
    rotated = sorted(
        (p for p in folder.iterdir() if p.name.startswith("audit.jsonl.")),
        key=lambda p: -int(p.name.rsplit(".", 1)[1]),
    )
    current = folder / "audit.jsonl"
    return rotated + ([current] if current.exists() else [])


def records(home: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in audit_files(home)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def log_size(home: Path) -> int:
    return sum(p.stat().st_size for p in audit_files(home))


def rotate_at(home: Path, max_bytes: int, keep: int) -> None:
    write(home / "config.yaml", f"audit_max_bytes: {max_bytes}\naudit_keep: {keep}\n")


# -- long values --------------------------------------------------------------------------


def test_many_medium_values_in_one_record_are_kept_as_a_digest(cli, work: Path, home: Path) -> None:
    """300 args of 3,000 characters: no one value is long, their record is (900 KB)."""
    body = "version: v1\ninputs:\n  v:\n    required: true\nworkflow:\n  - binary: 'true'\n"
    body += "    args: [" + ", ".join(['"${v}"'] * 300) + "]\n"
    write(work / "cap.md", capability(body))
    result = cli("capability", "execute", "cap.md", "--input", "v=" + "m" * 3000)
    assert result.code == 0, result.stderr
    assert log_size(home) < 64 * 1024
    step = next(r for r in records(home) if r["event"] == "step")
    assert step["status"] == "ok" and step["binary"] == "true"
    assert set(step["args"]) == {"size", "sha256", "head"}
    encoded = json.dumps(["m" * 3000] * 300).encode()
    assert step["args"]["sha256"] == hashlib.sha256(encoded).hexdigest()


# -- rotation -----------------------------------------------------------------------------


def test_the_log_rotates_and_audit_reads_across_the_rotation(cli, work: Path, home: Path) -> None:
    rotate_at(home, 4096, 3)
    first = cli("--output", "json", "files", "write", "a.txt", "first")
    assert first.code == 0, first.stderr
    first_id = first.json()["run_id"]
    for i in range(6):
        assert cli("files", "write", "a.txt", f"run {i}").code == 0
    names = [p.name for p in audit_files(home)]
    assert names[-2:] == ["audit.jsonl.1", "audit.jsonl"], names
    assert all(p.stat().st_size <= 4096 for p in audit_files(home))
    # the first run's records are in a rotated file now, and still shown
    assert not any(first_id in line for line in (home / "audit" / "audit.jsonl").open())
    shown = cli("--output", "json", "audit", "show", first_id)
    assert shown.code == 0, shown.stderr
    assert [r["event"] for r in shown.json()["records"]] == [
        "run.start",
        "step.start",
        "step",
        "run.end",
    ]
    tail = cli("--output", "json", "audit", "tail", "-n", "1000").json()
    assert tail["records"] == records(home)  # every file, oldest first
    assert tail["records"][0]["run_id"] == first_id
    assert tail["unfinished_runs"] == []
    assert first_id in cli("audit", "tail", "-n", "1000").stdout


def test_many_runs_keep_the_log_bounded(cli, work: Path, home: Path) -> None:
    rotate_at(home, 4096, 2)
    ids = []
    for i in range(40):
        result = cli("--output", "json", "files", "write", "a.txt", f"run {i}")
        assert result.code == 0, result.stderr
        ids.append(result.json()["run_id"])
    assert [p.name for p in audit_files(home)] == ["audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"]
    assert log_size(home) <= 3 * 4096
    assert cli("audit", "show", ids[0]).code == 2  # dropped with the oldest file
    assert cli("audit", "show", ids[-1]).code == 0


def test_a_run_split_by_a_rotation_reads_whole(cli, work: Path, home: Path) -> None:
    rotate_at(home, 2048, 5)
    steps = "".join(f"  - provider: files\n    args: [write, f{i}.txt, '{i}']\n" for i in range(8))
    write(work / "cap.md", capability("version: v1\nworkflow:\n" + steps))
    result = cli("--output", "json", "capability", "execute", "cap.md")
    assert result.code == 0, result.stderr
    run_id = result.json()["run_id"]
    assert len(audit_files(home)) > 2  # the run's records span several files
    shown = cli("--output", "json", "audit", "show", run_id).json()
    events = [r["event"] for r in shown["records"]]
    assert events == ["run.start", *["step.start", "step"] * 8, "run.end"]
    assert shown["unfinished_runs"] == []


def test_rotation_settings_are_checked(cli, work: Path, home: Path) -> None:
    write(home / "config.yaml", "audit_max_bytes: lots\n")
    result = cli("files", "write", "a.txt", "x")
    assert result.code == 2
    assert f"{home / 'config.yaml'}:1:18:" in result.stderr
    assert "audit_max_bytes" in result.stderr
    # and what the setting is, with its default
    assert "hint: the size in bytes past which the audit log rotates; unset, 10485760" in (
        result.stderr
    )
    assert not (work / "a.txt").exists()


# -- every refusal leaves one record ------------------------------------------------------

REFUSALS = {
    "command run of a denied binary": (["command", "run", "rm", "-rf", "x"], 3),
    "command run of an unlisted binary": (["command", "run", "make"], 3),
    # a direct call is a run of a one-step capability: its operation and arguments are
    # that step, refused as an invalid step is, not while the command line is parsed
    "unknown operation": (["files", "frobnicate", "x"], 2),
    "misspelled operation": (["files", "reed", "x"], 2),
    "misspelled github operation": (["github", "repo", "lst"], 2),
    "operation missing its argument": (["files", "read"], 2),
    "path outside the roots": (["files", "read", "/etc/hostname"], 3),
    # no policy refused a path the system could not take: an invalid argument
    "name over the system's limit": (["files", "write", "n" * 300, "x"], 2),
    "input path over the system's limit": (
        ["capability", "execute", "valid.md", "--input", "p=" + "n" * 300],
        2,
    ),
    "destroy effect": (["files", "delete", "x.txt"], 3),
    "execute: invalid capability": (["capability", "execute", "invalid.md"], 2),
    "execute: no such capability": (["capability", "execute", "missing.md"], 2),
    "execute: malformed input": (["capability", "execute", "valid.md", "--input", "x"], 2),
    "execute: missing input": (["capability", "execute", "valid.md"], 2),
    "execute: denied argument run": (["capability", "execute", "denied.md"], 3),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_every_refusal_leaves_one_record(cli, work: Path, home: Path, case: str) -> None:
    args, code = REFUSALS[case]
    write(work / "invalid.md", capability("version: v1\nworkflow:\n  - provider: files\n"))
    write(
        work / "valid.md",
        capability(
            "version: v1\ninputs:\n  p:\n    required: true\n"
            "workflow:\n  - provider: files\n    args: [read, '${p}']\n"
        ),
    )
    write(
        work / "denied.md",
        capability("version: v1\nworkflow:\n  - binary: git\n    args: [push, --force]\n"),
    )
    result = cli(*args)
    assert result.code == code, result.stdout + result.stderr
    (record,) = records(home)
    assert record["event"] == "run.refused"
    assert record["exit_code"] == code
    assert record["reason"] and record["reason"] in result.stderr.replace("\n", " ")
    assert record["run_id"]


PARSED = {
    "unknown option of runtime's": ["capability", "execute", "valid.md", "--frobnicate"],
    "timeout of 0": ["capability", "execute", "--timeout", "0", "valid.md"],
    "command run's timeout of 0": ["command", "run", "--timeout", "0", "true"],
    "execute without its capability": ["capability", "execute"],
}


@pytest.mark.parametrize("case", PARSED)
def test_a_command_line_refused_while_parsed_leaves_no_record(
    cli, work: Path, home: Path, case: str
) -> None:
    write(work / "valid.md", capability("version: v1\nworkflow:\n  - provider: files\n"))
    result = cli(*PARSED[case])
    assert result.code == 2, result.stdout + result.stderr
    assert records(home) == []


def test_a_refusal_names_its_rule_and_problems(cli, work: Path, home: Path) -> None:
    write(
        work / "denied.md",
        capability("version: v1\nworkflow:\n  - binary: git\n    args: [push, --force]\n"),
    )
    write(work / "invalid.md", capability("version: v1\nworkflow:\n  - provider: files\n"))
    assert cli("capability", "execute", "denied.md").code == 3
    assert cli("capability", "execute", "invalid.md").code == 2
    assert cli("command", "run", "rm", "x").code == 3
    denied, invalid, binary = records(home)
    assert denied["rules"] == ["denied_arguments: git push --force (default)"]
    assert denied["capability"] == "denied.md"
    assert invalid["status"] == "invalid-capability"
    (problem,) = invalid["problems"]
    assert problem == "invalid.md:8:5: step 1 has no 'args'"
    assert binary["rules"] == ["denied_binaries: rm (default)"]


def test_a_refusal_record_holds_no_secret(cli, work: Path, home: Path) -> None:
    secret = "hunter2-very-secret-value"
    result = cli("files", "read", f"/etc/{secret}", extra_env={"MY_API_TOKEN": secret})
    assert result.code == 3
    (record,) = records(home)
    assert record["event"] == "run.refused"
    assert secret not in json.dumps(record)
    assert "outside the read root" in record["reason"]


# -- reading it ---------------------------------------------------------------------------


def test_tail_says_what_each_record_ran_on_one_line(cli, work: Path, home: Path) -> None:
    """Issue 29: a line per record with the capability, the step, its arguments (redacted)
    and the outcome; run.start names the capability, its steps and inputs."""
    secret = "hunter2-very-secret-value"
    body = (
        "version: v1\ninputs:\n  note:\n    required: true\nworkflow:\n"
        '  - provider: files\n    args: [write, notes/a.txt, "${note}"]\n'
        "  - binary: git\n    args: [--version]\n"
        "  - provider: files\n    args: [read, notes/missing.txt]\n"
    )
    write(work / "job.md", capability(body))
    (work / "notes").mkdir()
    env = {"MY_API_TOKEN": secret}
    ran = cli("capability", "execute", "job.md", "-i", f"note=the {secret}", extra_env=env)
    assert ran.code == 1, ran.stderr  # step 3: no such file
    assert cli("files", "read", f"/etc/{secret}", extra_env=env).code == 3
    result = cli("audit", "tail", "-n", "20")
    assert result.code == 0, result.stderr
    assert secret not in result.stdout
    lines = [line.split("  ")[2:] for line in result.stdout.splitlines()]
    assert lines[0] == ["run.start", "job.md", "3 steps", "inputs note='the [REDACTED]'"]
    assert lines[1] == ["step.start", "step 1", "files write"]
    assert lines[2] == [
        "step",
        "job.md",
        "step 1",
        "files write notes/a.txt 'the [REDACTED]'",
        "ok",
    ]
    assert lines[4] == ["step", "job.md", "step 2", "git --version", "ok", "exit 0"]
    assert lines[6][:5] == ["step", "job.md", "step 3", "files read notes/missing.txt", "failed"]
    assert lines[6][5].startswith("no such file: 'notes/missing.txt'")
    assert lines[7] == ["run.end", "job.md", "failed", "2/3 steps ok", "exit 1"]
    assert lines[8][:4] == ["run.refused", "runtime files", "policy-refused", "exit 3"]
    assert "outside the read root" in lines[8][4]
    assert len(lines) == 9


@pytest.mark.parametrize("n", ["0", "-1", "1000001", "99999999999999999999"])
def test_tail_takes_a_count_in_its_range(cli, home: Path, n: str) -> None:
    assert cli("files", "list", ".").code == 0  # records to show: "no records" would be false
    for args in (["-n", n], [f"--lines={n}"]):
        result = cli("audit", "tail", *args)
        assert result.code == 2, result.stdout + result.stderr
        assert f"{n} is not in the range 1<=x<=1000000" in result.stderr
        assert "hint: run `runtime audit tail --help`" in result.stderr
        assert result.stdout == ""
    assert "run.end" in cli("audit", "tail", "-n", "1").stdout
    assert cli("audit", "tail", "-n", "1000000").code == 0


# -- a damaged or unusable log ------------------------------------------------------------


def test_lines_that_hold_no_record_are_skipped_and_counted(cli, home: Path) -> None:
    log = home / "audit" / "audit.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(
        b'{"event": 5}\n'  # the reviewer's line: a field of another type
        b'{"event": "run.start", "time": {"t": 1}, "run_id": "r1"}\n'
        b'{"event": "run.start", "time": "t", "run_id": ["r1"]}\n'
        b"not json\n"
        b'{"event": "run.start", "time": "t\xff"}\n'
        b"[1, 2]\n"
        b'{"event": "run.start", "time": "t0", "run_id": "r1", "step": null, "status": 5,'
        b' "target": ["x"], "exit_code": {"a": 1}, "reason": [1], "pid": 99999999999999999999,'
        b' "host": "' + socket.gethostname().encode() + b'"}\n'
    )
    note = f"note: skipped 6 lines of {log} that hold no audit record (line 1: its 'event'"
    for args in (["audit", "tail"], ["audit", "show", "r1"]):
        result = cli(*args)
        assert result.code == 0, result.stderr
        assert note in result.stderr
        assert result.stdout.startswith(
            't0  r1  run.start  step null  ["x"]  5  exit {"a": 1}  [1]'
        )
        assert "run r1: abandoned" in result.stdout
        doc = cli("--output", "json", *args).json()
        check_schema(doc, "audit")
        assert [r["time"] for r in doc["records"]] == ["t0"]
        assert doc["skipped_lines"] == [
            {"file": str(log), "count": 6, "first_line": 1, "why": "its 'event' is not a string"}
        ]
    missing = cli("audit", "show", "r2")
    assert missing.code == 2
    assert note in missing.stderr  # the run's records may have been on those lines


def test_a_whole_log_has_no_note(cli, home: Path) -> None:
    assert cli("files", "list", ".").code == 0
    result = cli("audit", "tail")
    assert result.code == 0 and "run.end" in result.stdout
    assert result.stderr == ""
    assert cli("--output", "json", "audit", "tail").json()["skipped_lines"] == []


UNUSABLE = {
    "audit.jsonl is a folder": ("audit/audit.jsonl", "it is a folder, not a regular file"),
    "a rotated file is a folder": ("audit/audit.jsonl.1", "it is a folder, not a regular file"),
    "audit is a file": ("audit", "it is not a folder"),
}


@pytest.mark.parametrize("case", UNUSABLE)
@pytest.mark.parametrize("command", [["audit", "tail"], ["audit", "show", "r1"]])
def test_an_unusable_audit_log_is_named(cli, home: Path, case: str, command: list[str]) -> None:
    name, why = UNUSABLE[case]
    at = home / name
    (home / "audit").mkdir(parents=True)
    (home / "audit" / "audit.jsonl").write_text('{"event": "e", "time": "t"}\n')
    if name == "audit":
        shutil.rmtree(at)
        at.write_text("x\n")
    else:
        at.unlink(missing_ok=True)
        at.mkdir()
    result = cli(*command)
    assert result.code == 2, result.stderr
    assert f"error: cannot read the audit log {at}: {why}\n" in result.stderr
    assert f"hint: move it away (mv {at} {at}.broken)" in result.stderr
    assert "internal error" not in result.stderr


def test_a_named_pipe_for_a_log_is_refused_not_waited_on(
    home: Path, env: dict[str, str], work: Path
) -> None:
    log = home / "audit" / "audit.jsonl"
    log.parent.mkdir(parents=True)
    os.mkfifo(log)
    for command in (["audit", "tail"], ["audit", "show", "r1"]):
        result = run_checkout(env, work, *command)
        assert result.code == 2, result.stderr
        why = "it is a named pipe, not a regular file"
        assert f"error: cannot read the audit log {log}: {why}\n" in result.stderr


def test_an_unreadable_audit_log_is_named(home: Path, env: dict[str, str], work: Path) -> None:
    log = home / "audit" / "audit.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"event": "e", "time": "t"}\n')
    log.chmod(0)
    for command in (["audit", "tail"], ["audit", "show", "r1"]):
        result = run_checkout(env, work, *command, prefix=without_read_override())
        assert result.code == 2, result.stderr
        assert f"error: cannot read the audit log {log}: Permission denied\n" in result.stderr
        assert f"hint: let yourself read it (chmod u+r {log})" in result.stderr
