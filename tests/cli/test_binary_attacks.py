"""Binary steps under attack, through the real CLI, with the real git (and gh's api refusals).

Each test is one of the attacks the default policy let through before binary
steps were bound as authored, decided by subcommand, run with hardened git and
confined by the operating system. Each ends in a refusal before anything runs
(exit 2 or 3, naming the input, argument or rule) or in a step that cannot have
the effect: the canary file, the write, the token stays absent. The last tests
show that ordinary work still runs.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runtime.execute import sandbox
from tests.conftest import Result, capability, confinement_lines, require_tool, write


def confined() -> bool:
    return sandbox.probe(os.environ.get("PATH", "")).ok


def require_confinement() -> None:
    require_tool("bwrap", "binary steps run confined by bubblewrap")
    if not confined():
        pytest.skip(sandbox.probe(os.environ.get("PATH", "")).reason)


def git(*args: str, cwd: Path) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C"}
    env.update({"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"})
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def repo(work: Path, home: Path) -> Path:
    """A repository in the working folder, with one commit; the user's identity in ~/.gitconfig."""
    write(home.parent / ".gitconfig", "[user]\n\tname = Ada Tester\n\temail = ada@example.com\n")
    git("init", "-q", "-b", "main", cwd=work)
    git(
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@x",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "first",
        cwd=work,
    )
    return work


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    return tmp_path / "CANARY"


def cap(work: Path, body: str, name: str = "cap.md") -> str:
    write(work / name, capability(body))
    return name


def one_input(name: str, *steps: str) -> str:
    body = f"version: v1\ninputs:\n  {name}:\n    required: true\nworkflow:\n"
    return body + "".join(f"  - binary: {step}\n" for step in steps)


def steps(*lines: str) -> str:
    return "version: v1\nworkflow:\n" + "".join(f"  - binary: {line}\n" for line in lines)


def refused(result: Result, code: int, *words: str) -> None:
    assert result.code == code, result.stdout + result.stderr
    text = result.stdout + result.stderr
    assert "nothing ran" in text, text
    for word in words:
        assert word in text, (word, text)


# -- 1. an input never becomes an option ----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        '[fetch, "${v}"]',
        '[ls-remote, "${v}", .]',
        '[clone, "${v}", src, dst]',
        '[push, "${v}", origin]',
    ],
)
def test_an_upload_pack_from_an_input_runs_no_program(
    cli: Callable[..., Result], repo: Path, canary: Path, args: str
) -> None:
    name = cap(repo, one_input("v", f"git\n    args: {args}"))
    value = f"v=--upload-pack=touch {canary}; git-upload-pack"
    result = cli("capability", "execute", name, "--input", value)
    refused(result, 2, "input 'v'", "starts with '-'", "cap.md:")
    assert not canary.exists()


@pytest.mark.parametrize(
    "args",
    [
        '[clone, -u, "${v}", ., dst]',
        '[fetch, "--upload-pack=${v}", .]',
        '[push, "--receive-pack=${v}", ., main]',
        '[push, "--exec=${v}", ., main]',
    ],
)
def test_a_program_option_filled_by_an_input_is_refused(
    cli: Callable[..., Result], repo: Path, canary: Path, args: str
) -> None:
    name = cap(repo, one_input("v", f"git\n    args: {args}"))
    result = cli("capability", "execute", name, "--input", f"v=touch {canary}")
    refused(result, 3, "literal_options: git", "input 'v'")
    assert not canary.exists()


def test_archive_exec_is_not_an_allowed_subcommand(
    cli: Callable[..., Result], repo: Path, canary: Path
) -> None:
    name = cap(repo, steps(f'git\n    args: [archive, --remote=., "--exec=touch {canary}", HEAD]'))
    refused(cli("capability", "execute", name), 3, "'archive' is not an allowed git subcommand")
    assert not canary.exists()


# -- 2. the audit log cannot be overwritten through git's --output ---------------------------------


