"""The audit log through the CLI: long values kept once as a digest, rotation that
`runtime audit` reads across, and one record for every refused run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, write


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
