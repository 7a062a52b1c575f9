"""Hardened git (runtime.execute.githarden) against the real git.

Every test that covers a program-running setting goes through :func:`demonstrate`,
which proves four things in order, each with a fresh repository:

1. WITHOUT hardening (environment ``{PATH, HOME}``) the trigger does fire;
2. with the hardened environment MINUS the overrides the test names (``stops``),
   it still fires, so it is those overrides, not some other one, that stop it
   (removing them is the "break the override" check, built in);
3. with ``each_suffices``, every one of those overrides stops it on its own;
4. with the full hardened environment it does not fire.

A canary is a file that a configured script creates when git runs it. A stub
``gpg``/``gpgsm``/``ssh-keygen``/``ssh``/``man`` comes first on PATH, so the
default programs the hardened environment names never touch the real keyrings
or the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import pty
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from pathlib import Path

import pytest

from runtime.execute.githarden import HARDENING, git_environment, read_identity
from tests.conftest import require_tool

pytestmark = pytest.mark.integration

IDENTITY = {"user.name": "Ada Hardened", "user.email": "ada@example.invalid"}
STUBS = ("gpg", "gpgsm", "ssh-keygen", "ssh", "man")
TIMEOUT = 60


@pytest.fixture(autouse=True)
def _git() -> None:
    require_tool("git", "the hardened-git tests run the real git")


# -- environments ---------------------------------------------------------------------------


class Lab:
    """A tmp_path with a user home, stub programs and fresh folders on demand."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.home.mkdir()
        (self.home / ".gitconfig").write_text(
            f"[user]\n\tname = {IDENTITY['user.name']}\n\temail = {IDENTITY['user.email']}\n"
        )
        self.stubs = root / "stubs"
        self.stubs.mkdir()
        for name in STUBS:
            script(self.stubs / name, "exit 1")
        self.path = f"{self.stubs}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
        self._n = count()

    def fresh(self, name: str = "d") -> Path:
        path = self.root / f"{name}{next(self._n)}"
        path.mkdir()
        return path

    def plain(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {"PATH": self.path, "HOME": str(self.home), **(extra or {})}

    def hardened(
        self,
        *,
        without: Iterable[str] = (),
        identity: Mapping[str, str] = IDENTITY,
        hooks: bool = False,
        extra: Mapping[str, str] | None = None,
        config: Iterable[tuple[str, str]] = (),
    ) -> dict[str, str]:
        env = {**self.plain(extra), **git_environment(identity, hooks=hooks)}
        return strip(env, set(without), list(config))

    def setup_env(self) -> dict[str, str]:
        """For building fixtures: no user or system config at all."""
        return {
            "PATH": self.path,
            "HOME": str(self.root),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_AUTHOR_NAME": "Setup",
            "GIT_AUTHOR_EMAIL": "setup@example.invalid",
            "GIT_COMMITTER_NAME": "Setup",
            "GIT_COMMITTER_EMAIL": "setup@example.invalid",
        }

    def g(self, cwd: Path, *args: str) -> str:
        """Run git for the fixture (trusted setup), failing loudly."""
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=self.setup_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 0, f"setup git {args}: {done.stderr}"
        return done.stdout

    def repo(self, *, commits: int = 1, bare: bool = False) -> Path:
        path = self.fresh("repo")
        self.g(path, "init", "-q", "-b", "main", *(["--bare"] if bare else []))
        if not bare:
            for n in range(commits):
                (path / "f").write_text(f"line {n}\n")
                self.g(path, "add", "f")
                self.g(path, "commit", "-q", "-m", f"commit {n}")
        return path

    def set(self, repo: Path, key: str, value: str) -> None:
        self.g(repo, "config", key, value)


def strip(env: dict[str, str], without: set[str], config: list[tuple[str, str]]) -> dict[str, str]:
    """``env`` minus the named variables and configuration keys, plus ``config`` appended."""
    pairs = [
        (env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"])
        for n in range(int(env.get("GIT_CONFIG_COUNT", "0")))
    ]
    known = {key for key, _value, _why in HARDENING} | set(IDENTITY)
    assert without <= known, f"not in the table: {without - known}"
    out = {
        k: v
        for k, v in env.items()
        if k not in without and not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    }
    kept = [(k, v) for k, v in pairs if k not in without] + config
    out["GIT_CONFIG_COUNT"] = str(len(kept))
    for n, (k, v) in enumerate(kept):
        out[f"GIT_CONFIG_KEY_{n}"] = k
        out[f"GIT_CONFIG_VALUE_{n}"] = v
    return out


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


# -- running git ----------------------------------------------------------------------------


def script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def canary_script(where: Path, tail: str = "exit 0") -> tuple[Path, Path]:
    """A script that records that it ran, then does ``tail``."""
    canary = where / "canary"
    return script(where / "evil.sh", f'echo "ran $0 $*" >> "{canary}"\n{tail}'), canary


def git(
    cwd: Path, env: Mapping[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        start_new_session=True,  # no controlling terminal: nothing can prompt on ours
        check=False,
    )


def git_tty(cwd: Path, env: Mapping[str, str], *args: str) -> tuple[int, str]:
    """Run git with stdout and stderr on a pseudo-terminal (pagers, colour need one)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
    finally:
        os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not data:
                break
            out += data
    finally:
        os.close(master)
        try:
            proc.wait(timeout=TIMEOUT)  # git may outlive its pager's last write a little
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=TIMEOUT)
    return proc.returncode, out.decode("utf-8", "replace")


def demonstrate(
    lab: Lab,
    fire: Callable[[dict[str, str]], bool],
    *,
    stops: Iterable[str],
    each_suffices: bool = False,
    extra: Mapping[str, str] | None = None,
) -> None:
    """See the module docstring. ``fire(env)`` sets up afresh, runs git, says if it fired."""
    stops = tuple(stops)
    assert fire(lab.plain(extra)), "the trigger does not fire even without hardening"
    assert fire(lab.hardened(without=stops, extra=extra)), f"something besides {stops} stops it"
    if each_suffices:
        for key in stops:
            others = [k for k in stops if k != key]
            assert not fire(lab.hardened(without=others, extra=extra)), f"{key} alone fails"
    assert not fire(lab.hardened(extra=extra)), "the hardened environment does not stop it"


def fired(canary: Path) -> bool:
    if canary.exists():
        canary.unlink()
        return True
    return False


# -- the table itself -----------------------------------------------------------------------


def test_table_is_well_formed_and_environment_numbers_it() -> None:
    keys = [key for key, _value, _why in HARDENING]
    assert len(keys) == len(set(keys))
    assert all(why and len(why) < 80 for _key, _value, why in HARDENING)
    env = git_environment({**IDENTITY, "core.fsmonitor": "evil"})
    config = [
        (env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"])
        for n in range(int(env["GIT_CONFIG_COUNT"]))
    ]
    assert config[:2] == [
        ("user.name", IDENTITY["user.name"]),
        ("user.email", IDENTITY["user.email"]),
    ]
    assert ("core.fsmonitor", "evil") not in config  # only user.name/user.email are taken
    assert ("core.hooksPath", "/dev/null") in config
    hooks = git_environment({}, hooks=True)
    assert "core.hooksPath" not in hooks.values()
    assert int(hooks["GIT_CONFIG_COUNT"]) == len(config) - 3
    bad = git_environment({"user.name": "a\nb", "user.email": ""})
    assert "user.name" not in bad.values() and "user.email" not in bad.values()


def test_git_sees_every_override_in_command_scope(lab: Lab) -> None:
    repo = lab.repo()
    for key in ("core.fsmonitor", "core.pager", "gc.auto", "safe.bareRepository"):
        lab.set(repo, key, "from-the-repository")
    listed = git(repo, lab.hardened(), "config", "--show-scope", "--list").stdout
    for key, value, _why in HARDENING:
        if "." in key:
            assert f"command\t{key.lower()}={value}" in listed
    effective = git(repo, lab.hardened(), "config", "core.fsmonitor").stdout
    assert effective.strip() == "false"


# -- programs named by repository configuration ---------------------------------------------


def test_core_fsmonitor(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh(), "exit 1")
        lab.set(repo, "core.fsmonitor", str(evil))
        git(repo, env, "status")
        return fired(canary)

    demonstrate(lab, fire, stops=["core.fsmonitor"])


@pytest.mark.parametrize("how", ["include.path", "includeIf"])
def test_included_configuration_is_overridden_too(lab: Lab, how: str) -> None:
    """What a repository's configuration includes is read in its scope, before ours."""

    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh(), "exit 1")
        included = lab.fresh() / "included.cfg"
        included.write_text(f"[core]\n\tfsmonitor = {evil}\n")
        key = "include.path" if how == "include.path" else f"includeIf.gitdir:{repo}/.path"
        lab.set(repo, key, str(included))
        git(repo, env, "status")
        return fired(canary)

    demonstrate(lab, fire, stops=["core.fsmonitor"])


def test_a_submodule_keeps_the_overrides(lab: Lab) -> None:
    """git keeps GIT_CONFIG_COUNT for the git it runs in a submodule (status asks it)."""

    def fire(env: dict[str, str]) -> bool:
        sub, top = lab.repo(), lab.repo()
        lab.g(top, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(sub), "s")
        lab.g(top, "commit", "-q", "-m", "submodule")
        evil, canary = canary_script(lab.fresh(), "exit 1")
        lab.set(top / "s", "core.fsmonitor", str(evil))
        (top / "s" / "f").write_text("changed\n")
        assert "modified:   s" in git(top, env, "status").stdout
        return fired(canary)

    demonstrate(lab, fire, stops=["core.fsmonitor"])


@pytest.mark.parametrize("where", ["dot-git-hooks", "core-hooksPath-in-repo"])
def test_hooks_off_by_default_and_on_by_policy(lab: Lab, where: str) -> None:
    def setup() -> tuple[Path, Path]:
        repo = lab.repo()
        hooks = repo / ".git" / "hooks" if where == "dot-git-hooks" else lab.fresh("hooks")
        if where != "dot-git-hooks":
            lab.set(repo, "core.hooksPath", str(hooks))
        canary = hooks / "canary"
        script(hooks / "pre-commit", f'touch "{canary}"')
        return repo, canary

    def fire(env: dict[str, str]) -> bool:
        repo, canary = setup()
        git(repo, env, "commit", "-q", "--allow-empty", "-m", "x")
        return fired(canary)

    demonstrate(lab, fire, stops=["core.hooksPath"])
    assert fire(lab.hardened(hooks=True)), "hooks=True must let hooks run"
    assert "core.hooksPath" not in lab.hardened(hooks=True).values()


@pytest.mark.parametrize(
    ("key", "stops", "each"),
    [
        ("core.pager", ["GIT_PAGER", "core.pager"], True),
        # a string in pager.<cmd> names a pager; only GIT_PAGER is consulted before it
        ("pager.log", ["GIT_PAGER"], False),
    ],
)
def test_pager(lab: Lab, key: str, stops: list[str], each: bool) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh(), "exec cat")
        lab.set(repo, key, str(evil))
        code, out = git_tty(repo, env, "log", "-1")
        assert code == 0 and "commit 0" in out, out
        return fired(canary)

    demonstrate(lab, fire, stops=stops, each_suffices=each)


def test_pager_never_starts_without_a_terminal(lab: Lab) -> None:
    repo = lab.repo()
    evil, canary = canary_script(lab.fresh(), "exec cat")
    lab.set(repo, "core.pager", str(evil))
    assert git(repo, lab.plain(), "log", "-1").returncode == 0
    assert not canary.exists()  # a step's stdout is a pipe: no pager even unhardened


def test_core_editor_fails_clearly_instead_of_running(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh())
        lab.set(repo, "core.editor", str(evil))
        done = git(repo, env, "commit", "--allow-empty")
        if env.get("GIT_EDITOR") == "false":
            assert done.returncode != 0 and "problem with the editor 'false'" in done.stderr
        return fired(canary)

    demonstrate(lab, fire, stops=["GIT_EDITOR", "core.editor"], each_suffices=True)


def test_sequence_editor(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo(commits=2)
        evil, canary = canary_script(lab.fresh())
        lab.set(repo, "sequence.editor", str(evil))
        git(repo, env, "rebase", "-i", "HEAD~1")
        return fired(canary)

    # GIT_EDITOR does not help: sequence.editor is consulted before it.
    demonstrate(lab, fire, stops=["sequence.editor"])


class _Unauthorized(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="hardening"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def http_401() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("source", ["core.askPass", "SSH_ASKPASS"])
def test_askpass(lab: Lab, http_401: str, source: str) -> None:
    evil, canary = canary_script(lab.fresh(), "echo guessed")
    extra = {"SSH_ASKPASS": str(evil)} if source == "SSH_ASKPASS" else None

    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        if source == "core.askPass":
            lab.set(repo, "core.askPass", str(evil))
        done = git(repo, env, "ls-remote", f"{http_401}/private.git")
        assert done.returncode != 0
        return fired(canary)

    # An EMPTY GIT_ASKPASS is not "unset": git's prompt.c takes it as the answer and,
    # since it is empty, runs nothing; core.askPass and SSH_ASKPASS are never looked at.
    # Likewise an empty core.askPass hides SSH_ASKPASS: each layer alone suffices.
    demonstrate(lab, fire, stops=["GIT_ASKPASS", "core.askPass"], each_suffices=True, extra=extra)


@pytest.mark.parametrize("scoped", [False, True])
def test_credential_helper(lab: Lab, http_401: str, scoped: bool) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh())
        key = f"credential.{http_401}.helper" if scoped else "credential.helper"
        lab.set(repo, key, f"!{evil}")
        git(repo, env, "ls-remote", f"{http_401}/private.git")
        return fired(canary)

    # The empty value resets the list gathered so far, URL-scoped entries included.
    demonstrate(lab, fire, stops=["credential.helper"])


def test_core_sshcommand(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh(), "exit 1")
        lab.set(repo, "core.sshCommand", str(evil))
        git(repo, env, "ls-remote", "ssh://127.0.0.1:1/nothing.git")
        return fired(canary)

    demonstrate(lab, fire, stops=["core.sshCommand"])


def test_core_gitproxy_needs_the_environment_variable(lab: Lab) -> None:
    evil, canary = canary_script(lab.fresh(), "exit 1")

    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        lab.set(repo, "core.gitProxy", str(evil))
        git(repo, env, "ls-remote", "git://127.0.0.1:1/nothing.git")
        return fired(canary)

    demonstrate(lab, fire, stops=["GIT_PROXY_COMMAND"])
    # Surprise: for core.gitProxy the FIRST matching entry wins, so a command-line
    # value (read last) cannot override the repository's.
    overridden = lab.hardened(without=["GIT_PROXY_COMMAND"], config=[("core.gitProxy", "none")])
    assert fire(overridden)


def test_core_alternaterefscommand(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        alternate, source, repo = lab.repo(), lab.repo(commits=2), lab.repo()
        (repo / ".git/objects/info/alternates").write_text(f"{alternate}/.git/objects\n")
        evil, canary = canary_script(lab.fresh())
        lab.set(repo, "core.alternateRefsCommand", str(evil))
        done = git(repo, env, "fetch", "-q", f"file://{source}", "main")
        assert done.returncode == 0, done.stderr
        return fired(canary)

    demonstrate(lab, fire, stops=["core.alternateRefsCommand"])


OPENPGP = ["gpg.program", "gpg.openpgp.program"]


def _commit_signing(lab: Lab, settings: dict[str, str], *args: str) -> Callable[..., bool]:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh(), "exit 1")
        for key, value in settings.items():
            lab.set(repo, key, value.replace("EVIL", str(evil)))
        git(repo, env, *args)
        return fired(canary)

    return fire


@pytest.mark.parametrize(
    ("settings", "stops"),
    [
        # gpg.program and gpg.openpgp.program are two names of ONE setting: the last read wins
        ({"gpg.program": "EVIL"}, OPENPGP),
        ({"gpg.openpgp.program": "EVIL"}, OPENPGP),
        ({"gpg.format": "x509", "gpg.x509.program": "EVIL"}, ["gpg.x509.program"]),
        (
            {
                "gpg.format": "ssh",
                "gpg.ssh.program": "EVIL",
                "user.signingKey": "key::ssh-ed25519 AAAA",
            },
            ["gpg.ssh.program"],
        ),
        ({"gpg.format": "ssh", "gpg.ssh.defaultKeyCommand": "EVIL"}, ["gpg.ssh.defaultKeyCommand"]),
    ],
)
def test_signing_program_when_signing_is_asked_for(
    lab: Lab, settings: dict[str, str], stops: list[str]
) -> None:
    # -S is an explicit request (the policy decides on it): the DEFAULT program runs (a stub here)
    fire = _commit_signing(lab, settings, "commit", "-q", "--allow-empty", "-S", "-m", "x")
    demonstrate(lab, fire, stops=stops, each_suffices=True)


@pytest.mark.parametrize(
    ("sign", "args"),
    [
        ("commit.gpgSign", ["commit", "-q", "--allow-empty", "-m", "x"]),
        ("tag.gpgSign", ["tag", "-m", "x", "v1"]),
        # (-a on the command line would take precedence over tag.forceSignAnnotated)
        ("tag.forceSignAnnotated", ["tag", "-m", "x", "v1"]),
    ],
)
def test_signing_is_off_unless_asked(lab: Lab, sign: str, args: list[str]) -> None:
    fire = _commit_signing(lab, {sign: "true", "gpg.program": "EVIL"}, *args)
    demonstrate(lab, fire, stops=[sign, *OPENPGP], each_suffices=True)
    repo = lab.repo()
    lab.set(repo, sign, "true")
    assert git(repo, lab.hardened(), *args).returncode == 0  # unsigned, and it works


def test_push_signing(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        receiver, repo = lab.repo(bare=True), lab.repo()
        lab.set(receiver, "receive.certNonceSeed", "seed")
        evil, canary = canary_script(lab.fresh(), "exit 1")
        lab.set(repo, "push.gpgSign", "true")
        lab.set(repo, "gpg.program", str(evil))
        git(repo, env, "push", "-q", str(receiver), "main")
        return fired(canary)

    demonstrate(lab, fire, stops=["push.gpgSign", *OPENPGP], each_suffices=True)


def _signed_commit(lab: Lab, repo: Path, ref: str) -> None:
    """A commit on HEAD carrying a (bogus) OpenPGP signature, as ``ref``."""
    head = lab.g(repo, "rev-parse", "HEAD").strip()
    tree = lab.g(repo, "rev-parse", "HEAD^{tree}").strip()
    body = (
        f"tree {tree}\nparent {head}\n"
        "author A <a@example.invalid> 0 +0000\ncommitter A <a@example.invalid> 0 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n"
        " -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    oid = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo,
        env=lab.setup_env(),
        input=body,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    lab.g(repo, "update-ref", ref, oid)


def test_signature_verification_by_log(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        _signed_commit(lab, repo, "refs/heads/main")
        evil, canary = canary_script(lab.fresh(), "exit 1")
        lab.set(repo, "log.showSignature", "true")
        lab.set(repo, "gpg.program", str(evil))
        assert git(repo, env, "log", "-1").returncode == 0
        return fired(canary)

    demonstrate(lab, fire, stops=["log.showSignature", *OPENPGP], each_suffices=True)


def test_signature_verification_by_merge(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        _signed_commit(lab, repo, "refs/heads/side")
        evil, canary = canary_script(lab.fresh(), "exit 1")
        lab.set(repo, "merge.verifySignatures", "true")
        lab.set(repo, "gpg.program", str(evil))
        git(repo, env, "merge", "-q", "side")
        return fired(canary)

    demonstrate(lab, fire, stops=["merge.verifySignatures", *OPENPGP], each_suffices=True)

    # and pull, which merges the same way
    def pulled(env: dict[str, str]) -> bool:
        origin, parent = lab.repo(), lab.fresh()
        lab.g(parent, "clone", "-q", str(origin), "clone")
        clone = parent / "clone"
        _signed_commit(lab, origin, "refs/heads/main")
        evil, canary = canary_script(lab.fresh(), "exit 1")
        lab.set(clone, "merge.verifySignatures", "true")
        lab.set(clone, "gpg.program", str(evil))
        git(clone, env, "pull", "-q", "--no-rebase", str(origin), "main")
        return fired(canary)

    demonstrate(lab, pulled, stops=["merge.verifySignatures", *OPENPGP], each_suffices=True)


def test_interactive_difffilter(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        (repo / "f").write_text("changed\n")
        evil, canary = canary_script(lab.fresh(), "exec cat")
        lab.set(repo, "interactive.diffFilter", str(evil))
        # the filter applies to the coloured diff only, and colour needs a terminal
        git_tty(repo, env, "add", "-p")
        return fired(canary)

    # colour also needs a TERM that is not "dumb" (or unset)
    demonstrate(lab, fire, stops=["interactive.diffFilter"], extra={"TERM": "xterm"})


@pytest.mark.parametrize(
    ("key", "args"),
    [
        ("tar.tgz.command", ["archive", "--format=tgz", "-o", "out.tgz", "HEAD"]),
        ("tar.tar.gz.command", ["archive", "-o", "out.tar.gz", "HEAD"]),
    ],
)
def test_archive_compressor(lab: Lab, key: str, args: list[str]) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh())
        lab.set(repo, key, str(evil))
        git(repo, env, *args)
        if env.get("GIT_CONFIG_COUNT", "0") != "0" and not canary.exists():
            assert gzip.decompress((repo / args[-2]).read_bytes())  # git's own gzip
        return fired(canary)

    demonstrate(lab, fire, stops=[key])


@pytest.mark.parametrize("args", [["status", "--help"], ["help", "log"], ["help", "-m", "log"]])
def test_help_viewer(lab: Lab, args: list[str]) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh())
        lab.set(repo, "man.viewer", "pwn")
        lab.set(repo, "man.pwn.cmd", str(evil))
        done = git(repo, env, *args)
        if "help.format" in done.stderr:
            assert "unrecognized help format 'none'" in done.stderr
        return fired(canary)

    demonstrate(lab, fire, stops=["help.format"])


def test_autocorrect_never_runs_an_alias(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        evil, canary = canary_script(lab.fresh())
        lab.set(repo, "alias.zzqx", f"!{evil}")
        lab.set(repo, "help.autoCorrect", "immediate")
        git(repo, env, "zzqy")  # a typo of the alias's name
        return fired(canary)

    demonstrate(lab, fire, stops=["help.autoCorrect"])


@pytest.mark.parametrize("via", ["remote-url", "insteadOf", "protocol.allow", "remote-vcs"])
def test_ext_protocol(lab: Lab, via: str) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        canary = lab.fresh() / "canary"
        ext = f"ext::sh -c touch% {canary}"
        if via == "protocol.allow":  # every protocol allowed, ext among them
            lab.set(repo, "protocol.allow", "always")
        else:
            lab.set(repo, "protocol.ext.allow", "always")
        url = ext
        if via == "insteadOf":
            lab.set(repo, f"url.{ext}% #.insteadOf", "https://example.invalid/")
            url = "https://example.invalid/repo.git"
        elif via == "remote-vcs":  # a remote whose helper is git-remote-ext
            lab.set(repo, "remote.x.vcs", "ext")
            lab.set(repo, "remote.x.url", f"sh -c touch% {canary}")
            url = "x"
        git(repo, env, "ls-remote", url)
        return fired(canary)

    demonstrate(lab, fire, stops=["GIT_ALLOW_PROTOCOL", "protocol.ext.allow"], each_suffices=True)


def test_pack_objects_hook_is_read_from_protected_config_only(lab: Lab) -> None:
    evil, canary = canary_script(lab.fresh(), 'exec "$@"')

    def clone(env: dict[str, str], source: Path) -> bool:
        done = git(lab.fresh(), env, "clone", "-q", "--no-local", str(source), "copy")
        assert done.returncode == 0, done.stderr
        return fired(canary)

    # in the repository's own config git ignores it, even unhardened
    source = lab.repo()
    lab.set(source, "uploadpack.packObjectsHook", str(evil))
    assert not clone(lab.plain(), source)

    # in the user's global config it runs, unless the global config is ignored
    def fire(env: dict[str, str]) -> bool:
        return clone(env, lab.repo())

    with (lab.home / ".gitconfig").open("a") as f:
        f.write(f"[uploadpack]\n\tpackObjectsHook = {evil}\n")
    demonstrate(lab, fire, stops=["GIT_CONFIG_GLOBAL"])


# -- discovery, lifetime, deletion ----------------------------------------------------------


def test_crafted_bare_repository_in_the_tree_is_not_discovered(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        outer = lab.repo()
        evil, canary = canary_script(lab.fresh())
        crafted = outer / "vendor" / "crafted"
        crafted.mkdir(parents=True)
        lab.g(crafted, "init", "-q", "--bare")
        lab.set(crafted, "alias.pwn", f"!{evil}")
        git(crafted / "refs", env, "pwn")
        if not canary.exists():
            # the alias lookup just finds no repository; a command that needs one says why
            done = git(crafted / "refs", env, "rev-parse", "--absolute-git-dir")
            assert "cannot use bare repository" in done.stderr, done.stderr
        return fired(canary)

    demonstrate(lab, fire, stops=["safe.bareRepository"])


def _loose_objects_with_prefix(repo: Path, lab: Lab, prefix: str, n: int) -> None:
    found = 0
    for i in count():
        content = f"blob {i}\n".encode()
        if hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest().startswith(prefix):
            subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=repo,
                env=lab.setup_env(),
                input=content,
                capture_output=True,
                check=True,
            )
            found += 1
            if found == n:
                return


def test_no_automatic_gc(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        lab.set(repo, "gc.auto", "1")  # git gc --auto wants to run at 2 loose objects in 17/
        lab.set(repo, "gc.autoDetach", "false")  # in the foreground, so the test can see it
        _loose_objects_with_prefix(repo, lab, "17", 3)
        git(repo, env, "commit", "-q", "--allow-empty", "-m", "x")
        return any((repo / ".git/objects/pack").glob("*.pack"))

    demonstrate(lab, fire, stops=["gc.auto", "maintenance.auto"], each_suffices=True)


def test_clean_requires_force(lab: Lab) -> None:
    def fire(env: dict[str, str]) -> bool:
        repo = lab.repo()
        lab.set(repo, "clean.requireForce", "false")
        (repo / "junk").mkdir()
        (repo / "junk" / "file").write_text("mine\n")
        done = git(repo, env, "clean", "-d")
        if (repo / "junk").exists():
            assert done.returncode != 0 and "requireForce" in done.stderr
        return not (repo / "junk").exists()

    demonstrate(lab, fire, stops=["clean.requireForce"])


# -- the user's global configuration and identity -------------------------------------------


@pytest.mark.parametrize(
    ("setting", "args", "stops"),
    [
        ("pager", ["log", "-1"], ["GIT_CONFIG_GLOBAL", "GIT_PAGER", "core.pager"]),
        ("editor", ["commit", "--allow-empty"], ["GIT_CONFIG_GLOBAL", "GIT_EDITOR", "core.editor"]),
    ],
)
def test_global_pager_and_editor_have_no_effect(
    lab: Lab, setting: str, args: list[str], stops: list[str]
) -> None:
    evil, canary = canary_script(lab.fresh(), "exec cat" if setting == "pager" else "exit 0")
    with (lab.home / ".gitconfig").open("a") as f:
        f.write(f"[core]\n\t{setting} = {evil}\n")

    def fire(env: dict[str, str]) -> bool:
        git_tty(lab.repo(), env, *args)
        return fired(canary)

    demonstrate(lab, fire, stops=stops, each_suffices=True)


def test_identity_from_the_global_config_only(lab: Lab) -> None:
    evil, canary = canary_script(lab.fresh())
    included = lab.fresh() / "identity.inc"
    included.write_text("[user]\n\temail = included@example.invalid\n")
    (lab.home / ".gitconfig").write_text(
        "[user]\n\tname = Grace Global\n\temail = grace@example.invalid\n"
        f"[include]\n\tpath = {included}\n"
        f"[core]\n\tfsmonitor = {evil}\n\tpager = {evil}\n"
        f"[alias]\n\tpwn = !{evil}\n"
        "[commit]\n\tgpgSign = true\n"
    )
    # GIT_DIR is not passed on (only HOME, XDG_CONFIG_HOME and PATH are)
    identity = read_identity("git", {"HOME": str(lab.home), "PATH": lab.path, "GIT_DIR": "/x"})
    assert identity == {"user.name": "Grace Global", "user.email": "included@example.invalid"}

    repo = lab.repo()
    (repo / "f").write_text("edited\n")
    env = lab.hardened(identity=identity)
    assert git(repo, env, "commit", "-q", "-am", "by grace").returncode == 0
    who = git(repo, env, "log", "-1", "--format=%an <%ae>|%cn <%ce>").stdout.strip()
    assert who == "Grace Global <included@example.invalid>|Grace Global <included@example.invalid>"
    assert git(repo, env, "pwn").returncode != 0
    assert not canary.exists()
    # the identity comes from git_environment, not from the (ignored) global file
    without = git(repo, lab.hardened(identity={}), "commit", "--allow-empty", "-m", "anon")
    assert without.returncode != 0 and "identity" in without.stderr.lower()
    # unhardened, the same global file does run its programs
    git(repo, lab.plain(), "status")
    assert fired(canary)


def test_read_identity_edges(lab: Lab) -> None:
    env = {"HOME": str(lab.home), "PATH": lab.path}
    (lab.home / ".gitconfig").write_text(
        '[user]\n\tname = "two\\nlines"\n\temail = ok@example.invalid\n'
    )
    assert read_identity("git", env) == {"user.email": "ok@example.invalid"}

    (lab.home / ".gitconfig").unlink()
    xdg = lab.fresh("xdg")
    (xdg / "git").mkdir()
    (xdg / "git" / "config").write_text("[user]\n\tname = Xavier Xdg\n")
    assert read_identity("git", env) == {}
    assert read_identity("git", {**env, "XDG_CONFIG_HOME": str(xdg)}) == {"user.name": "Xavier Xdg"}
    # ~/.gitconfig is read after the XDG file: its value wins, as in git
    (lab.home / ".gitconfig").write_text("[user]\n\tname = Home Wins\n")
    assert read_identity("git", {**env, "XDG_CONFIG_HOME": str(xdg)}) == {"user.name": "Home Wins"}

    assert read_identity(str(lab.root / "no-such-git"), env) == {}
    assert read_identity("git", {}) == {}  # no HOME: git fails, we do not raise
    slow = script(lab.fresh() / "slow-git", "exec sleep 30")
    started = time.monotonic()
    assert read_identity(str(slow), env, timeout=0.5) == {}
    assert time.monotonic() - started < 10
    failing = script(lab.fresh() / "failing-git", "echo 'user.name'; exit 2")
    assert read_identity(str(failing), env) == {}


def test_read_identity_does_not_discover_a_repository(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = lab.repo()
    lab.set(repo, "user.name", "From The Repository")
    monkeypatch.chdir(repo)
    assert read_identity("git", {"HOME": str(lab.home), "PATH": lab.path}) == IDENTITY


# -- what the environment cannot do (documented residual risks) -----------------------------


def test_residual_aliases_are_left_to_the_policy(lab: Lab) -> None:
    repo = lab.repo()
    evil, canary = canary_script(lab.fresh())
    lab.set(repo, "alias.status", f"!{evil}")
    lab.set(repo, "alias.pwn", f"!{evil}")
    git(repo, lab.plain(), "status")
    assert not fired(canary)  # git never lets an alias shadow a builtin
    git(repo, lab.hardened(), "pwn")
    assert fired(canary)  # an unknown subcommand reaches the alias: the policy must refuse it


def test_residual_diff_external_has_no_off_value(lab: Lab) -> None:
    repo = lab.repo()
    (repo / "f").write_text("changed\n")
    evil, canary = canary_script(lab.fresh())
    lab.set(repo, "diff.external", str(evil))
    git(repo, lab.hardened(), "diff")
    assert fired(canary)
    for args in (["diff", "--stat"], ["diff", "--no-ext-diff"], ["log", "-p"], ["show"]):
        assert git(repo, lab.hardened(), *args).returncode == 0
        assert not fired(canary), args
    # an empty value does not mean "none": every git diff would die
    broken = git(repo, lab.hardened(config=[("diff.external", "")]), "diff")
    assert broken.returncode != 0 and "cannot run" in broken.stderr


def test_residual_local_push_runs_the_receiving_repositorys_hooks(lab: Lab) -> None:
    receiver, repo = lab.repo(bare=True), lab.repo()
    canary = receiver / "canary"
    script(receiver / "hooks" / "post-receive", f'env > "{canary}"')
    pushed = git(repo, lab.hardened(), "-c", "x.y=z", "push", "-q", str(receiver), "main")
    assert pushed.returncode == 0
    seen = canary.read_text().splitlines()
    # git unsets GIT_CONFIG_COUNT and GIT_CONFIG_PARAMETERS (what -c sets) for the other
    # repository; plain variables survive
    assert not [line for line in seen if line.startswith(("GIT_CONFIG_COUNT=", "GIT_CONFIG_PARAM"))]
    for kept in ("GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_PAGER=cat"):
        assert kept in seen, kept
    assert "GIT_ALLOW_PROTOCOL=file:git:http:https:ssh" in seen
    assert fired(canary)
    no_file = lab.hardened()
    no_file["GIT_ALLOW_PROTOCOL"] = "git:http:https:ssh"
    refused = git(repo, no_file, "push", "-q", str(receiver), "main:other")
    assert refused.returncode != 0 and "transport 'file' not allowed" in refused.stderr
    assert not canary.exists()


def test_residual_local_push_runs_the_receiving_repositorys_alternate_refs_command(
    lab: Lab,
) -> None:
    """Why the files provider never writes in a bare repository: its config is the other
    side's, where none of the command-line overrides apply."""
    receiver, repo, other = lab.repo(bare=True), lab.repo(), lab.repo()
    evil, canary = canary_script(lab.fresh(), "exit 0")
    (receiver / "objects" / "info" / "alternates").write_text(f"{other}/.git/objects\n")
    lab.set(receiver, "core.alternateRefsCommand", str(evil))
    assert git(repo, lab.hardened(), "push", "-q", str(receiver), "main").returncode == 0
    assert fired(canary)


def test_residual_command_line_config_beats_the_environment(lab: Lab) -> None:
    repo = lab.repo()
    evil, canary = canary_script(lab.fresh())
    git(repo, lab.hardened(), "-c", f"core.fsmonitor={evil}", "status")
    assert fired(canary)  # so the policy must refuse git's -c / --config-env


def test_hardened_git_still_works(lab: Lab) -> None:
    """Ordinary work is unaffected: clone, commit, diff, log, fetch, push, archive."""
    origin = lab.repo()
    work = lab.fresh()
    env = lab.hardened()
    assert git(work, env, "clone", "-q", str(origin), "w").returncode == 0
    clone = work / "w"
    (clone / "f").write_text("new\n")
    assert "+new" in git(clone, env, "diff").stdout
    assert git(clone, env, "commit", "-q", "-am", "edit").returncode == 0
    assert git(clone, env, "log", "--oneline").stdout.count("\n") == 2
    assert git(clone, env, "status", "--short").returncode == 0
    bare = lab.repo(bare=True)
    assert git(clone, env, "push", "-q", str(bare), "main").returncode == 0
    assert git(clone, env, "fetch", "-q", str(bare)).returncode == 0
    assert git(clone, env, "archive", "--format=tgz", "-o", "a.tgz", "HEAD").returncode == 0
    assert gzip.decompress((clone / "a.tgz").read_bytes())
