"""The kernel is the boundary: each layer of confinement holding on its own, through the CLI.

Every test here runs the real runtime, real git and the real kernel (bubblewrap,
Landlock), and first shows that what it stops really happens without runtime,
so that a test cannot pass because the attack never worked:

* execution (Landlock ``EXECUTE``): git told to run a program, with the policy's
  subcommand rule lifted for it, still cannot start one; a hook or an admitted
  shell's script in a write root cannot be executed either;
* the network (a namespace of its own, the host-filtering proxy): a host no profile
  or policy names is refused and named; a named one is reached; ``requires.network``
  narrows it; host abstract unix sockets are not there;
* signals (Landlock scopes): a step cannot signal a process outside its domain.
"""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.test_binary_attacks import cap, confined, git, require_confinement, steps
from tests.conftest import Result, admit_python, write

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _confined() -> None:
    require_confinement()


def commit(repo: Path) -> None:
    git("-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "x",
        cwd=repo)  # fmt: skip


def policy(tmp_path: Path, text: str) -> dict[str, str]:
    return {"RUNTIME_POLICY_FILE": str(write(tmp_path / "policy.yaml", f"version: v1\n{text}"))}


# -- execution ---------------------------------------------------------------------------------


def test_git_told_to_run_a_program_cannot_start_one_with_the_subcommand_rule_lifted(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    """An alias is a program git starts through the shell: the policy's subcommand rule
    refuses it, and with that rule lifted in a test policy the kernel still does."""
    canary = tmp_path / "CANARY"
    git("init", "-q", cwd=work)
    git("config", "alias.x", f"!touch {canary}", cwd=work)
    git("x", cwd=work)  # outside runtime the alias runs a shell, which makes the canary
    assert canary.exists()
    canary.unlink()

    name = cap(work, steps("git\n    args: [x]"))
    assert cli("capability", "execute", name).code == 3  # the argument layer refuses
    lifted = policy(tmp_path, "allowed_subcommands:\n  git: [x]\n")
    result = cli("capability", "execute", name, extra_env=lifted)
    assert result.code == 1, result.stdout + result.stderr
    assert "Permission denied" in result.stderr
    assert "admitted_helpers" in result.stderr  # the hint says how to admit one
    assert not canary.exists()


def test_nothing_a_step_can_write_can_be_executed_even_with_a_shell_admitted(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    """A hook written into a repository of the write root: with the shell admitted for
    git (its local transport needs one), the hook still cannot be executed."""
    canary = tmp_path / "CANARY"
    git("init", "-q", "--bare", "-b", "main", "far.git", cwd=work)
    hook = write(work / "far.git" / "hooks" / "pre-receive", f"#!/bin/sh\ntouch {canary}\n")
    hook.chmod(0o755)
    git("init", "-q", "-b", "main", "near", cwd=work)
    commit(work / "near")
    subprocess.run(
        ["git", "-C", "near", "push", "-q", "../far.git", "main:probe"],
        cwd=work,
        capture_output=True,
        check=False,
    )
    assert canary.exists()  # outside runtime the hook runs
    canary.unlink()

    shell = os.path.realpath("/bin/sh")
    admitted = policy(tmp_path, f'admitted_helpers:\n  git: ["{shell}"]\n')
    name = cap(work, steps("git\n    args: [-C, near, push, ../far.git, main]"))
    result = cli("--output", "json", "capability", "execute", name, extra_env=admitted)
    assert not canary.exists(), result.stdout
    (step,) = result.json()["steps"]
    assert "pre-receive" in step["data"]["stderr"] or step["status"] == "failed"


def test_a_local_path_remote_needs_a_shell_which_is_not_admitted_by_default(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    """Finding 2's push into a bare repository the capability made: git starts the far
    side through the shell, which the kernel refuses, so its configuration never runs."""
    canary = tmp_path / "CANARY"
    git("init", "-q", "--bare", "-b", "main", "far", cwd=work)
    git("--git-dir=far", "config", "core.alternateRefsCommand", f"touch {canary}", cwd=work)
    git("init", "-q", "-b", "main", "near", cwd=work)
    commit(work / "near")
    name = cap(work, steps("git\n    args: [-C, near, push, ../far, main]"))
    result = cli("capability", "execute", name)
    assert result.code == 1, result.stdout + result.stderr
    assert "cannot exec" in result.stderr and "local-path remotes" in result.stderr
    assert not canary.exists()


# -- the network -------------------------------------------------------------------------------


class _Server(http.server.ThreadingHTTPServer):
    paths: list[str]


@pytest.fixture
def server() -> Iterator[_Server]:
    """A loopback HTTP server that records the paths asked for and answers 404."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.server.paths.append(self.path)  # type: ignore[attr-defined]
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    found = _Server(("127.0.0.1", 0), Handler)
    found.paths = []
    thread = threading.Thread(target=found.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.shutdown()
        found.server_close()


def _ls_remote(work: Path, url: str, network: str | None = None) -> str:
    front = f"---\nmetadata:\n  mda:\n    requires:\n      network: {network}\n---\n"
    body = steps(f"git\n    args: [ls-remote, '{url}']")
    text = ("" if network is None else front) + "# Net\n\n```runtime\n" + body + "```\n"
    write(work / "net.md", text)
    return "net.md"


def test_a_host_no_profile_or_policy_names_is_refused_and_named(
    cli: Callable[..., Result], work: Path, server: _Server
) -> None:
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/x.git"
    assert subprocess.run(["git", "ls-remote", url], capture_output=True, check=False)
    assert server.paths  # outside runtime git reaches it
    server.paths.clear()
    result = cli("capability", "execute", _ls_remote(work, url), "--timeout", "20")
    assert result.code == 1, result.stdout + result.stderr
    assert f"127.0.0.1:{port} is not a host this step may reach" in result.stderr
    assert "binary_hosts" in result.stderr
    assert server.paths == []


def test_a_host_the_policy_names_is_reached_through_the_proxy(
    cli: Callable[..., Result], work: Path, tmp_path: Path, server: _Server
) -> None:
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/x.git"
    named = policy(tmp_path, f'binary_hosts:\n  git: ["127.0.0.1:{port}"]\n')
    result = cli("capability", "execute", _ls_remote(work, url), extra_env=named)
    assert result.code == 1  # the server answers 404: not a repository
    assert server.paths == ["/x.git/info/refs?service=git-upload-pack"]
    assert "not found" in result.stderr


def test_requires_network_narrows_what_the_policy_names(
    cli: Callable[..., Result], work: Path, tmp_path: Path, server: _Server
) -> None:
    port = server.server_address[1]
    url = f"http://127.0.0.1:{port}/x.git"
    named = policy(tmp_path, f'binary_hosts:\n  git: ["127.0.0.1:{port}"]\n')
    for rule, why in (("none", "network: none forbids"), ("[api.github.com]", "matches none of")):
        name = _ls_remote(work, url, rule)
        result = cli("capability", "execute", name, "--timeout", "20", extra_env=named)
        assert result.code == 1, result.stdout + result.stderr
        assert why in result.stderr, rule
    assert server.paths == []


def test_host_abstract_unix_sockets_are_out_of_reach(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    """Finding 4: a default-allowed grep on /proc/net/unix listed the host's abstract
    sockets (session buses, the keyring behind them); a program connected to one."""
    name = f"runtime-test-{os.getpid()}-{id(tmp_path)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as host:
        host.bind("\0" + name)
        host.listen(1)
        assert name in Path("/proc/net/unix").read_text()  # the host lists it
        listing = cap(work, steps("grep\n    args: [-c, '@', /proc/net/unix]"), "grep.md")
        result = cli("--output", "json", "capability", "execute", listing)
        assert name not in result.stdout
        probe = write(
            tmp_path / "bin" / "connect",
            "#!/usr/bin/env python3\nimport socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
            f"try:\n    s.connect({chr(0) + name!r})\n    print('connected')\n"
            "except OSError as exc:\n    print('refused', exc.errno)\n",
        )
        probe.chmod(0o755)
        env = {
            "PATH": f"{probe.parent}:{os.environ.get('PATH', '')}",
            **policy(tmp_path, "allowed_binaries: [connect]\n" + admit_python("connect")),
        }
        result = cli(
            "capability", "execute", cap(work, steps("connect\n    args: []")), extra_env=env
        )
        assert result.code == 0, result.stdout + result.stderr
        assert result.stdout.startswith("refused"), result.stdout


def test_a_step_cannot_signal_outside_its_domain(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    """Landlock's signal scope: pid 1 of the step's namespace (bubblewrap's) is outside the
    program's domain, so even the harmless signal 0 is refused."""
    probe = write(
        tmp_path / "bin" / "signal",
        "#!/usr/bin/env python3\nimport os\ntry:\n    os.kill(1, 0)\n    print('signalled')\n"
        "except OSError as exc:\n    print('refused', exc.errno)\n",
    )
    probe.chmod(0o755)
    env = {
        "PATH": f"{probe.parent}:{os.environ.get('PATH', '')}",
        **policy(tmp_path, "allowed_binaries: [signal]\n" + admit_python("signal")),
    }
    result = cli("capability", "execute", cap(work, steps("signal\n    args: []")), extra_env=env)
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "refused 1", result.stdout  # EPERM


def test_doctor_names_each_layer_in_force(cli: Callable[..., Result]) -> None:
    from runtime.execute import landlock

    assert confined()
    abi = landlock.abi()
    report = cli("--output", "json", "doctor").json()
    checks = report["checks"]
    layers = {c["check"]: c["status"] for c in checks if c["check"].startswith("confinement")}
    assert layers == {
        "confinement": "ok",
        "confinement.bubblewrap": "ok",
        "confinement.landlock-execute": "ok",
        "confinement.landlock-tcp": "ok" if abi >= landlock.TCP_ABI else "warning",
        "confinement.landlock-scopes": "ok" if abi >= landlock.SCOPE_ABI else "warning",
    }
