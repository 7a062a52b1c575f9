"""How a plan reads (issue 29, item 4): a page a person takes in at a glance by default,
every detail with --verbose, only what stands in the way with --quiet; and a run that
stops early names the steps it did not run as a range."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, capability, write

Cli = Callable[..., Result]

# a job of six steps of every kind: provider operations, a binary, a GitHub call (whose
# credential this machine lacks: the preflight has something to say)
SIX = capability(
    "version: v1\n"
    "inputs:\n  folder:\n    required: true\n"
    "workflow:\n"
    '  - provider: files\n    args: [mkdir, "${folder}"]\n'
    '  - provider: files\n    args: [write, "${folder}/report.txt", "a first line of the report"]\n'
    '  - provider: files\n    args: [read, "${folder}/report.txt"]\n'
    "  - binary: git\n    args: [status, --short]\n"
    "  - provider: github\n    args: [repo, view, acme/widgets]\n"
    '  - provider: files\n    args: [list, "${folder}"]\n',
    frontmatter="name: six\ndescription: a job of six steps\n",
)
NARROW = {"COLUMNS": "80"}


@pytest.mark.parametrize(
    "command", [["capability", "plan"], ["capability", "execute", "--dry-run"]]
)
def test_a_six_step_plan_is_a_line_per_step_and_a_preflight_summary(
    cli: Cli, work: Path, command: list[str]
) -> None:
    write(work / "six.md", SIX)
    result = cli(*command, "six.md", "--input", "folder=out", extra_env=NARROW)
    assert result.code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), "\n".join(lines)
    assert lines[0].startswith("plan for six.md (sha256 ")
    assert lines[1] == "  input folder = 'out'"
    steps = [line for line in lines if line.startswith("[")]
    assert [s.split()[0] for s in steps] == [f"[{i}/6]" for i in range(1, 7)]
    assert steps[1].split() == [
        "[2/6]", "files", "write", "out/report.txt", "'a", "first", "line", "of", "the",
        "report'", "write", "allowed",
    ]  # fmt: skip
    assert steps[3].split() == ["[4/6]", "git", "status", "--short", "write", "allowed"]
    assert steps[4].split()[-2:] == ["read", "allowed"]
    # the step lines are followed by the preflight, in a few lines: what is not ready
    preflight = lines[lines.index(steps[-1]) + 1 :]
    assert preflight[0].startswith("preflight (offline, no version probes): ")
    assert preflight[0].endswith(" ready") and "requirements" in preflight[0]
    assert preflight[1] == "  not ready: credential:github:github.com"
    assert preflight[2].startswith("    fix: export RUNTIME_GITHUB_TOKEN=<token>")
    assert lines[-1].startswith("6 steps planned; nothing was run")
    assert len(lines) <= 15, "\n".join(lines)  # 64 lines before issue 29
    assert "REQUIREMENT" not in result.stdout and "policy: " not in result.stdout


def test_verbose_shows_each_steps_details_and_the_preflight_table(cli: Cli, work: Path) -> None:
    write(work / "six.md", SIX)
    for flag in ("--verbose", "-v"):
        result = cli("capability", "plan", "six.md", "-i", "folder=out", flag, extra_env=NARROW)
        assert result.code == 0, result.stderr
        assert "[4/6] git status --short\n      binary: " in result.stdout
        assert "      policy: allowed [allowed_binaries: git (default)]" in result.stdout
        assert "      note: host github.com (default)" in result.stdout
        assert "  REQUIREMENT " in result.stdout and "  input:folder " in result.stdout
        dry = cli("capability", "execute", "six.md", "-i", "folder=out", "--dry-run", flag)
        assert dry.code == 0 and "  REQUIREMENT " in dry.stdout


def test_verbose_without_dry_run_is_refused(cli: Cli, work: Path) -> None:
    """execute --verbose would be taken for a run that shows more: it says what it is for."""
    write(work / "six.md", SIX)
    result = cli("capability", "execute", "six.md", "-i", "folder=out", "--verbose")
    assert result.code == 2
    assert "error: --verbose is for the plan: it goes with --dry-run" in result.stderr
    assert not (work / "out").exists()


def test_a_refused_step_says_why_under_its_line(cli: Cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n"
            "  - provider: files\n    args: [list, .]\n"
            "  - binary: git\n    args: [push, --force]\n"
        ),
    )
    result = cli("capability", "plan", "cap.md", extra_env=NARROW)
    assert result.code == 3
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[2/2] "))
    assert lines[at].split() == ["[2/2]", "git", "push", "--force", "write", "REFUSED"]
    assert lines[at + 1].startswith("      refused by denied_arguments: git push --force")
    assert lines[-1] == "1 step would be refused by policy; nothing would run"


def test_a_long_step_is_cut_to_the_terminal_and_whole_in_verbose(cli: Cli, work: Path) -> None:
    text = "word " * 40
    write(
        work / "cap.md",
        capability(
            f'version: v1\nworkflow:\n  - provider: files\n    args: [write, a.txt, "{text}"]\n'
        ),
    )
    short = cli("capability", "plan", "cap.md", extra_env=NARROW)
    assert short.code == 0, short.stderr
    line = next(s for s in short.stdout.splitlines() if s.startswith("[1/1] "))
    assert len(line) <= 80 and "... " in line and line.endswith("write    allowed")
    whole = cli("capability", "plan", "cap.md", "--verbose", extra_env=NARROW)
    assert f"[1/1] files write a.txt '{text}'" in whole.stdout


def test_quiet_plan_shows_only_what_stands_in_the_way(cli: Cli, work: Path) -> None:
    write(work / "six.md", SIX)
    fine = cli("-q", "capability", "plan", "six.md", "-i", "folder=out", extra_env=NARROW)
    assert fine.code == 0, fine.stderr
    assert fine.stdout.splitlines() == [
        "preflight (offline, no version probes): 14 requirements, 13 ready",
        "  not ready: credential:github:github.com",
        *[s for s in fine.stdout.splitlines() if s.startswith("    ")],
    ]
    write(
        work / "ok.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"),
    )
    assert cli("capability", "plan", "ok.md", "--quiet").stdout == ""
    write(
        work / "refused.md",
        capability("version: v1\nworkflow:\n  - binary: git\n    args: [push, --force]\n"),
    )
    refused = cli("capability", "plan", "refused.md", "-q")
    assert refused.code == 3
    assert refused.stdout.startswith("[1/1] git push --force  write    REFUSED\n")
    assert refused.stdout.endswith("1 step would be refused by policy; nothing would run\n")


def test_the_steps_a_stopped_run_did_not_run_are_a_range(cli: Cli, work: Path) -> None:
    """Step 4 of 131 fails: "steps 5-131 not run", not 127 numbers on one line."""
    ok = "  - provider: files\n    args: [list, .]\n"
    fails = "  - provider: files\n    args: [read, binary.dat]\n"  # not text: fails as it runs
    (work / "binary.dat").write_bytes(b"\xff\xfe\x00")
    write(work / "many.md", capability("version: v1\nworkflow:\n" + ok * 3 + fails + ok * 127))
    result = cli("capability", "execute", "many.md")
    assert result.code == 1
    assert "failed: step 4 (files read) failed; steps 5-131 not run (run " in result.stderr
    assert "note: steps 1-3 stay applied: capabilities are not transactional" in result.stderr