def test_output_into_the_audit_log_is_refused(
    cli: Callable[..., Result], repo: Path, home: Path
) -> None:
    assert cli("files", "write", "seed.txt", "x").code == 0  # one run recorded
    log = home / "audit" / "audit.jsonl"
    before = log.read_text()
    name = cap(repo, one_input("rev", 'git\n    args: [log, -1, "--format=%s", "${rev}"]'))
    result = cli("capability", "execute", name, "--input", f"rev=--output={log}")
    refused(result, 2, "input 'rev'")
    after = log.read_text()
    assert after.startswith(before)  # nothing truncated, nothing forged: one refusal appended
    assert all(json.loads(line)["event"] for line in after.splitlines())
    literal = cap(repo, steps(f'git\n    args: [log, -1, "--format=forged", "--output={log}"]'))
    refused(cli("capability", "execute", literal), 3, "denied_arguments: git --output")
    assert log.read_text().startswith(after)


# -- 3. no shell through git ------------------------------------------------------------------------


def test_git_config_writes_are_refused_so_an_alias_cannot_run(
    cli: Callable[..., Result], repo: Path, canary: Path
) -> None:
    name = cap(
        repo,
        steps(f"git\n    args: [config, alias.x, '!touch {canary}']", "git\n    args: [x]"),
    )
    refused(cli("capability", "execute", name), 3, "git config only reads")
    assert "alias" not in (repo / ".git" / "config").read_text()
    fsmonitor = cap(
        repo,
        steps(
            f"git\n    args: [config, core.fsmonitor, 'touch {canary}']", "git\n    args: [status]"
        ),
        "fsmonitor.md",
    )
    refused(cli("capability", "execute", fsmonitor), 3, "git config only reads")
    assert not canary.exists()
    reads = cap(
        repo,
        steps("git\n    args: [config, --get, user.name]", "git\n    args: [config, --list]"),
        "reads.md",
    )
    assert cli("capability", "execute", reads).code == 0


def test_an_alias_written_into_git_config_by_files_cannot_run(
    cli: Callable[..., Result], repo: Path, canary: Path
) -> None:
    config = (repo / ".git" / "config").read_text()
    name = cap(
        repo,
        "version: v1\nworkflow:\n"
        "  - provider: files\n"
        f'    args: [write, .git/config, "[alias]\\n  x = !touch {canary}\\n"]\n'
        "  - binary: git\n    args: [x]\n",
    )
    refused(cli("capability", "execute", name), 3)
    assert (repo / ".git" / "config").read_text() == config
    assert not canary.exists()


def test_repository_config_that_names_programs_runs_none_of_them(
    cli: Callable[..., Result], repo: Path, canary: Path
) -> None:
    """Configuration already in the repository (or put there by anyone) starts no program."""
    with (repo / ".git" / "config").open("a") as fh:
        fh.write(f"[core]\n\tfsmonitor = touch {canary}\n\tpager = touch {canary}\n")
        fh.write(f"[diff]\n\texternal = touch {canary}\n")
    write(repo / "a.txt", "one\n")
    name = cap(
        repo,
        steps("git\n    args: [status]", "git\n    args: [add, a.txt]", "git\n    args: [log]"),
    )
    result = cli("capability", "execute", name)
    assert result.code == 0, result.stdout + result.stderr
    assert not canary.exists()


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        ("[difftool, '--extcmd=touch {canary}', HEAD]", "'difftool' is not an allowed"),
        ("[rebase, --exec, 'touch {canary}', HEAD]", "'rebase' is not an allowed"),
        ("[grep, '--open-files-in-pager=touch {canary}', x]", "denied_arguments: git"),
        ("[grep, '-Otouch {canary}', x]", "denied_arguments: git grep -O"),
        ("[config, --global, core.pager, 'touch {canary}']", "git config only reads"),
    ],
)
def test_program_running_commands_are_refused(
    cli: Callable[..., Result], repo: Path, canary: Path, home: Path, args: str, rule: str
) -> None:
    name = cap(repo, steps(f"git\n    args: {args.format(canary=canary)}"))
    refused(cli("capability", "execute", name), 3, rule)
    assert not canary.exists()
    assert "pager" not in (home.parent / ".gitconfig").read_text()


# -- 4. denied runs spelled another way --------------------------------------------------------------


