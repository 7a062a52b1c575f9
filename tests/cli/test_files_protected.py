"""Protected paths: the files provider never writes Runtime Home, the user policy file or
``.git``, whatever the roots say; a write over a file never keeps its execute bits.

Through the real entry point (``cli``): ``runtime files ...`` and capabilities.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, require_tool, run_checkout, write

HOME_FILES = {
    "policy.yaml": "timeout_seconds: 300\n",
    "config.yaml": "capability_sources:\n  - caps\n",
    "contexts.json": '{"active": null, "contexts": {}}\n',
}


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root``: a file's bytes, None for a folder."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


def audit_lines(home: Path) -> list[str]:
    return (home / "audit" / "audit.jsonl").read_text().splitlines()


@pytest.fixture
def user(tmp_path: Path, env: dict[str, str]) -> Path:
    """HOME=<tmp>/user and no RUNTIME_HOME: Home is the platformdirs default under it."""
    path = tmp_path / "user"
    path.mkdir()
    env.pop("RUNTIME_HOME")
    env["HOME"] = str(path)
    return path


def populate(cli: Callable[..., Any], home: Path, cwd: Path) -> None:
    """Home with the user's files and an audit log holding earlier records."""
    assert cli("bootstrap", cwd=cwd).code == 0
    for name, text in HOME_FILES.items():
        write(home / name, text)
    assert cli("files", "write", "first.txt", "hello", cwd=cwd).code == 0
    assert any("first.txt" in line for line in audit_lines(home))


def assert_intact(home: Path, before: dict[str, bytes | None]) -> None:
    """Home unchanged, except for records appended to the audit log (earlier ones kept)."""
    after, before = snapshot(home), dict(before)
    log = "audit/audit.jsonl"
    old_log, new_log = before.pop(log), after.pop(log)
    assert after == before
    assert old_log is not None and new_log is not None and new_log.startswith(old_log)
    for line in new_log.splitlines():  # every line a runtime record, none forged
        record = json.loads(line)
        assert "forged" not in record and "event" in record


HOME_ATTACKS = [
    ("write", "audit/audit.jsonl", '{"forged":1}'),
    ("append", "audit/audit.jsonl", '{"forged":1}'),
    ("write", "policy.yaml", "write_roots: [/]"),
    ("append", "policy.yaml", "write_roots: [/]"),
    ("write", "contexts.json", "{}"),
    ("write", "config.yaml", "capability_sources: [/tmp]"),
    ("write", "new.txt", "x"),
    ("mkdir", "audit/more", None),
    ("mkdir", "capabilities", None),
]


def test_home_inside_the_working_folder_is_never_written(
    cli: Callable[..., Any], user: Path
) -> None:
    from runtime.home.layout import home_path

    home = user / ".local" / "share" / "runtime"
    populate(cli, home, user)
    # the platformdirs default under HOME (the cli fixture leaves no XDG_DATA_HOME set)
    assert "XDG_DATA_HOME" not in os.environ and "RUNTIME_HOME" not in os.environ
    assert home_path(os.environ) == home
    before = snapshot(home)
    for word, below, content in HOME_ATTACKS:
        given = f".local/share/runtime/{below}"
        args = ["files", word, given] + ([content] if content is not None else [])
        result = cli(*args, cwd=user)
        assert result.code == 3, (args, result.stdout, result.stderr)
        assert f"{given!r} is inside Runtime Home ({home})" in result.stderr, result.stderr
        assert "protected path: Runtime Home" in result.stderr
        assert "which capabilities never write" in result.stderr
    # the folder itself, by an absolute path, and a delete (also denied by the default policy)
    itself = cli("files", "mkdir", str(home), cwd=user)
    assert itself.code == 3 and f"is Runtime Home ({home})" in itself.stderr
    absolute = cli("files", "write", str(home / "audit" / "audit.jsonl"), "{}", cwd=user)
    assert absolute.code == 3 and "protected path: Runtime Home" in absolute.stderr
    assert cli("files", "delete", ".local/share/runtime/policy.yaml", cwd=user).code == 3
    assert_intact(home, before)
    # the next run still records into the same, intact log
    assert cli("files", "write", "second.txt", "x", cwd=user).code == 0
    assert any("second.txt" in line for line in audit_lines(home))


