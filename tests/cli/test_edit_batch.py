"""What every structured edit shares, through the real CLI: the plan and the dry run show
per-file diffs and change nothing, and a dry run refuses a change it cannot preview; the
policy's file_edits bounds each edit and a user policy may only lower them; the roots and
protected paths hold for every file touched; links are not followed; writes keep a
file's mode and leave no temporary behind."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, check_schema, write

Cli = Callable[..., Any]


def steps(*args: str) -> str:
    """A capability's body: one files step per list of args."""
    lines = "".join(
        f"  - provider: files\n    args: {json.dumps(list(a.split('|')))}\n" for a in args
    )
    return capability(f"version: v1\nworkflow:\n{lines}")


BUMP = "yaml|replace|--from|acme/app:1|--to|acme/app:2|--dir|.|--filename|build.yaml"


def two_services(work: Path) -> tuple[Path, Path]:
    return (
        write(work / "svc-a" / "build.yaml", "image: acme/app:1  # pinned\n"),
        write(work / "svc-b" / "build.yaml", "x:\n  image: 'acme/app:1'\n"),
    )


def test_plan_and_dry_run_show_each_diff_and_change_nothing(cli: Cli, work: Path) -> None:
    a, b = two_services(work)
    cap = write(
        work / "bump.md",
        steps(BUMP, "yaml|set|--path|x.image|--value|v3|--dir|svc-b|--filename|build.yaml"),
    )
    for command in (
        ("capability", "plan", str(cap)),
        ("capability", "execute", "--dry-run", str(cap)),
    ):
        result = cli(*command, cwd=work)
        assert result.code == 0, result.stdout + result.stderr
        out = result.stdout
        assert "2 files of 2 would change, 2 matches" in out
        assert "      -image: acme/app:1  # pinned\n      +image: acme/app:2  # pinned\n" in out
        assert "      --- a/svc-b/build.yaml\n      +++ b/svc-b/build.yaml\n" in out
        # the second edit is previewed on what the first leaves
        assert "      -  image: 'acme/app:2'\n      +  image: 'v3'\n" in out
    assert a.read_text() == "image: acme/app:1  # pinned\n"
    assert b.read_text() == "x:\n  image: 'acme/app:1'\n"
    result = cli("-o", "json", "capability", "plan", str(cap), cwd=work)
    doc = result.json()
    check_schema(doc, "plan")
    preview = doc["steps"][0]["preview"]
    assert preview["problem"] is None
    assert [f["path"] for f in preview["files"]] == ["svc-a/build.yaml", "svc-b/build.yaml"]
    assert preview["files"][0]["changed"] and preview["files"][0]["matches"] == 1
    result = cli("capability", "execute", str(cap), cwd=work)
    assert result.code == 0, result.stderr
    assert b.read_text() == "x:\n  image: 'v3'\n"


def test_a_dry_run_refuses_a_change_it_cannot_preview(cli: Cli, work: Path) -> None:
    # the file the edit needs is written by the step before it: a plan cannot show the
    # edit, so the dry run refuses; the run itself edits the file once it is there
    cap = write(
        work / "new.md",
        steps("write|app/build.yaml|image: acme/app:1", BUMP.replace("--dir|.", "--dir|app")),
    )
    (work / "app").mkdir()
    result = cli("capability", "execute", "--dry-run", str(cap), cwd=work)
    assert result.code == 1
    assert "cannot preview: no file named build.yaml under app" in result.stdout
    assert "the change of step 2 cannot be previewed (above): a dry run refuses" in result.stdout
    assert not (work / "app" / "build.yaml").exists()
    doc = cli("-o", "json", "capability", "plan", str(cap), cwd=work).json()
    assert doc["exit_code"] == 1 and doc["ok"] is False
    assert doc["steps"][1]["preview"]["problem"].startswith("no file named build.yaml under app")
    result = cli("capability", "execute", str(cap), cwd=work)
    assert result.code == 0, result.stderr
    assert (work / "app" / "build.yaml").read_text() == "image: acme/app:2\n"


@pytest.mark.parametrize(
    ("bound", "value", "said"),
    [
        ("max_files", "1", "the edit would change 2 files, over file_edits.max_files (1,"),
        ("max_matches", "1", "the edit makes 2 matches, over file_edits.max_matches (1,"),
        (
            "max_bytes",
            "40",
            "the edit reads at least 53 bytes, over file_edits.max_bytes (40 bytes,",
        ),
        ("max_diff_bytes", "100", "has a diff of 2"),
        (
            "max_seconds",
            "0.000001",
            "takes longer than that, over file_edits.max_seconds (1e-06 s,",
        ),
    ],
)
def test_the_policy_bounds_each_edit(
    cli: Cli, work: Path, tmp_path: Path, bound: str, value: str, said: str
) -> None:
    a, b = two_services(work)
    policy = write(tmp_path / "policy.yaml", f"file_edits:\n  {bound}: {value}\n")
    extra = {"RUNTIME_POLICY_FILE": str(policy)}
    result = cli("files", *BUMP.split("|"), cwd=work, extra_env=extra)
    assert result.code == 3, result.stderr
    assert said in result.stderr and "nothing ran" in result.stderr
    assert "acme/app:2" not in a.read_text() + b.read_text()
    cap = write(work / "bump.md", steps(BUMP))
    result = cli("capability", "plan", str(cap), cwd=work, extra_env=extra)
    assert result.code == 3
    assert "REFUSED" in result.stdout and f"file_edits.{bound} ({policy})" in result.stdout