def test_an_alias_for_push_force_is_not_run(cli: Callable[..., Result], repo: Path) -> None:
    git("config", "alias.pf", "push --force", cwd=repo)  # the user's own alias
    name = cap(repo, steps("git\n    args: [pf, origin, main]"))
    refused(cli("capability", "execute", name), 3, "'pf' is not an allowed git subcommand")


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        ("[send-pack, --force, ., main]", "'send-pack' is not an allowed"),
        ("[config, remote.origin.push, '+refs/heads/main:refs/heads/main']", "only reads"),
        ("[config, remote.origin.mirror, 'true']", "only reads"),
        ("[remote, add, --mirror=push, backup, ../b.git]", "denied_arguments: git remote --mirror"),
        ("[config, clean.requireForce, 'false']", "only reads"),
        ("[clean, -d]", "'clean' is not an allowed"),
        ("[checkout, -f, main]", "denied_arguments: git checkout -f"),
        ("[checkout, --force, main]", "denied_arguments: git checkout --force"),
        ("[restore, --worktree, .]", "'restore' is not an allowed"),
        ("[read-tree, -u, --reset, HEAD]", "'read-tree' is not an allowed"),
        ("[checkout, --, .]", "denied_arguments: git checkout --"),
        ("[stash, drop]", "denied_arguments: git stash drop"),
        ("[branch, -D, main]", "denied_arguments: git branch -D"),
        ("[-c, 'core.pager=touch pwned', log]", "git's configuration is not set"),
        ("[--config-env=core.pager=X, log]", "git's configuration is not set"),
        ("[clone, -qc, 'core.sshCommand=touch pwned', ., copy]", "denied_arguments: git clone -c"),
    ],
)
def test_denied_git_runs_spelled_another_way(
    cli: Callable[..., Result], repo: Path, args: str, rule: str
) -> None:
    write(repo / "tracked.txt", "committed\n")
    git("add", "tracked.txt", cwd=repo)
    git("-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "t", cwd=repo)
    write(repo / "tracked.txt", "work in progress\n")
    config = (repo / ".git" / "config").read_text()
    name = cap(repo, steps(f"git\n    args: {args}"))
    refused(cli("capability", "execute", name), 3, rule)
    assert (repo / "tracked.txt").read_text() == "work in progress\n"
    assert (repo / ".git" / "config").read_text() == config


def test_a_subcommands_own_dash_c_is_not_gits_configuration(
    cli: Callable[..., Result], repo: Path
) -> None:
    write(repo / "tracked.txt", "committed\n")
    git("add", "tracked.txt", cwd=repo)
    git("-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "t", cwd=repo)
    name = cap(repo, steps("git\n    args: [grep, -c, committed]", "git\n    args: [log, -c, -1]"))
    result = cli("capability", "execute", name)
    assert result.code == 0, result.stdout + result.stderr
    assert "tracked.txt:1" in result.stdout


def test_the_restore_family_stays_denied_when_a_user_allows_it(
    cli: Callable[..., Result], repo: Path, tmp_path: Path
) -> None:
    policy = write(
        tmp_path / "policy.yaml", "allowed_subcommands:\n  git: [restore, read-tree, clean]\n"
    )
    extra = {"RUNTIME_POLICY_FILE": str(policy)}
    for args, rule in (
        ("[restore, --worktree, .]", "git restore --worktree"),
        ("[restore, -W, .]", "git restore -W"),
        ("[read-tree, -u, --reset, HEAD]", "git read-tree --reset"),
        ("[clean, -fd]", "git clean -f"),
    ):
        name = cap(repo, steps(f"git\n    args: {args}"))
        refused(cli("capability", "execute", name, extra_env=extra), 3, rule)


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        ("[api, --method=DELETE, /repos/acme/app]", "effect destroy (allowed_destructive)"),
        ("[api, -XDELETE, repos/acme/app]", "effect destroy (allowed_destructive)"),
        ("[api, -X, delete, repos/acme/app]", "effect destroy (allowed_destructive)"),
        ("[api, repos/acme/app, --method, DELETE]", "effect destroy (allowed_destructive)"),
        ("[api, -XPUT, repos/acme/app/actions/secrets/X, -f, v=1]", "*/secrets/*"),
        ("[api, repos/acme/app/actions/secrets/X, -f, encrypted_value=x]", "*/secrets/*"),
        ("[secret, set, X, --body, v]", "'secret' is not an allowed gh subcommand"),
        ("[extension, install, x/y]", "'extension' is not an allowed gh subcommand"),
    ],
)
def test_gh_api_writes_are_decided_like_the_provider(
    cli: Callable[..., Result], work: Path, args: str, rule: str
) -> None:
    name = cap(work, steps(f"gh\n    args: {args}"))
    refused(
        cli("capability", "execute", name, extra_env={"RUNTIME_GITHUB_TOKEN": "t" * 20}), 3, rule
    )