def test_home_set_by_runtime_home_inside_the_working_folder(
    cli: Callable[..., Any], work: Path, env: dict[str, str]
) -> None:
    home = work / "state"
    env["RUNTIME_HOME"] = str(home)
    populate(cli, home, work)
    before = snapshot(home)
    for word, below, content in HOME_ATTACKS:
        args = ["files", word, f"state/{below}"] + ([content] if content is not None else [])
        result = cli(*args)
        assert result.code == 3, (args, result.stdout, result.stderr)
        assert f"is inside Runtime Home ({home})" in result.stderr
    assert_intact(home, before)


def test_home_through_symbolic_links(
    cli: Callable[..., Any], work: Path, env: dict[str, str], tmp_path: Path
) -> None:
    # Home named through a link: its real folder is protected
    real = work / "real-home"
    os.symlink(real, work / "home-link")
    env["RUNTIME_HOME"] = str(work / "home-link")
    real.mkdir()
    populate(cli, real, work)
    # and a link in the working folder pointing to Home
    os.symlink(real, work / "h")
    before = snapshot(real)
    for path in ("real-home/policy.yaml", "home-link/policy.yaml", "h/policy.yaml"):
        result = cli("files", "write", path, "write_roots: [/]")
        assert result.code == 3, (path, result.stderr)
        assert f"{path!r} is inside Runtime Home ({real})" in result.stderr
    appended = cli("files", "append", "h/audit/audit.jsonl", '{"forged":1}')
    assert appended.code == 3 and "protected path: Runtime Home" in appended.stderr
    assert_intact(real, before)


def test_git_metadata_is_never_written(cli: Callable[..., Any], work: Path) -> None:
    write(work / ".git" / "config", "[core]\n")
    (work / "sub").mkdir()
    (work / ".GIT").mkdir()
    (work / "other").mkdir()
    write(work / "realgit" / "config", "[core]\n")
    os.symlink("../realgit", work / "other" / ".git")
    before = snapshot(work)
    attacks = [
        ("write", ".git/config", "[alias]\n\tx = !touch pwned\n", "is inside '"),
        ("append", ".git/config", "[core]\n\tfsmonitor = touch pwned", "is inside '"),
        ("write", ".git/hooks/pre-commit", "touch pwned", "is inside '"),
        ("mkdir", "sub/.git", None, "is '"),
        ("write", "sub/.git", "gitdir: ../evil", "is '"),
        ("write", ".GIT/config", "[core]", "is inside '"),
        ("write", ".Git", "gitdir: evil", "is '"),
        ("write", "other/.git/config", "[core]", "is inside 'other/.git'"),
        ("write", str(work / ".git" / "config"), "[core]", f"is inside '{work / '.git'}'"),
    ]
    for word, path, content, relation in attacks:
        args = ["files", word, path] + ([content] if content is not None else [])
        result = cli(*args)
        assert result.code == 3, (args, result.stdout, result.stderr)
        assert f"refused: {path!r} {relation}" in result.stderr, result.stderr
        assert "a git repository's metadata (.git)" in result.stderr
        assert "protected path: .git" in result.stderr
    assert snapshot(work) == before
    assert not (work / "pwned").exists()
    # names that merely contain ".git" stay writable, and reading .git is unchanged
    (work / "my.git").mkdir()
    (work / ".github" / "workflows").mkdir(parents=True)
    for path in ("my.git/x", ".github/workflows/ci.yml", ".gitignore", "sub/.gitkeep"):
        assert cli("files", "write", path, "ok").code == 0, path
        assert (work / path).read_text() == "ok\n"
    assert cli("files", "mkdir", "sub/git").code == 0
    assert cli("files", "read", ".git/config").code == 0
    assert cli("files", "list", ".git").code == 0


