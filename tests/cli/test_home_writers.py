"""What writes into Home and the working folder when they cannot be written, or when two
commands write at once: a usage error naming the file (exit 2), never an internal error,
and no change lost or half made."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import RUNTIME_BIN, run_checkout, without_read_override


def test_concurrent_context_sets_all_land(home: Path, env: dict[str, str], work: Path) -> None:
    # each `context set` reads contexts.json, adds its context and writes it back: without
    # turns, one that read before another wrote writes over the other's context
    assert run_checkout(env, work, "bootstrap").code == 0
    names = [f"c{i}" for i in range(10)]
    procs = [
        subprocess.Popen(
            [str(RUNTIME_BIN), "context", "set", name, f"organization={name}"],
            env=env,
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for name in names
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    data = json.loads((home / "contexts.json").read_text())
    assert sorted(data["contexts"]) == names
    assert data["active"] in names


def test_context_changes_in_a_read_only_home_are_exit_2(
    home: Path, env: dict[str, str], work: Path
) -> None:
    assert run_checkout(env, work, "context", "set", "dev", "organization=acme").code == 0
    before = (home / "contexts.json").read_bytes()
    home.chmod(0o555)
    try:
        as_user = without_read_override()
        for command in (
            ("context", "set", "dev", "organization=other"),
            ("context", "set", "new", "organization=x"),
            ("context", "use", "--none"),
            ("context", "delete", "dev"),
        ):
            result = run_checkout(env, work, *command, prefix=as_user)
            assert result.code == 2, (command, result.stderr)
            assert (
                f"error: cannot write {home / 'contexts.json'}: Permission denied; "
                "no context was changed\n" in result.stderr
            )
            assert "hint: make Runtime Home" in result.stderr
            assert "internal error" not in result.stderr
            shown = run_checkout(env, work, "-o", "json", *command, prefix=as_user)
            assert shown.code == 2
            assert json.loads(shown.stdout)["error"]["code"] == "usage"
    finally:
        home.chmod(0o755)
    assert (home / "contexts.json").read_bytes() == before


def test_capability_new_where_it_cannot_write_is_exit_2(
    env: dict[str, str], work: Path, tmp_path: Path
) -> None:
    assert run_checkout(env, work, "bootstrap").code == 0
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = run_checkout(
            env, locked, "capability", "new", "job", prefix=without_read_override()
        )
    finally:
        locked.chmod(0o755)
    assert result.code == 2, result.stderr
    assert (
        f"error: cannot write {locked / 'capabilities' / 'job.md'}: Permission denied; "
        "nothing was written\n" in result.stderr
    )
    assert "hint: run it in a folder you can write to" in result.stderr
    assert not (locked / "capabilities").exists()

    (work / "capabilities").write_text("a file, not a folder\n")
    result = run_checkout(env, work, "-o", "json", "capability", "new", "job")
    assert result.code == 2, result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["message"] == (
        f"cannot create {work / 'capabilities' / 'job.md'}: {work / 'capabilities'} is not a "
        "folder; nothing was written"
    )
    assert (work / "capabilities").read_text() == "a file, not a folder\n"


def test_capability_new_leaves_no_half_written_file(env: dict[str, str], work: Path) -> None:
    # a write that fails midway (a full disk; here a file size limit) must not leave a
    # file that the next try calls "already exists"
    assert run_checkout(env, work, "bootstrap").code == 0
    result = run_checkout(env, work, "capability", "new", "job", prefix=("prlimit", "--fsize=100"))
    assert result.code == 2, result.stderr
    assert "error: cannot write" in result.stderr
    assert "File too large; nothing was written" in result.stderr
    assert not (work / "capabilities").exists()  # nor the folder it made for it
    again = run_checkout(env, work, "capability", "new", "job")
    assert again.code == 0, again.stderr


def test_no_home_and_no_passwd_entry_is_exit_2_naming_runtime_home(
    env: dict[str, str], work: Path, tmp_path: Path
) -> None:
    # a container run as a uid /etc/passwd does not know, started with `env -i` (cron):
    # no HOME, and none to look up; the passwd lookup fails as it does there
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import pwd\n\n\ndef _unknown(uid):\n"
        "    raise KeyError(f'getpwuid(): uid not found: {uid}')\n\n\n"
        "pwd.getpwuid = _unknown\n"
    )
    bare = {"PATH": env["PATH"], "PYTHONPATH": f"{site}:{env['PYTHONPATH']}"}
    # (the commands that only read work there: tests/cli/test_edges.py)
    for command in (("files", "write", "a.txt", "x"), ("doctor",), ("capability", "execute", "c")):
        result = subprocess.run(
            [str(RUNTIME_BIN), *command],
            env=bare,
            cwd=work,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert "error: cannot tell where Runtime Home is: HOME is not set" in result.stderr
        assert "hint: set RUNTIME_HOME to a folder" in result.stderr
    assert not (work / "a.txt").exists()
    assert list(work.iterdir()) == []  # no Home made under a folder named "~" either
    given = subprocess.run(
        [str(RUNTIME_BIN), "files", "write", "a.txt", "x"],
        env={**bare, "RUNTIME_HOME": str(tmp_path / "home")},
        cwd=work,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert given.returncode == 0, given.stderr