def test_a_user_policy_may_lower_the_bounds_never_raise_them(
    cli: Cli, work: Path, tmp_path: Path
) -> None:
    policy = write(
        tmp_path / "policy.yaml", "file_edits:\n  max_files: 10\n  max_diff_bytes: 300000\n"
    )
    extra = {"RUNTIME_POLICY_FILE": str(policy)}
    result = cli("policy", "show", cwd=work, extra_env=extra)
    assert result.code == 2
    assert (
        f"{policy}:3:19: error: file_edits.max_diff_bytes is 300000, above the default policy's 262144"
        in result.stderr
    )
    write(policy, "file_edits:\n  max_files: 2.5\n")
    result = cli("policy", "show", cwd=work, extra_env=extra)
    assert result.code == 2
    assert "file_edits.max_files must be a whole number, not 2.5" in result.stderr
    write(policy, "file_edits:\n  max_files: 10\n")
    doc = cli("-o", "json", "policy", "show", cwd=work, extra_env=extra).json()
    check_schema(doc, "policy")
    bounds = doc["policy"]["file_edits"]
    assert bounds["max_files"] == {"value": 10, "source": str(policy)}
    assert bounds["max_bytes"] == {"value": 8388608, "source": "default"}
    assert bounds["max_matches"]["value"] == 1000
    assert bounds["max_diff_bytes"]["value"] == 262144
    assert bounds["max_seconds"]["value"] == 20
    result = cli("policy", "show", cwd=work, extra_env=extra)
    assert f"    max_files 10  [{policy}]" in result.stdout


def test_a_folder_outside_the_write_roots_is_refused(cli: Cli, work: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "build.yaml", "image: acme/app:1\n")
    args = BUMP.replace("--dir|.", f"--dir|{outside.parent}").split("|")
    result = cli("files", *args, cwd=work)
    assert result.code == 3
    assert "outside the write root" in result.stderr
    assert outside.read_text() == "image: acme/app:1\n"


def test_runtime_home_under_the_folder_is_protected(cli: Cli, tmp_path: Path, home: Path) -> None:
    # the folder searched holds Runtime Home: a file of Home's the edit would change is
    # refused, and so is the whole edit
    mine = write(tmp_path / "svc" / "build.yaml", "image: acme/app:1\n")
    assert cli("bootstrap", cwd=tmp_path).code == 0
    theirs = write(home / "build.yaml", "image: acme/app:1\n")
    result = cli("files", *BUMP.split("|"), cwd=tmp_path)
    assert result.code == 3
    assert "Runtime Home" in result.stderr
    assert mine.read_text() == theirs.read_text() == "image: acme/app:1\n"


def test_git_metadata_and_links_are_never_followed(cli: Cli, work: Path, tmp_path: Path) -> None:
    a, _ = two_services(work)
    inside_git = write(work / ".git" / "build.yaml", "image: acme/app:1\n")
    outside = write(tmp_path / "outside.yaml", "image: acme/app:1\n")
    (work / "linked").mkdir()
    os.symlink(outside, work / "linked" / "build.yaml")
    os.symlink(tmp_path, work / "up")
    result = cli("files", *BUMP.split("|"), cwd=work)
    assert result.code == 0, result.stderr
    assert "linked/build.yaml: a symbolic link, not followed" in result.stdout
    assert a.read_text() == "image: acme/app:2  # pinned\n"
    assert inside_git.read_text() == outside.read_text() == "image: acme/app:1\n"


def test_a_hard_linked_file_is_refused(cli: Cli, work: Path, tmp_path: Path) -> None:
    a, _ = two_services(work)
    os.link(a, tmp_path / "other-link")
    result = cli("files", *BUMP.split("|"), cwd=work)
    assert result.code == 3
    assert "svc-a/build.yaml is a file with 2 hard links" in result.stderr
    assert a.read_text() == "image: acme/app:1  # pinned\n"


def test_a_write_keeps_the_mode_and_leaves_no_temporary(cli: Cli, work: Path) -> None:
    a, b = two_services(work)
    a.chmod(0o640)
    result = cli("files", *BUMP.split("|"), cwd=work)
    assert result.code == 0, result.stderr
    assert a.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in a.parent.iterdir()) == ["build.yaml"]
    assert sorted(p.name for p in b.parent.iterdir()) == ["build.yaml"]