def test_policy_file_is_never_written(cli: Callable[..., Any], work: Path, tmp_path: Path) -> None:
    policy = write(work / "policy.yaml", "denied_binaries: [ls]\n")
    extra = {"RUNTIME_POLICY_FILE": str(policy)}
    for word in ("write", "append"):
        result = cli("files", word, "policy.yaml", "allowed_binaries: [rm]", extra_env=extra)
        assert result.code == 3, result.stderr
        assert f"refused: 'policy.yaml' is the user policy file ({policy})" in result.stderr
        assert "protected path: policy file" in result.stderr
    assert policy.read_text() == "denied_binaries: [ls]\n"
    # named through a link outside the working folder: its real file is protected
    target = write(work / "real-policy.yaml", "denied_binaries: [ls]\n")
    (tmp_path / "conf").mkdir()
    os.symlink(target, tmp_path / "conf" / "link.yaml")
    linked = {"RUNTIME_POLICY_FILE": str(tmp_path / "conf" / "link.yaml")}
    result = cli("files", "write", "real-policy.yaml", "{}", extra_env=linked)
    assert result.code == 3 and "protected path: policy file" in result.stderr
    assert target.read_text() == "denied_binaries: [ls]\n"
    # other files in the same folder are writable
    assert cli("files", "write", "notes.txt", "x", extra_env=extra).code == 0


def test_plan_shows_the_refusal_and_nothing_runs(
    cli: Callable[..., Any], user: Path, tmp_path: Path
) -> None:
    home = user / ".local" / "share" / "runtime"
    populate(cli, home, user)
    write(
        user / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, notes.txt, ok]\n"
            "  - provider: files\n    args: [write, .local/share/runtime/policy.yaml, x]\n"
            "  - provider: files\n    args: [mkdir, repo/.git]\n"
        ),
    )
    (user / "repo").mkdir()
    before_home, before_user = snapshot(home), snapshot(user)
    before_home.pop("audit/audit.jsonl")
    plan = cli("--output", "json", "capability", "plan", "cap.md", cwd=user)
    assert plan.code == 3, plan.stdout + plan.stderr
    decisions = [s["decision"] for s in plan.json()["steps"]]
    assert decisions[0]["allowed"]
    assert decisions[1]["allowed"] is False
    assert decisions[1]["rule"] == "protected path: Runtime Home"
    assert "'.local/share/runtime/policy.yaml' is inside Runtime Home" in decisions[1]["reason"]
    assert decisions[2]["rule"] == "protected path: .git"
    executed = cli("capability", "execute", "cap.md", cwd=user)
    assert executed.code == 3
    assert "step 2 (files write .local/share/runtime/policy.yaml x) refused by" in executed.stderr
    after_user = snapshot(user)
    after_home = snapshot(home)
    after_home.pop("audit/audit.jsonl")
    assert after_home == before_home
    assert {k: v for k, v in after_user.items() if not k.startswith(".local")} == {
        k: v for k, v in before_user.items() if not k.startswith(".local")
    }
    assert not (user / "notes.txt").exists() and not (user / "repo" / ".git").exists()


