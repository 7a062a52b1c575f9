"""Fitting in: completion, new capabilities, pre-commit, the GitHub Action, spec, doctor, colour."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO, RUNTIME_BIN, capability, write


def complete(env: dict[str, str], cwd: Path, shell: str, line: str) -> list[str]:
    """Ask the completion entry point the way each shell's script does."""
    extra = {"_RUNTIME_COMPLETE": f"complete_{shell}"}
    if shell == "bash":
        words = line.split()
        cword = len(words) if line.endswith(" ") else len(words) - 1
        extra.update({"COMP_WORDS": line, "COMP_CWORD": str(cword)})
    else:
        extra["_TYPER_COMPLETE_ARGS"] = line
        if shell == "fish":
            extra["_TYPER_COMPLETE_FISH_ACTION"] = "get-args"
    proc = subprocess.run(
        [str(RUNTIME_BIN)],
        env={**env, **extra},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    if shell == "zsh":
        return (
            [w.strip('"') for w in out.split("((")[1].split("))")[0].split()] if "((" in out else []
        )
    return [line.split("\t")[0] for line in out.splitlines() if line]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_dynamic_completion(env: dict[str, str], work: Path, shell: str) -> None:
    write(
        work / "capabilities" / "notes-roundtrip.md", (EXAMPLES / "notes-roundtrip.md").read_text()
    )
    subprocess.run(
        [str(RUNTIME_BIN), "context", "set", "work", "organization=acme"],
        env=env,
        cwd=work,
        check=True,
        capture_output=True,
    )
    assert "repo" in complete(env, work, shell, "runtime github ")
    assert complete(env, work, shell, "runtime github repo ") == [
        "create",
        "list",
        "summary",
        "view",
    ]
    assert complete(env, work, shell, "runtime files wr") == ["write"]
    assert complete(env, work, shell, "runtime capability execute notes") == ["notes-roundtrip"]
    assert complete(env, work, shell, "runtime capability execute notes-roundtrip --input ") == [
        "folder=",
        "note=",
    ]
    assert complete(
        env, work, shell, "runtime capability plan notes-roundtrip --input folder=x --input "
    ) == ["note="]
    assert complete(env, work, shell, "runtime context use ") == ["work"]


# what only that shell's completion script holds
SHELL_SCRIPTS = {
    "bash": "COMPREPLY=",
    "zsh": "#compdef runtime",
    "fish": "complete --command runtime",
}


@pytest.mark.parametrize("shell", list(SHELL_SCRIPTS))
def test_show_completion_script(env: dict[str, str], work: Path, shell: str) -> None:
    # the shell named, not the one runtime runs in (bash here, as SHELL says)
    proc = subprocess.run(
        [str(RUNTIME_BIN), "--show-completion", shell],
        env={**env, "SHELL": "/bin/bash"},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert "_RUNTIME_COMPLETE" in proc.stdout
    assert [s for s, mark in SHELL_SCRIPTS.items() if mark in proc.stdout] == [shell]


def test_install_completion_writes_the_shell_config(
    env: dict[str, str], work: Path, tmp_path: Path
) -> None:
    fake_home = tmp_path / "userhome"
    fake_home.mkdir()
    proc = subprocess.run(
        [str(RUNTIME_BIN), "--install-completion", "bash"],
        env={**env, "HOME": str(fake_home)},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert "runtime" in (fake_home / ".bashrc").read_text() or any(fake_home.rglob("*runtime*"))
    # another shell named is that shell's config, whatever shell runs runtime
    zsh_home = tmp_path / "zsh-user"
    zsh_home.mkdir()
    proc = subprocess.run(
        [str(RUNTIME_BIN), "--install-completion", "zsh"],
        env={**env, "HOME": str(zsh_home), "SHELL": "/bin/bash"},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in zsh_home.iterdir()) == [".zfunc", ".zshrc"]
    assert "#compdef runtime" in (zsh_home / ".zfunc" / "_runtime").read_text()


def test_new_capability_validates_and_never_overwrites(cli, work: Path) -> None:
    for provider in ("files", "github"):
        name = f"my-{provider}-cap"
        made = cli("capability", "new", name, "--provider", provider)
        assert made.code == 0, made.stderr
        path = work / "capabilities" / f"{name}.md"
        checked = cli("--output", "json", "capability", "validate", str(path)).json()
        assert checked["ok"] and checked["capabilities"][0]["problems"] == []
        text = path.read_text()
        assert (
            text.startswith("---\nname: " + name) and "## Lineage" in text and "```runtime" in text
        )
        before = path.read_bytes()
        again = cli("capability", "new", name)
        assert again.code == 2 and "already exists" in again.stderr
        assert path.read_bytes() == before
    assert cli("capability", "new", "Bad Name").code == 2


def test_pre_commit_hook_entry(cli, work: Path) -> None:
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
    entry = next(
        line.split(":", 1)[1].strip()
        for line in hooks.splitlines()
        if line.strip().startswith("entry:")
    )
    args = entry.split()[1:]  # drop the program name
    write(work / "README.md", "# Notes, no runtime block\n")
    write(
        work / "good.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"),
    )
    write(
        work / "bad.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [lst, .]\n"),
    )
    result = cli(*args, "README.md", "good.md", "bad.md")
    assert result.code == 2
    assert (
        result.stdout.splitlines()[0]
        == "bad.md:9:12: error: step 1: 'lst .' is not an operation of 'files'"
    )
    assert "README.md" not in result.stdout.splitlines()[0]
    ok = cli(*args, "README.md", "good.md")
    assert ok.code == 0


def run_action(
    env: dict[str, str], work: Path, tmp_path: Path, capability_path: str, inputs: str
) -> tuple[int, dict[str, str]]:
    output = tmp_path / "github_output"
    output.write_text("")
    proc = subprocess.run(
        ["bash", str(REPO / "action" / "run.sh")],
        env={
            **env,
            "PATH": f"{RUNTIME_BIN.parent}:{env['PATH']}",
            "GITHUB_OUTPUT": str(output),
            "GITHUB_ACTION_PATH": str(REPO),
            "RUNTIME_ACTION_SKIP_INSTALL": "1",
            "RUNTIME_ACTION_CAPABILITY": capability_path,
            "RUNTIME_ACTION_INPUTS": inputs,
        },
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = output.read_text()
    outputs: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if "<<" in lines[i]:
            key, delim = lines[i].split("<<", 1)
            end = lines.index(delim, i + 1)
            outputs[key] = "\n".join(lines[i + 1 : end])
            i = end + 1
        else:
            key, _, value = lines[i].partition("=")
            outputs[key] = value
            i += 1
    return proc.returncode, outputs


def test_github_action_script(env: dict[str, str], work: Path, tmp_path: Path) -> None:
    code, outputs = run_action(
        env, work, tmp_path, str(EXAMPLES / "notes-roundtrip.md"), "folder=out\nnote=a = b\n"
    )
    assert code == 0 and outputs["exit-code"] == "0"
    result = json.loads(outputs["result"])
    assert result["status"] == "ok" and (work / "out" / "note.txt").read_text() == "a = b\n"
    code, outputs = run_action(
        env, work, tmp_path, str(EXAMPLES / "notes-roundtrip.md"), "folder=out\n"
    )
    assert code == 2 and outputs["exit-code"] == "2"
    assert json.loads(outputs["result"])["error"]["code"] == "missing-input"


def test_capability_spec_prints_the_reference_from_home(cli, home: Path) -> None:
    result = cli("capability", "spec")
    assert result.code == 0
    assert result.stdout == (home / "specs" / "capability-spec.md").read_text()
    assert cli("capability", "spec", "github").stdout.startswith("# The `github` provider")


def test_doctor(cli, home: Path, tmp_path: Path) -> None:
    cli("bootstrap")
    healthy = cli(
        "--output",
        "json",
        "doctor",
        extra_env={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"},
    )
    doc = healthy.json()
    names = {c["check"]: c for c in doc["checks"]}
    assert set(names) >= {
        "home",
        "policy",
        "config",
        "keyring",
        "gh",
        "allowed binaries",
        "providers",
    }
    assert (
        names["keyring"]["status"] == "warning"
        and "RUNTIME_GITHUB_TOKEN" in names["keyring"]["fix"]
    )
    (home / "specs" / "capability-spec.md").write_text("tampered\n")
    broken_policy = write(tmp_path / "p.yaml", "allowed_binary: [x]\n")
    result = cli("doctor", extra_env={"RUNTIME_POLICY_FILE": str(broken_policy)})
    assert result.code == 5
    assert "runtime-owned file(s) differ" in result.stdout and "runtime bootstrap" in result.stdout
    assert "unknown policy key 'allowed_binary'" in result.stdout


def run_in_pty(args: list[str], env: dict[str, str], cwd: Path) -> str:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(RUNTIME_BIN), *args], stdout=follower, stderr=follower, env=env, cwd=cwd
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 10)
        if not ready:
            break
        try:
            data = os.read(leader, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=30)
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_and_no_color_honoured(
    env: dict[str, str], work: Path, cli
) -> None:
    write(
        work / "bad.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [lst, .]\n"),
    )
    on_tty = run_in_pty(["capability", "validate", "bad.md"], env, work)
    assert "\x1b[31merror\x1b[0m" in on_tty
    assert "\x1b[" not in run_in_pty(
        ["capability", "validate", "bad.md"], {**env, "NO_COLOR": "1"}, work
    )
    piped = cli("capability", "validate", "bad.md")
    assert "\x1b[" not in piped.stdout + piped.stderr


def test_live_progress_only_on_a_terminal(
    env: dict[str, str], work: Path, tmp_path: Path, cli
) -> None:
    policy = write(tmp_path / "policy.yaml", "allowed_binaries: [sleep]\n")
    write(
        work / "slow.md",
        capability('version: v1\nworkflow:\n  - binary: sleep\n    args: ["2.5"]\n'),
    )
    on_tty = run_in_pty(
        ["capability", "execute", "slow.md"], {**env, "RUNTIME_POLICY_FILE": str(policy)}, work
    )
    assert "\r[1/1] sleep 2.5 ... 1s" in on_tty and "ok:" in on_tty
    piped = cli("capability", "execute", "slow.md", extra_env={"RUNTIME_POLICY_FILE": str(policy)})
    assert piped.code == 0 and "\r" not in piped.stdout
