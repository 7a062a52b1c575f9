"""A confined step never says "ok" after doing nothing: paths outside the write roots.

Confined, everything outside the write roots and the step's private ``/tmp`` is
read-only, bwrap's own root and the folders leading to a root included: a write
there fails with the program's own error, and runtime says why (the step ran
confined, the path is outside the roots it names) and how to allow it deliberately.
A path the step will not find or cannot write is warned about before anything runs.
Real git, real mkdir, real bubblewrap and Landlock.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_binary_attacks import cap, git, require_confinement, steps
from tests.conftest import Result, write

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _confined() -> None:
    require_confinement()


def scratch_repo(tmp_path: Path) -> Path:
    """A repository beside the working folder, outside the roots."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    git("init", "-q", "-b", "main", cwd=scratch)
    git("-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m",
        "first", cwd=scratch)  # fmt: skip
    return scratch


def test_git_init_outside_the_write_roots_fails_and_says_why(
    cli: Callable[..., Result], work: Path, tmp_path: Path, home: Path
) -> None:
    """`git init ../made-by-git` used to print ok and make nothing (the write landed in
    the sandbox's scratch space): now git's own error, and what happened."""
    made = tmp_path / "made-by-git"
    result = cli("command", "run", "git", "init", "-q", "../made-by-git")
    assert result.code == 1, result.stdout + result.stderr
    assert not made.exists()
    assert "ok:" not in result.stderr
    assert "Read-only file system" in result.stderr  # git's own error
    error = next(line for line in result.stderr.splitlines() if "error:" in line)
    assert "the step ran confined" in error
    assert f"'../made-by-git' ({made})" in error
    assert f"write roots: {work}" in error
    hint = next(line for line in result.stderr.splitlines() if "hint:" in line)
    # how to allow it: the user policy's write roots, keeping the ones in force
    assert f'write_roots: [".", "{tmp_path}"]' in hint
    assert str(home / "policy.yaml") in hint
    # said before the step ran, too
    warned = result.stderr.index("warning: step 1 (git): '../made-by-git'")
    assert warned < result.stderr.index("[1/1]")

    document = cli("--output", "json", "command", "run", "git", "init", "-q", "../made-by-git")
    (step,) = document.json()["steps"]
    assert step["status"] == "failed" and "the step ran confined" in step["error"]
    assert "write_roots:" in step["hint"]
    assert any("'../made-by-git'" in note for note in step["notes"])

    # what the hint says, done deliberately: the folder is made
    lines = re.search(r"write_roots: (\[[^]]*\])", hint)
    assert lines is not None, hint
    policy = write(tmp_path / "policy.yaml", f"version: v1\nwrite_roots: {lines.group(1)}\n")
    allowed = cli(
        "command", "run", "git", "init", "-q", "../made-by-git",
        extra_env={"RUNTIME_POLICY_FILE": str(policy)},
    )  # fmt: skip
    assert allowed.code == 0, allowed.stdout + allowed.stderr
    assert (made / ".git").is_dir() and "warning" not in allowed.stderr


def test_mkdir_outside_every_root_fails_with_its_own_error(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    outside = Path(f"/runtime-test-{uuid.uuid4().hex}/some/folder")
    policy = write(tmp_path / "policy.yaml", "version: v1\nallowed_binaries: [mkdir]\n")
    extra = {"RUNTIME_POLICY_FILE": str(policy)}
    result = cli("command", "run", "mkdir", "-p", str(outside), extra_env=extra)
    assert result.code == 1, result.stdout + result.stderr
    assert not outside.parents[1].exists()
    assert "Read-only file system" in result.stderr
    assert f"'{outside}' is outside the write roots, where the sandbox is read-only" in (
        result.stderr
    )
    # no folder but / holds it: no root can allow it, and the hint says so
    assert "write inside the write roots instead" in result.stderr
    assert str(policy) in result.stderr  # the user policy in force is the one to change


def test_a_folder_outside_the_roots_is_explained_not_just_missing(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    """`git -C ../scratch log`: "No such file or directory" although the folder exists.
    The error says it is outside the roots, and the hint's lines allow it."""
    scratch = scratch_repo(tmp_path)
    result = cli("command", "run", "git", "-C", "../scratch", "log", "--format=%s")
    assert result.code == 1, result.stdout + result.stderr
    assert "No such file or directory" in result.stderr
    error = next(line for line in result.stderr.splitlines() if "error:" in line)
    assert f"'../scratch' ({scratch}) is outside the roots, so it is not there" in error
    assert f"write roots: {work}; read roots: the same" in error
    hint = next(line for line in result.stderr.splitlines() if "hint:" in line)
    lines = re.search(r"read_roots: (\[[^]]*\])", hint)
    assert lines is not None, hint

    # what the hint says, done deliberately: the step reads the folder, and nothing warns
    policy = write(tmp_path / "policy.yaml", f"version: v1\nread_roots: {lines.group(1)}\n")
    allowed = cli(
        "command", "run", "git", "-C", "../scratch", "log", "--format=%s",
        extra_env={"RUNTIME_POLICY_FILE": str(policy)},
    )  # fmt: skip
    assert allowed.code == 0, allowed.stdout + allowed.stderr
    assert allowed.stdout == "first\n"
    assert "warning" not in allowed.stderr


def test_plan_and_dry_run_warn_before_anything_runs(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    scratch_repo(tmp_path)
    (work / "inside").mkdir()
    name = cap(
        work,
        steps(
            "git\n    args: [-C, ../scratch, log]",
            # a system folder, a path inside the root however written, an option's value
            "ls\n    args: [/usr/share, ./inside/../inside, --color=never]",
            "git\n    args: [--work-tree=../elsewhere, status]",
        ),
    )
    plan = cli("capability", "plan", name)
    assert plan.code == 0, plan.stdout + plan.stderr
    warnings = [line for line in plan.stdout.splitlines() if ": warning: " in line]
    assert len(warnings) == 2, plan.stdout
    assert "step 1 (git): '../scratch'" in warnings[0]
    assert "is outside the roots, so the confined step will not find it" in warnings[0]
    assert f"write roots: {work}" in warnings[0]
    assert "step 3 (git): '../elsewhere'" in warnings[1]
    assert "where the sandbox is read-only: the confined step cannot make it" in warnings[1]
    assert "read_roots:" in plan.stdout  # the hint, under each warning

    document = cli("--output", "json", "capability", "execute", "--dry-run", name).json()
    codes = [(w["code"], w["line"]) for w in document["warnings"]]
    assert codes == [("outside-roots", 8), ("outside-roots", 12)]  # each step's line
    assert not (tmp_path / "elsewhere").exists()  # nothing ran


def test_the_private_tmp_is_writable_and_said_to_be_the_steps_own(
    cli: Callable[..., Result], work: Path
) -> None:
    result = cli("command", "run", "git", "init", "-q", f"/tmp/runtime-{uuid.uuid4().hex}")
    assert result.code == 0, result.stdout + result.stderr
    assert "is in the step's own private temporary folder (/tmp)" in result.stderr
    assert "what it writes there is gone when it ends" in result.stderr
    # and a write root is as writable as ever
    made = cli("command", "run", "git", "init", "-q", "made-here")
    assert made.code == 0, made.stdout + made.stderr
    assert (work / "made-here" / ".git").is_dir()
    assert "warning" not in made.stderr
