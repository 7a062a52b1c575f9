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