def test_execution_checks_again_without_the_plan(
    cli: Callable[..., Any], work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defence in depth: with the plan-time check gone, the step itself still refuses."""
    from providers.files import ops
    from runtime.provider import Inspection

    monkeypatch.setattr(ops, "inspect", lambda *args: Inspection())
    write(work / ".git" / "config", "[core]\n")
    result = cli("files", "write", ".git/config", "[core]\n\tfsmonitor = x")
    assert result.code == 3
    shown = result.stdout + result.stderr  # the step's own refusal is on the step's line
    assert f"refused: '.git/config' is inside '{work / '.git'}'" in shown
    assert "change a repository with `git` steps" in shown
    assert (work / ".git" / "config").read_text() == "[core]\n"
    policy = write(work / "policy.yaml", "timeout_seconds: 300\n")
    env = {"RUNTIME_POLICY_FILE": str(policy)}
    refused = cli("files", "append", "policy.yaml", "x", extra_env=env)
    assert refused.code == 3
    assert f"is the user policy file ({policy})" in refused.stdout + refused.stderr
    assert policy.read_text() == "timeout_seconds: 300\n"


def _chmod_or_skip(path: Path, mode: int) -> None:
    os.chmod(path, mode)
    if stat.S_IMODE(path.stat().st_mode) != mode:
        pytest.skip(f"this file system does not keep mode {mode:o} for a file")


@pytest.mark.parametrize("word", ["write", "append"])
@pytest.mark.parametrize(
    ("old", "new"),
    [
        (0o755, 0o644),
        (0o700, 0o600),
        (0o775, 0o664),
        (0o4755, 0o644),
        (0o2755, 0o644),
        (0o1755, 0o644),
    ],
)
def test_writing_over_a_file_drops_execute_and_special_bits(
    cli: Callable[..., Any], work: Path, word: str, old: int, new: int
) -> None:
    tool = write(work / "tool.sh", "#!/bin/sh\necho old\n")
    _chmod_or_skip(tool, old)
    result = cli("files", word, "tool.sh", "echo hi")
    assert result.code == 0, result.stdout + result.stderr
    assert stat.S_IMODE(tool.stat().st_mode) == new
    assert tool.read_text().endswith("echo hi\n")


def test_home_and_the_policy_reached_through_a_bind_mount_are_never_written(
    env: dict[str, str], work: Path, tmp_path: Path
) -> None:
    # a devcontainer may mount Home (or the policy's folder) into the workspace: the
    # mount is another real path to the same folders, and they stay protected
    require_tool("unshare", "to bind-mount a folder in a mount namespace of its own")
    home = Path(env["RUNTIME_HOME"])
    policies = tmp_path / "policies"
    policy = write(policies / "policy.yaml", "denied_binaries: [ls]\n")
    assert run_checkout(env, work, "bootstrap").code == 0
    before = (home / "config.yaml").read_bytes() if (home / "config.yaml").exists() else None
    script = (
        'mkdir -p "$1/mnt-home" "$1/mnt-policies" && mount --bind "$2" "$1/mnt-home" && '
        'mount --bind "$3" "$1/mnt-policies" && shift 3 && exec "$@"'
    )
    for target in ("mnt-home/config.yaml", "mnt-home/audit/x.txt", "mnt-policies/policy.yaml"):
        result = run_checkout(
            {**env, "RUNTIME_POLICY_FILE": str(policy)},
            work,
            "files",
            "write",
            target,
            "write_roots: [/]",
            prefix=(
                "unshare",
                "--mount",
                "--map-root-user",
                "--propagation",
                "private",
                "sh",
                "-c",
                script,
                "sh",
                str(work),
                str(home),
                str(policies),
            ),
        )
        assert result.code == 3, (target, result.stdout + result.stderr)
        assert "protected path" in result.stderr, result.stderr
    assert policy.read_text() == "denied_binaries: [ls]\n"
    after = (home / "config.yaml").read_bytes() if (home / "config.yaml").exists() else None
    assert after == before
    assert not (home / "audit" / "x.txt").exists()


# -- any git repository, bare ones included ---------------------------------------------------


def _git(cwd: Path, *args: str) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd)}
    env.update({"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"})
    env.update({"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@a"})
    env.update({"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@a"})
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _refused_as_repository(
    result: Any, path: str, relation: str = "is inside", *, planned: bool = True
) -> None:
    """Refused (exit 3) as a git repository; ``planned``: by plan, which names the rule (a
    step that refuses when it runs says why, not which rule)."""
    assert result.code == 3, (path, result.stdout + result.stderr)
    text = result.stdout + result.stderr
    assert f"refused: {path!r} {relation} '" in text, text
    assert "a git repository" in text and "which capabilities never write" in text, text
    assert not planned or "protected path: git repository" in text, text


def test_a_bare_repository_an_earlier_step_made_is_never_written(
    cli: Callable[..., Any], work: Path, tmp_path: Path
) -> None:
    """`git init --bare far`, then `files write far/config`: checked when the files step
    runs, on the file system, since far did not exist when the run was planned."""
    require_tool("git", "a step makes a bare repository with git")
    canary = tmp_path / "CANARY"
    config = f"[core]\n\tbare = true\n\talternateRefsCommand = touch {canary}\n"
    attacks = [
        ("write", "far/config", config),
        ("append", "far/config", f"[core]\n\thooksPath = {work / 'h'}"),
        ("write", "far/hooks/post-receive", f"#!/bin/sh\ntouch {canary}"),
        ("write", "far/objects/info/alternates", str(work / "other" / ".git" / "objects")),
        ("mkdir", "far/hooks/more", None),
        ("write", "far", "x"),
    ]
    for n, (word, path, content) in enumerate(attacks):
        args = [word, path] + ([content] if content is not None else [])
        listed = ", ".join(json.dumps(a) for a in args)
        write(
            work / f"cap{n}.md",
            capability(
                "version: v1\nworkflow:\n"
                "  - binary: git\n    args: [init, -q, --bare, far]\n"
                f"  - provider: files\n    args: [{listed}]\n"
            ),
        )
        # planned before far exists: the plan cannot see it; the step itself refuses
        assert cli("capability", "plan", f"cap{n}.md").code == 0
        result = cli("capability", "execute", f"cap{n}.md")
        relation = "is" if path == "far" else "is inside"
        _refused_as_repository(result, path, relation, planned=False)
        assert "step 1 stays applied" in result.stderr
        made = snapshot(work / "far")
        assert "hooks/post-receive" not in made and "hooks/more" not in made
        assert b"alternateRefsCommand" not in (made["config"] or b"")
        assert b"hooksPath" not in (made["config"] or b"")
        assert "objects/info/alternates" not in made
        # the next run finds it already there: refused at plan time (and by execute)
        plan = cli("--output", "json", "capability", "plan", f"cap{n}.md")
        assert plan.code == 3, plan.stdout + plan.stderr
        assert plan.json()["steps"][1]["decision"]["rule"] == "protected path: git repository"
        shutil.rmtree(work / "far")  # the next case starts afresh
    # a delete inside one, allowed as a destroy by the user's policy, is refused too
    policy = write(tmp_path / "policy.yaml", "allowed_destructive: [files delete]\n")
    _git(work, "init", "-q", "--bare", "far")
    deleted = cli(
        "files", "delete", "far/description", extra_env={"RUNTIME_POLICY_FILE": str(policy)}
    )
    _refused_as_repository(deleted, "far/description")
    assert (work / "far" / "description").exists()
    assert not canary.exists()


def test_every_kind_of_repository_metadata_is_protected(
    cli: Callable[..., Any], work: Path
) -> None:
    require_tool("git", "the repositories are made by git")
    _git(work, "init", "-q", "--bare", "vendor/crafted.git")  # any name, at any depth
    _git(work, "init", "-q", "--separate-git-dir", str(work / "store"), "tree")  # .git file
    _git(work, "init", "-q", "main")
    _git(work / "main", "commit", "-q", "--allow-empty", "-m", "one")
    _git(work / "main", "worktree", "add", "-q", "../linked")  # linked/.git, a gitfile
    (work / "main" / ".git").rename(work / "moved")  # whatever its name
    # a worktree's metadata outside its repository: HEAD, and commondir naming the rest
    (work / "moved" / "worktrees" / "linked").rename(work / "wtmeta")
    (work / "wtmeta" / "commondir").write_text(f"{work / 'moved'}\n")
    before = snapshot(work)
    cases = [
        ("write", "vendor/crafted.git/config", "is inside"),
        ("write", "vendor/crafted.git/hooks/pre-receive", "is inside"),
        ("mkdir", "vendor/crafted.git", "is"),
        ("write", "store/config", "is inside"),
        ("write", "moved/config", "is inside"),
        ("write", "wtmeta/config.worktree", "is inside"),
        ("write", "wtmeta/HEAD", "is inside"),
    ]
    for word, path, relation in cases:
        args = ["files", word, path] + (["x"] if word == "write" else [])
        _refused_as_repository(cli(*args), path, relation)
    linked = cli("files", "write", "linked/.git", "gitdir: /elsewhere")  # by its name
    assert linked.code == 3 and "protected path: .git" in linked.stderr
    assert snapshot(work) == before
    # a working tree is not its metadata: its files stay writable
    for path in ("tree/notes.txt", "linked/notes.txt", "vendor/README"):
        assert cli("files", "write", path, "ok").code == 0, path


def test_the_write_that_would_make_a_repository_is_refused(
    cli: Callable[..., Any], work: Path
) -> None:
    """Made from nothing, file by file: the entry that completes HEAD, objects and refs."""
    for path in ("far", "far/objects", "far/refs"):
        assert cli("files", "mkdir", path).code == 0, path
    assert cli("files", "write", "far/description", "x").code == 0  # not one yet
    _refused_as_repository(
        cli("files", "write", "far/HEAD", "ref: refs/heads/main"), "far/HEAD", "would make"
    )
    (work / "far" / "refs").rmdir()
    assert cli("files", "write", "far/HEAD", "ref: refs/heads/main").code == 0
    _refused_as_repository(cli("files", "mkdir", "far/refs"), "far/refs", "would make")
    assert cli("files", "mkdir", "plain").code == 0
    assert cli("files", "write", "plain/HEAD", "a file named HEAD").code == 0
    assert not (work / "far" / "refs").exists()