def test_gh_api_delete_never_reaches_the_server(
    cli_proc: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    """The real gh against a loopback recorder: with the refusal, no request arrives at all."""
    require_tool("gh", "the gh binary step runs the real gh")
    seen: list[str] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            seen.append(conn.recv(4096).decode("latin-1"))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        port = server.getsockname()[1]
        name = cap(
            work, steps(f"gh\n    args: [api, -XDELETE, 'http://127.0.0.1:{port}/repos/a/b']")
        )
        result = cli_proc(
            "capability", "execute", name, extra_env={"RUNTIME_GITHUB_TOKEN": "t" * 20}
        )
    finally:
        stop.set()
        thread.join()
        server.close()
    refused(result, 3, "effect destroy (allowed_destructive)")
    assert seen == []


# -- 5. the token is not in reach of a binary step --------------------------------------------------


def test_grep_over_proc_finds_no_token(cli_proc: Callable[..., Result], work: Path) -> None:
    require_confinement()
    token = "rt-proc-token-" + "7" * 24
    name = cap(
        work,
        steps(
            "grep\n    args: [-r, -a, -h, -o, -s, --include=environ, "
            '"RUNTIME_GITHUB_TOKEN=[^[:cntrl:]]*", /proc]'
        ),
    )
    result = cli_proc("capability", "execute", name, extra_env={"RUNTIME_GITHUB_TOKEN": token})
    assert token not in result.stdout + result.stderr
    assert token[:12] not in result.stdout + result.stderr


# -- 6. and 8. Home, the policy file, policy hygiene ------------------------------------------------


def test_a_binary_cannot_write_into_home_under_the_working_folder(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    """The default Home under ~, run from ~: a confined program finds Home read-only."""
    require_confinement()
    user = tmp_path / "user"
    user.mkdir()
    policy = write(tmp_path / "policy.yaml", "allowed_binaries: [tee, cp]\n")
    env = {
        "HOME": str(user),
        "RUNTIME_HOME": "",
        "XDG_DATA_HOME": "",
        "RUNTIME_POLICY_FILE": str(policy),
    }
    assert cli("files", "write", "seed.txt", "x", cwd=user, extra_env=env).code == 0
    log = user / ".local" / "share" / "runtime" / "audit" / "audit.jsonl"
    assert log.exists()
    before = log.read_text()
    write(user / "forged.jsonl", '{"event": "forged"}\n')
    name = cap(user, steps("cp\n    args: [forged.jsonl, .local/share/runtime/audit/audit.jsonl]"))
    result = cli("capability", "execute", name, cwd=user, extra_env=env)
    assert result.code == 1, result.stdout + result.stderr
    assert "Read-only file system" in result.stdout + result.stderr
    after = log.read_text()
    assert after.startswith(before)
    assert all(json.loads(line)["event"] != "forged" for line in after.splitlines())


def test_versioned_and_linked_names_of_denied_binaries_are_refused(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    python = shutil.which("python3")
    assert python is not None
    versioned = os.path.basename(os.path.realpath(python))  # python3.11
    links = tmp_path / "bin"
    links.mkdir()
    (links / "mysh").symlink_to(shutil.which("sh") or "/bin/sh")
    policy = write(tmp_path / "policy.yaml", f"allowed_binaries: [{versioned}, mysh]\n")
    extra = {
        "RUNTIME_POLICY_FILE": str(policy),
        "PATH": f"{links}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    name = cap(work, steps(f"{versioned}\n    args: [-c, 'print(1)']"))
    refused(cli("capability", "execute", name, extra_env=extra), 3, "denied_binaries: python")
    shell = cap(work, steps("mysh\n    args: [-c, 'echo hi']"), "shell.md")
    refused(cli("capability", "execute", shell, extra_env=extra), 3, "by another name")


def test_an_alternatives_variant_of_a_denied_binary_is_refused(
    cli: Callable[..., Result], work: Path, tmp_path: Path, canary: Path
) -> None:
    # Debian installs vim as vim.basic or vim.tiny and links view, editor, vi to it
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    variant = bin_dir / "vim.basic"
    variant.write_text(f"#!/bin/sh\ntouch {canary}\n")
    variant.chmod(0o755)
    (bin_dir / "view").symlink_to(variant)
    policy = write(tmp_path / "policy.yaml", "allowed_binaries: [view]\n")
    extra = {
        "RUNTIME_POLICY_FILE": str(policy),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    name = cap(work, steps("view\n    args: [-es, -c, '!id']"))
    refused(cli("capability", "execute", name, extra_env=extra), 3, "view is vim by another name")
    assert not canary.exists()


def test_a_policy_file_others_can_write_is_refused(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    policy = write(tmp_path / "policy.yaml", "denied_binaries: [git]\n")
    for mode in (0o664, 0o646):
        policy.chmod(mode)
        result = cli("policy", "show", extra_env={"RUNTIME_POLICY_FILE": str(policy)})
        assert result.code == 2, result.stdout + result.stderr
        assert f"chmod go-w {policy}" in result.stderr
        assert "can be written by" in result.stderr
    policy.chmod(0o644)
    assert cli("policy", "show", extra_env={"RUNTIME_POLICY_FILE": str(policy)}).code == 0


def test_a_missing_policy_file_fails_closed(cli: Callable[..., Result], work: Path) -> None:
    name = cap(work, steps("ls\n    args: [.]"))
    result = cli(
        "capability", "execute", name, extra_env={"RUNTIME_POLICY_FILE": str(work / "nope.yaml")}
    )
    assert result.code == 2, result.stdout + result.stderr
    assert "RUNTIME_POLICY_FILE names" in result.stderr and "does not exist" in result.stderr


# -- the operating system's confinement -------------------------------------------------------------


def test_a_binary_step_reads_and_writes_only_inside_the_roots(
    cli: Callable[..., Result], work: Path, tmp_path: Path, home: Path
) -> None:
    require_confinement()
    secret = write(tmp_path / "outside" / "secret.txt", "not for steps\n")
    name = cap(work, steps(f"cat\n    args: [{secret}]"))
    result = cli("capability", "execute", name)
    assert result.code == 1 and "not for steps" not in result.stdout
    assert "No such file or directory" in result.stdout + result.stderr
    policy = write(tmp_path / "policy.yaml", "allowed_binaries: [touch]\n")
    extra = {"RUNTIME_POLICY_FILE": str(policy)}
    name = cap(
        work,
        steps(
            f"touch\n    args: [{tmp_path / 'outside' / 'new.txt'}]",
            "touch\n    args: [inside.txt]",
        ),
    )
    result = cli("capability", "execute", name, extra_env=extra)
    assert result.code == 1
    assert not (tmp_path / "outside" / "new.txt").exists()
    inside = cap(work, steps("touch\n    args: [inside.txt]"), "inside.md")
    assert cli("capability", "execute", inside, extra_env=extra).code == 0
    assert (work / "inside.txt").exists()


class _Listener:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]


@pytest.fixture
def listener() -> Iterator[_Listener]:
    found = _Listener()
    try:
        yield found
    finally:
        found.sock.close()


def test_network_none_gives_a_binary_step_no_network(
    cli: Callable[..., Result], repo: Path, listener: _Listener, tmp_path: Path
) -> None:
    """Even a host the policy lets git reach is out of reach under network: none."""
    require_confinement()
    url = f"http://127.0.0.1:{listener.port}/x.git"
    front = "---\nmetadata:\n  mda:\n    requires:\n      network: {rule}\n---\n"
    body = steps(f"git\n    args: [ls-remote, '{url}']")
    policy = write(
        tmp_path / "policy.yaml", f'binary_hosts:\n  git: ["127.0.0.1:{listener.port}"]\n'
    )
    for rule, reached in (("none", False), ("public", True)):
        write(repo / "net.md", front.format(rule=rule) + "# Net\n\n```runtime\n" + body + "```\n")
        listener.sock.settimeout(0.05)
        cli(
            "capability",
            "execute",
            "net.md",
            "--timeout",
            "5",
            extra_env={"RUNTIME_POLICY_FILE": str(policy)},
        )
        try:
            conn, _ = listener.sock.accept()
            conn.close()
            got = True
        except TimeoutError:
            got = False
        assert got is reached, rule


def test_host_lists_are_enforced_on_confined_binaries(
    cli: Callable[..., Result], work: Path
) -> None:
    """A confined program reaches only hosts the rule allows (the proxy holds it to them),
    so a host list no longer refuses a binary step."""
    require_confinement()
    front = "---\nmetadata:\n  mda:\n    requires:\n      network: [api.github.com]\n---\n"
    write(work / "hosts.md", front + "# H\n\n```runtime\n" + steps("ls\n    args: [.]") + "```\n")
    result = cli("capability", "execute", "hosts.md")
    assert result.code == 0, result.stdout + result.stderr


def test_without_confinement_steps_are_refused_unless_a_policy_allows_it(
    cli: Callable[..., Result], work: Path, tmp_path: Path, home: Path
) -> None:
    """A PATH without bwrap stands for a machine without confinement: fail closed."""
    bin_dir = tmp_path / "nobwrap"
    bin_dir.mkdir()
    for tool in ("ls", "git", "setpriv"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    extra = {"PATH": str(bin_dir)}
    name = cap(work, steps("ls\n    args: [.]"))
    report = cli("--output", "json", "capability", "preflight", name, extra_env=extra).json()
    (check,) = [c for c in report["checks"] if c["id"] == "confinement"]
    assert check["readiness"] == "False" and check["optional"] is False
    assert "NOT OS-confined" in check["reason"]
    refused = cli("capability", "execute", name, extra_env=extra)
    assert refused.code == 5, refused.stdout + refused.stderr
    assert "missing capability: confinement" in refused.stderr
    assert "nothing ran" in refused.stderr and "allow_unconfined: true" in refused.stderr
    doctor = cli("doctor", extra_env=extra)
    assert "steps that start a program are refused" in doctor.stdout

    # deliberately unconfined: the step runs, and says so on stderr, in JSON and the audit
    allowing = write(tmp_path / "allow.yaml", "allow_unconfined: true\n")
    loose = {**extra, "RUNTIME_POLICY_FILE": str(allowing)}
    ran = cli("capability", "execute", name, extra_env=loose)
    assert ran.code == 0, ran.stdout + ran.stderr
    assert "warning: step 1 (ls) runs NOT confined: bubblewrap (bwrap) is not installed" in (
        ran.stderr
    )
    document = cli("--output", "json", "capability", "execute", name, extra_env=loose).json()
    (step,) = document["steps"]
    assert step["confined"] is False
    assert "allow_unconfined: true" in step["unconfined_reason"]
    records = [
        json.loads(line) for line in (home / "audit" / "audit.jsonl").read_text().splitlines()
    ]
    last = [r for r in records if r["event"] == "step"][-1]
    assert last["confined"] is False and "not installed" in last["unconfined_reason"]
    assert "NOT confined" in cli("doctor", extra_env=loose).stdout

    # a policy that demands confinement wins over one that allows running without
    strict = write(tmp_path / "strict.yaml", "allow_unconfined: true\nrequire_confinement: true\n")
    result = cli(
        "capability", "execute", name, extra_env={**extra, "RUNTIME_POLICY_FILE": str(strict)}
    )
    assert result.code == 5, result.stdout + result.stderr
    assert "require_confinement: true" in result.stderr and "nothing ran" in result.stderr


def test_a_confined_step_says_so_in_json_and_the_audit_log(
    cli: Callable[..., Result], work: Path, home: Path
) -> None:
    require_confinement()
    name = cap(work, steps("ls\n    args: [.]"))
    document = cli("--output", "json", "capability", "execute", name).json()
    assert document["steps"][0]["confined"] is True
    assert document["steps"][0]["unconfined_reason"] is None
    records = [
        json.loads(line) for line in (home / "audit" / "audit.jsonl").read_text().splitlines()
    ]
    assert [r["confined"] for r in records if r["event"] == "step"] == [True]


# -- ordinary work keeps running -------------------------------------------------------------------------


def test_clone_fetch_commit_and_push_to_a_local_bare_repository(
    cli: Callable[..., Result], repo: Path, tmp_path: Path
) -> None:
    """git runs the far side of a local-path remote through the shell: a confined git may
    not, until a policy admits the shell for git deliberately."""
    git("init", "-q", "--bare", "-b", "main", "remote.git", cwd=repo)
    name = cap(
        repo,
        one_input(
            "message",
            "git\n    args: [remote, add, origin, ./remote.git]",
            "git\n    args: [push, origin, main]",
            "git\n    args: [clone, -q, ./remote.git, copy]",
            "git\n    args: [-C, copy, fetch, origin]",
            'git\n    args: [-C, copy, commit, -q, --allow-empty, -m, "${message}"]',
            "git\n    args: [-C, copy, push, origin, main]",
            "git\n    args: [clone, -q, ./remote.git, check]",
            'git\n    args: [-C, check, log, -1, "--format=%s by %an <%ae>"]',
        ),
    )
    if confined():
        push = cap(repo, steps("git\n    args: [push, ./remote.git, main]"), name="push.md")
        refused = cli("--output", "json", "capability", "execute", push)
        assert refused.code == 1, refused.stdout + refused.stderr
        (failed,) = refused.json()["steps"]
        assert "Permission denied" in failed["data"]["stderr"]
        assert "admitted_helpers: {git: [PATH]}" in failed["hint"]
    shell = os.path.realpath("/bin/sh")
    policy = write(tmp_path / "policy.yaml", f'admitted_helpers:\n  git: ["{shell}"]\n')
    result = cli(
        "--output",
        "json",
        "capability",
        "execute",
        name,
        "--input",
        "message=second",
        extra_env={"RUNTIME_POLICY_FILE": str(policy)},
    )
    assert result.code == 0, result.stdout + result.stderr
    last = result.json()["steps"][-1]["data"]["stdout"]
    assert last == "second by Ada Tester <ada@example.com>\n"  # the user's identity, passed on


def test_jq_and_grep_inside_the_roots(cli: Callable[..., Result], work: Path) -> None:
    write(work / "src" / "a.py", "needle = 1\n")
    write(work / "data.json", '{"items": [1, 2, 3]}\n')
    name = cap(
        work,
        steps(
            "grep\n    args: [-r, needle, ./src]", "jq\n    args: ['.items | length', data.json]"
        ),
    )
    result = cli("--output", "json", "capability", "execute", name)
    assert result.code == 0, result.stdout + result.stderr
    out = [s["data"]["stdout"] for s in result.json()["steps"]]
    assert out == ["./src/a.py:needle = 1\n", "3\n"]


def test_a_python_fake_binary_runs_when_the_policy_lets_it_read_its_interpreter(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    """What the tests' fake binaries rely on: system_paths extend what a confined step reads."""
    require_confinement()
    import sys

    tool = write(tmp_path / "bin" / "hello", f"#!{sys.executable} -I\nprint('hello')\n")
    tool.chmod(0o755)
    extra = {"PATH": f"{tool.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    without = write(tmp_path / "without.yaml", "allowed_binaries: [hello]\n")
    name = cap(work, steps("hello\n    args: []"))
    result = cli(
        "capability", "execute", name, extra_env={**extra, "RUNTIME_POLICY_FILE": str(without)}
    )
    # its interpreter is not there (outside /usr), or may not be executed (Landlock)
    assert result.code == 1, result.stdout + result.stderr
    assert "confined" in result.stderr  # and the hint says why
    with_paths = write(
        tmp_path / "with.yaml", "allowed_binaries: [hello]\n" + confinement_lines(fakes=["hello"])
    )
    result = cli(
        "capability", "execute", name, extra_env={**extra, "RUNTIME_POLICY_FILE": str(with_paths)}
    )
    assert result.code == 0, result.stdout + result.stderr
    assert "hello" in result.stdout
