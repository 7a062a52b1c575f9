"""Edges a new user meets on the first day (issue 29, item 7).

Each through the real CLI: the JSON documents of a refused or invalid run read like a
run's, the commands that only read work where Home cannot be made, completion for the
shell named, a delete of what is not there, a commit where git knows nobody, and the
README's way to put `runtime` on PATH.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, capability, check_schema, write


def test_the_error_document_has_a_status_as_a_run_document_does(
    cli: Callable[..., Result], work: Path
) -> None:
    ran = write(
        work / "ok.md", capability("version: v1\nworkflow:\n  - binary: echo\n    args: [hi]\n")
    )
    refused = write(
        work / "refused.md",
        capability("version: v1\nworkflow:\n  - binary: git\n    args: [stauts]\n"),
    )
    invalid = write(work / "invalid.md", capability("version: v2\nworkflow: []\n"))
    seen = {}
    for path, code in ((ran, 0), (refused, 3), (invalid, 2)):
        result = cli("-o", "json", "capability", "execute", str(path))
        assert result.code == code, result.stdout + result.stderr
        seen[path.stem] = result.json()["status"]
        if code:
            check_schema(result.json(), "error")
    assert seen == {"ok": "ok", "refused": "refused", "invalid": "invalid"}
    usage = cli("-o", "json", "files", "reed", "x")
    assert usage.code == 2
    assert usage.json()["status"] == "invalid"
    check_schema(usage.json(), "error")


def test_install_completion_names_the_shell_and_refuses_powershell_clearly(
    cli_proc: Callable[..., Result], tmp_path: Path
) -> None:
    user = tmp_path / "user"
    user.mkdir()
    shells = {"HOME": str(user), "SHELL": "/bin/bash"}
    zsh = cli_proc("--install-completion", "zsh", extra_env=shells)
    assert zsh.code == 0, zsh.stderr
    assert zsh.stdout.startswith(f"zsh completion installed in {user / '.zfunc' / '_runtime'}\n")
    assert "Shells." not in zsh.stdout
    for name in ("powershell", "pwsh"):
        refused = cli_proc("--install-completion", name, extra_env=shells)
        assert refused.code == 2, refused.stderr
        assert "runtime does not install PowerShell completion" in refused.stderr
        assert "`runtime --show-completion pwsh` prints the script" in refused.stderr
        assert "internal error" not in refused.stderr
    shown = cli_proc("--show-completion", "pwsh", extra_env=shells)
    assert shown.code == 0 and "Register-ArgumentCompleter" in shown.stdout
    assert sorted(p.name for p in user.iterdir()) == [".zfunc", ".zshrc"]


def test_deleting_a_missing_file_is_a_step_failure_not_a_missing_capability(
    cli: Callable[..., Result], work: Path, home: Path
) -> None:
    write(home / "policy.yaml", "allowed_destructive: [files delete]\n")
    path = write(
        work / "cleanup.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [delete, gone.txt]\n"),
    )
    for args in (["capability", "execute", str(path)], ["files", "delete", "gone.txt"]):
        result = cli(*args)
        assert result.code == 1, result.stdout + result.stderr
        assert "error: no such file: 'gone.txt'" in result.stderr
        assert "missing capability" not in result.stderr
    # what preflight says of it, and --strict, which refuses an Unknown, as documented
    report = cli("-o", "json", "capability", "preflight", str(path)).json()
    [check] = [c for c in report["checks"] if c["type"] == "localPath"]
    assert check["readiness"] == "Unknown"
    assert "does not exist now" in check["reason"]
    assert cli("capability", "execute", "--strict", str(path)).code == 5


def _git_steps(*steps: str) -> str:
    return "version: v1\nworkflow:\n" + "".join(
        f"  - binary: git\n    args: {step}\n" for step in steps
    )


def test_a_capability_sets_the_repository_identity_to_commit_where_git_knows_nobody(
    cli: Callable[..., Result], work: Path, home: Path
) -> None:
    import os

    from runtime.execute import sandbox
    from tests.conftest import require_tool

    require_tool("git", "the steps run git")
    require_tool("bwrap", "binary steps run confined by bubblewrap")
    if not sandbox.probe(os.environ.get("PATH", "")).ok:
        import pytest

        pytest.skip(sandbox.probe(os.environ.get("PATH", "")).reason)
    assert not (home.parent / ".gitconfig").exists()  # as on a CI runner: no global identity
    init = write(work / "init.md", capability(_git_steps("[init, -q, -b, main]")))
    assert cli("capability", "execute", str(init)).code == 0
    commit = "[commit, -q, --allow-empty, -m, release]"
    nobody = write(work / "nobody.md", capability(_git_steps(commit)))
    failed = cli("capability", "execute", str(nobody))
    assert failed.code == 1 and "Please tell me who you are" in failed.stderr
    release = write(
        work / "release.md",
        capability(
            _git_steps(
                "[config, user.name, CI Bot]",
                "[config, --local, User.Email, ci@example.com]",
                commit,
                "[log, -1, '--format=%an <%ae>']",
            )
        ),
    )
    ran = cli("capability", "execute", str(release))
    assert ran.code == 0, ran.stdout + ran.stderr
    assert ran.stdout.endswith("CI Bot <ci@example.com>\n")
    # only those two keys, only in the repository, and a value git would not take as an option
    for step in (
        "[config, core.sshCommand, 'touch x']",
        "[config, alias.ci, '!touch x']",
        "[config, --global, user.name, Someone]",
        "[config, --file, elsewhere, user.name, Someone]",
        "[config, user.name, A, B]",
    ):
        path = write(work / "other.md", capability(_git_steps(step)))
        refused = cli("capability", "execute", str(path))
        assert refused.code == 3, (step, refused.stderr)
        assert "git config only reads, and sets only the identity" in refused.stderr
    assert "sshCommand" not in (work / ".git" / "config").read_text()


def test_the_readme_puts_runtime_on_path_after_make_run(tmp_path: Path) -> None:
    """Each of the README's ways, run as written from the checkout, then `runtime` by name
    from another folder."""
    import os
    import re
    import subprocess

    from tests.conftest import REPO

    made = REPO / ".venv" / "bin" / "runtime"
    if not made.exists():
        import pytest

        pytest.skip(f"{made} is not there: this checkout's tests run another venv's runtime")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ways = re.findall(r"^    ((?:export PATH=|ln -s ).*?)\s+#", readme, re.MULTILINE)
    assert [w.split()[0] for w in ways] == ["export", "ln"], ways
    user = tmp_path / "user"
    (user / ".local" / "bin").mkdir(parents=True)
    bare = f"{user / '.local' / 'bin'}:/usr/bin:/bin"
    for way in ways:
        done = subprocess.run(
            ["bash", "-c", f"{way} && cd / && runtime --version"],
            cwd=REPO,
            env={"PATH": bare, "HOME": str(user), "LANG": "C.UTF-8"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, (way, done.stderr)
        assert done.stdout.startswith("runtime "), done.stdout
    assert os.path.islink(user / ".local" / "bin" / "runtime")


READ_ONLY_COMMANDS = (
    ("capability", "validate", "cap.md"),
    ("capability", "show", "cap.md"),
    ("capability", "list"),
    ("capability", "spec"),
    ("capability", "spec", "files"),
)


def _cap_in(work: Path) -> None:
    body = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"
    write(work / "cap.md", capability(body, title="Listing"))
    write(work / "capabilities" / "listing.md", capability(body, title="Listing"))


def _reads_alike(results: dict[tuple[str, ...], Result]) -> None:
    for command, result in results.items():
        assert result.code == 0, (command, result.stderr)
        assert "Runtime Home" not in result.stderr, (command, result.stderr)
    assert "1 valid" in results[READ_ONLY_COMMANDS[0]].stdout
    assert results[READ_ONLY_COMMANDS[1]].stdout.startswith("Listing  (cap.md)")
    assert "listing" in results[READ_ONLY_COMMANDS[2]].stdout
    assert results[READ_ONLY_COMMANDS[3]].stdout.startswith("# Capability authoring reference")
    assert results[READ_ONLY_COMMANDS[4]].stdout.startswith("# The `files` provider")


def test_the_commands_that_only_read_work_with_a_read_only_home(
    env: dict[str, str], work: Path, tmp_path: Path
) -> None:
    from tests.conftest import run_checkout, without_read_override

    _cap_in(work)
    user = tmp_path / "user"
    user.mkdir()
    user.chmod(0o555)  # HOME read-only: Runtime Home (~/.local/share/runtime) cannot be made
    bare = {k: v for k, v in env.items() if k != "RUNTIME_HOME"} | {"HOME": str(user)}
    prefix = without_read_override()
    try:
        _reads_alike({c: run_checkout(bare, work, *c, prefix=prefix) for c in READ_ONLY_COMMANDS})
        assert list(user.iterdir()) == []
        # doctor's fix for it is one that works: another Home, not `runtime bootstrap`
        doctor = run_checkout(bare, work, "-o", "json", "doctor", prefix=prefix)
        assert doctor.code == 5
        [found] = [c for c in doctor.json()["checks"] if c["check"] == "home"]
        assert found["detail"].endswith(f"cannot be created: {user} is not writable")
        assert "RUNTIME_HOME=" in found["fix"] and "bootstrap" not in found["fix"]
        other = bare | {"RUNTIME_HOME": str(tmp_path / "elsewhere")}
        assert run_checkout(other, work, "bootstrap", prefix=prefix).code == 0
        assert run_checkout(other, work, "doctor", prefix=prefix).stdout.startswith("OK      home")
    finally:
        user.chmod(0o755)


def test_the_commands_that_only_read_work_where_no_home_can_be_located(
    env: dict[str, str], work: Path, tmp_path: Path
) -> None:
    import subprocess

    from tests.conftest import RUNTIME_BIN

    _cap_in(work)
    # a uid the password database does not know, started with `env -i`: no HOME, none
    # to look up (the lookup fails as it does there)
    site = tmp_path / "site"
    write(
        site / "sitecustomize.py",
        "import pwd\n\n\ndef _unknown(uid):\n"
        "    raise KeyError(f'getpwuid(): uid not found: {uid}')\n\n\n"
        "pwd.getpwuid = _unknown\n",
    )
    bare = {"PATH": env["PATH"], "PYTHONPATH": f"{site}:{env['PYTHONPATH']}"}
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    def run(*command: str) -> Result:
        done = subprocess.run(
            [str(RUNTIME_BIN), *command],
            env={**bare, "TMPDIR": str(tmp)},
            cwd=work,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    _reads_alike({c: run(*c) for c in READ_ONLY_COMMANDS})
    assert list(tmp.iterdir()) == []  # the empty Home each used is gone
    assert sorted(p.name for p in work.iterdir()) == ["cap.md", "capabilities"]
