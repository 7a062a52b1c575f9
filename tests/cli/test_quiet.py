"""``-q``/``--quiet``, for cron (issue 29, item 4): stderr has only warnings and failures,
as under -o raw, so a job that went well and sends its output to a file mails nothing;
stdout has what the steps print, as without it; -o json and -o raw print what they
always print."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, capability, write

Cli = Callable[..., Result]

GOOD = capability(
    "version: v1\nworkflow:\n"
    "  - provider: files\n    args: [write, out.txt, done]\n"
    "  - provider: files\n    args: [read, out.txt]\n"
    "  - binary: git\n    args: [--version]\n"
)
# step 2 fails as it runs: git's own words on stderr say why
FAILS = capability(
    "version: v1\nworkflow:\n"
    "  - provider: files\n    args: [write, out.txt, done]\n"
    "  - binary: git\n    args: [log, -1]\n"
    "  - provider: files\n    args: [read, out.txt]\n"
)
# a capability with a warning (a requires key runtime does not know)
WARNS = capability(
    "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n",
    frontmatter="name: warns\ndescription: d\nmetadata:\n  mda:\n    requires:\n      gadget: x\n",
)


def git_repository(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


@pytest.mark.parametrize(
    "line",
    [
        ["-q", "capability", "execute", "good.md"],
        ["--quiet", "capability", "execute", "good.md"],
        ["capability", "execute", "good.md", "-q"],
        ["capability", "execute", "good.md", "--quiet"],
    ],
)
def test_a_run_that_goes_well_says_nothing_on_stderr(cli: Cli, work: Path, line: list[str]) -> None:
    write(work / "good.md", GOOD)
    result = cli(*line)
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    # the steps' output, as without --quiet
    assert result.stdout.startswith("wrote 5 bytes to out.txt\ndone\ngit version "), result.stdout
    assert (work / "out.txt").read_text() == "done\n"


def test_a_failed_run_says_only_the_failure(cli: Cli, work: Path) -> None:
    """What the failed step's program said on stderr, the step's line, its error, the
    summary; nothing of the steps that went well."""
    git_repository(work)  # with no commit: `git log -1` fails
    write(work / "fails.md", FAILS)
    result = cli("-q", "capability", "execute", "fails.md")
    assert result.code == 1
    assert result.stdout == "wrote 5 bytes to out.txt\n"
    lines = result.stderr.splitlines()
    assert lines[0].startswith("fatal: "), result.stderr  # git's own words
    assert lines[1].startswith("[2/3] git log -1 failed "), result.stderr
    assert lines[2] == "    error: git exited with code 128"
    assert lines[3].startswith("failed: step 2 (git) failed; step 3 not run (run ")
    assert lines[4] == "note: step 1 stays applied: capabilities are not transactional"
    assert len(lines) == 5 and "[1/3]" not in result.stderr


def test_warnings_are_still_said(cli: Cli, work: Path) -> None:
    write(work / "warns.md", WARNS)
    result = cli("-q", "capability", "execute", "warns.md")
    assert result.code == 0, result.stderr
    assert "warning: requires key 'gadget' is not a standard key" in result.stderr
    assert "ok:" not in result.stderr and "[1/1]" not in result.stderr


def test_a_direct_call_is_quiet_before_or_after_it(cli: Cli, work: Path) -> None:
    """After a provider's operation runtime's is --quiet: there -q may be the program's
    own (gh api's -q is --jq)."""
    write(work / "a.txt", "alpha\n")
    for line in (["-q", "files", "read", "a.txt"], ["files", "read", "a.txt", "--quiet"]):
        result = cli(*line)
        assert (result.code, result.stdout, result.stderr) == (0, "alpha\n", ""), line
    refused = cli("-q", "files", "read", "../outside.txt")
    assert refused.code == 3 and "refused by read_roots" in refused.stderr


def test_json_and_raw_print_what_they_always_do(cli: Cli, work: Path) -> None:
    write(work / "good.md", GOOD)
    doc = cli("-q", "-o", "json", "capability", "execute", "good.md")
    assert doc.code == 0 and doc.json()["status"] == "ok"
    write(work / "a.txt", "alpha\n")
    raw = cli("-q", "-o", "raw", "files", "read", "a.txt")
    assert (raw.code, raw.stdout, raw.stderr) == (0, "alpha\n", "")


def test_validate_and_preflight_say_nothing_when_all_is_well(cli: Cli, work: Path) -> None:
    write(work / "good.md", GOOD)
    for line in (["capability", "validate", "good.md"], ["capability", "preflight", "good.md"]):
        result = cli("-q", *line)
        assert (result.code, result.stdout, result.stderr) == (0, "", ""), line
    write(work / "bad.md", capability("version: v1\nworkflow: []\n"))
    bad = cli("-q", "capability", "validate", "bad.md")
    assert bad.code == 2
    assert "error" in bad.stdout and "1 checked: 0 valid, 1 invalid" in bad.stdout
    write(
        work / "needs.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [read, gone.txt]\n"),
    )
    needs = cli("-q", "capability", "preflight", "needs.md")
    assert needs.code == 5
    assert "not ready: path:read:" in needs.stdout and "REQUIREMENT" not in needs.stdout


def test_quiet_is_in_the_help(cli: Cli) -> None:
    shown = cli("--help")
    assert "-q, --quiet" in shown.stdout
    assert "--quiet" in cli("capability", "execute", "--help").stdout
