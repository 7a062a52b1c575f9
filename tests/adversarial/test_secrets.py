"""Secret leaks: a known token, everywhere runtime writes.

The token sits in the environment (``RUNTIME_GITHUB_TOKEN``) AND in the keyring
(the in-memory backend of :mod:`tests.memory_keyring`, selected with
``PYTHON_KEYRING_BACKEND``), for github.com and for the loopback GitHub double.
Every command runs in process through the real entry point (``cli``), in text
and in ``--output json``, on its success and failure paths: validate, plan,
dry-run, execute (ok, 404, 401 and 500 answers whose body echoes the token),
preflight offline and ``--live``, policy show/check, audit tail/show, auth
status (``--live`` too) and login, the context commands, ``runtime github``
operations, the gh CLI transport with a fake ``gh`` first on PATH that prints
``$GH_TOKEN``/``$GH_ENTERPRISE_TOKEN`` (also in pieces, across a line longer
than the streaming buffer), ``runtime command run``, and internal errors forced
by monkeypatching an engine function to raise with the token in its message.

Scanned, for the token itself, its base64 forms and its URL-encoded forms:
stdout, stderr, the audit log and every other file in Runtime Home, and what
binaries not mapped to github received (argv and environment, recorded by a
fake binary; ``printenv``'s output). A binary mapped to github (gh) must get
the token in its environment, never in argv.

The campaign prints ``secrets: N outputs scanned, L leaks``.
"""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from runtime.auth import keyring_service
from tests.adversarial.conftest import FULL, dump_binary, fake_binary, user_policy
from tests.conftest import Result, capability, write
from tests.github_double import GitHubDouble
from tests.memory_keyring import SELECTOR, use_memory_keyring

# Not shaped like ghp_... (so only registration can redact it); '+' and '/' make the
# base64 and URL-encoded forms differ from the token itself.
TOKEN = "rt-adv+Secr3t/9f3c2a71e5d4Qz"


def forms(secret: str) -> dict[str, str]:
    """The token and its encoded forms (each distinct text once)."""
    raw = secret.encode()
    found = {
        "token": secret,
        "base64": base64.b64encode(raw).decode(),
        "base64url": base64.urlsafe_b64encode(raw).decode(),
        "base64 unpadded": base64.b64encode(raw).decode().rstrip("="),
        "url-encoded": quote(secret, safe=""),
        "form-encoded": quote_plus(secret),
        "json-escaped": json.dumps(secret)[1:-1],
    }
    unique: dict[str, str] = {}
    for name, value in found.items():
        if value not in unique.values():
            unique[name] = value
    return unique


FORMS = forms(TOKEN)

# The fake gh: records argv, prints the token it was given in several ways. With "split"
# in its args it writes the token in two pieces at the end of a line longer than the
# 64 KiB streaming buffer (the reader has the first piece before the second is written).
FAKE_GH = """\
import json, os, sys, time
tok = os.environ.get("GH_TOKEN") or os.environ.get("GH_ENTERPRISE_TOKEN") or ""
with open({log!r}, "a", encoding="utf-8") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "got_token": tok == {token!r}}}) + "\\n")
args = sys.argv[1:]
if "split" in args:
    sys.stdout.write("x" * 65536); sys.stdout.flush(); time.sleep(0.25)
    sys.stdout.write(tok[:6]); sys.stdout.flush(); time.sleep(0.25)
    sys.stdout.write(tok[6:] + "\\n"); sys.stdout.flush()
    sys.exit(0)
print("token=" + tok)
print("GH_TOKEN=" + os.environ.get("GH_TOKEN", ""), file=sys.stderr)
print("GH_ENTERPRISE_TOKEN=" + os.environ.get("GH_ENTERPRISE_TOKEN", ""))
print(json.dumps({{"echo": tok}}))
sys.stdout.write(tok)
sys.stdout.flush()
if "fail" in args:
    sys.stderr.write("gh: HTTP 401: Bad credentials " + tok)
    sys.exit(1)
"""

CAPS = {
    "ok.md": """\
version: v1
workflow:
  - provider: github
    args: [user, get]
  - provider: github
    args: [repo, view, acme/app]
  - binary: envdump
    args: [plain, --flag, "${{ secrets.X }}"]
  - binary: printenv
    args: []
  - provider: files
    args: [write, note.txt, hello]
""",
    "not-found.md": "version: v1\nworkflow:\n  - provider: github\n    args: [repo, view, acme/missing]\n",
    "echo.md": "version: v1\nworkflow:\n  - provider: github\n    args: [api, GET, /user]\n",
    "gh.md": "version: v1\nworkflow:\n  - provider: github\n    args: [pr, list, --repo, acme/app]\n",
    "gh-fail.md": "version: v1\nworkflow:\n  - provider: github\n    args: [pr, list, --repo, acme/app, fail]\n",
    "gh-split.md": "version: v1\nworkflow:\n  - provider: github\n    args: [pr, list, --repo, acme/app, split]\n",
    "gh-binary.md": "version: v1\nworkflow:\n  - binary: gh\n    args: [pr, status]\n  - binary: gh\n    args: [pr, status, split]\n",
    "invalid.md": "version: v1\nworkflow:\n  - provider: github\n    args: [nope]\n",
    "refused.md": "version: v1\nworkflow:\n  - binary: gh\n    args: [auth, token]\n",
}


@dataclass
class Leak:
    command: str
    where: str
    form: str
    excerpt: str


@dataclass
class Scan:
    outputs: int = 0
    leaks: list[Leak] = field(default_factory=list)

    def text(self, command: str, where: str, text: str) -> None:
        self.outputs += 1
        for form, value in FORMS.items():
            at = text.find(value)
            if at >= 0:
                excerpt = text[max(0, at - 80) : at + len(value) + 20]
                self.leaks.append(Leak(command, where, form, excerpt))

    def result(self, command: str, result: Result) -> None:
        self.text(command, "stdout", result.stdout)
        self.text(command, "stderr", result.stderr)

    def report(self) -> str:
        return "\n".join(
            f"- {leak.command} [{leak.where}, {leak.form}]: ...{leak.excerpt!r}..."
            for leak in self.leaks
        )


@dataclass
class Scene:
    cli: Callable[..., Result]
    gh: GitHubDouble
    work: Path
    home: Path
    tmp: Path
    env: dict[str, str]
    dumps: Path
    gh_log: Path
    monkeypatch: pytest.MonkeyPatch
    remote_lookups: list[str]
    scan: Scan = field(default_factory=Scan)
    unexpected: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)

    def run(
        self,
        *args: str,
        keyring_only: bool = False,
        stdin: str | None = "",
        json_too: bool = True,
        expect: int | None = None,
    ) -> list[Result]:
        env = dict(self.env)
        if keyring_only:
            env.pop("RUNTIME_GITHUB_TOKEN")
        results = []
        for head in (("--output", "json"), ()) if json_too else ((),):
            self.monkeypatch.setattr(sys, "stdin", io.StringIO(stdin or ""))
            result = self.cli(*head, *args, extra_env=env)
            label = " ".join(("runtime", *head, *args)) + (
                " [keyring only]" if keyring_only else ""
            )
            self.scan.result(label, result)
            if expect is not None and result.code != expect:
                self.unexpected.append(f"{label}: exit {result.code}, expected {expect}")
            if head and result.stdout.startswith("{"):
                doc = json.loads(result.stdout)
                if isinstance(doc, dict) and doc.get("run_id"):
                    self.run_ids.append(doc["run_id"])
            results.append(result)
        return results

    def scan_files(self) -> None:
        for folder in (self.home,):
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    text = path.read_bytes().decode("utf-8", errors="replace")
                    self.scan.text(f"file {path.relative_to(self.tmp)}", "file", text)
        if self.dumps.exists():
            for line in self.dumps.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                self.scan.text("envdump (not mapped to github)", "argv", "\0".join(record["argv"]))
                env_text = "\n".join(f"{k}={v}" for k, v in record["env"].items())
                self.scan.text("envdump (not mapped to github)", "environment", env_text)
        if self.gh_log.exists():
            for line in self.gh_log.read_text(encoding="utf-8").splitlines():
                self.scan.text("gh (mapped to github)", "argv", "\0".join(json.loads(line)["argv"]))


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")
        double.add_repo("acme", "app", description="The app")
        yield double


@pytest.fixture
def scene(
    cli: Callable[..., Result],
    gh: GitHubDouble,
    work: Path,
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Scene:
    store = use_memory_keyring(monkeypatch)
    for host in ("github.com", gh.host):
        store[(keyring_service(host), "token")] = TOKEN
    bin_dir = tmp_path / "bin"
    dumps = tmp_path / "envdump.jsonl"
    gh_log = tmp_path / "gh.jsonl"
    dump_binary(bin_dir, "envdump", dumps)
    fake_binary(bin_dir, "gh", FAKE_GH.format(log=str(gh_log), token=TOKEN))
    policy = user_policy(tmp_path / "policy.yaml", ["envdump", "printenv"], writable=[tmp_path])
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "RUNTIME_POLICY_FILE": str(policy),
        "RUNTIME_GITHUB_TOKEN": TOKEN,
        "PYTHON_KEYRING_BACKEND": SELECTOR,
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_GRAPHQL_URL": gh.graphql_url,
    }
    for name, body in CAPS.items():
        write(work / name, capability(body))
    # The fake token never goes to the internet: name lookups of other hosts fail here.
    remote: list[str] = []
    real_getaddrinfo = socket.getaddrinfo

    def loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in ("localhost", "127.0.0.1", "::1") and not name.startswith("127."):
            remote.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"{name}: not in this test")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", loopback_only)
    return Scene(cli, gh, work, home, tmp_path, env, dumps, gh_log, monkeypatch, remote)


def echo_faults(gh: GitHubDouble, status: int) -> None:
    """Every answer about the user or the repositories echoes the token in its body."""
    gh.clear_faults()
    body = {"message": f"remote says {TOKEN}", "token": TOKEN}
    for route in ("/user$", "/repos/", "/orgs/", "/$"):
        gh.inject(route, status, count=None, body=body)


def run_everything(s: Scene) -> None:
    # -- capabilities: validate, plan, dry-run, execute ok and failing
    for name in CAPS:
        s.run("capability", "validate", name)
    for name in ("ok.md", "gh.md", "refused.md", "invalid.md"):
        s.run("capability", "plan", name)
        s.run("capability", "execute", name, "--dry-run")
    for name, code in (("ok.md", 0), ("not-found.md", 1), ("echo.md", 0), ("gh.md", 0)):
        s.run("capability", "execute", name, expect=code)
    for name, code in (("gh-fail.md", 1), ("gh-split.md", 0), ("gh-binary.md", 0)):
        s.run("capability", "execute", name, expect=code)
    s.run("capability", "execute", "refused.md", expect=3)
    s.run("capability", "execute", "invalid.md", expect=2)
    for status in (401, 404, 500):
        echo_faults(s.gh, status)
        s.run("capability", "execute", "echo.md", expect=1)
        s.run("capability", "execute", "ok.md", expect=1)
    s.gh.clear_faults()

    # -- preflight, offline and live, with the host answering and echoing
    s.run("capability", "preflight", "ok.md")
    s.run("capability", "preflight", "ok.md", "--live")
    for status in (401, 500):
        echo_faults(s.gh, status)
        s.run("capability", "preflight", "gh.md", "--live")
    s.gh.clear_faults()

    # -- policy, audit
    s.run("policy", "show")
    s.run("policy", "check", "ok.md")
    s.run("policy", "check", "refused.md")
    s.run("audit", "tail", "-n", "200")
    for run_id in sorted(set(s.run_ids))[:: 1 if FULL else 4]:
        s.run("audit", "show", run_id)
    s.run("audit", "show", "no-such-run")

    # -- auth and contexts
    # (--live always with --host: without it, status also asks github.com itself)
    s.run("auth", "status")
    s.run("auth", "status", "--live", "--host", s.gh.host, expect=0)
    s.run("auth", "login", "github", "--host", s.gh.host, stdin=TOKEN + "\n", expect=0)
    s.run("auth", "login", "github", "--host", s.gh.host, stdin="", expect=0)
    for status in (401, 500):
        echo_faults(s.gh, status)
        s.run("auth", "status", "--live", "--host", s.gh.host)
        s.run("auth", "login", "github", "--host", s.gh.host, stdin=TOKEN + "\n")
        s.run("auth", "login", "github", "--host", s.gh.host, stdin="")
    s.gh.clear_faults()
    s.run("context", "set", "work", f"github_host={s.gh.host}", "organization=acme")
    s.run("context", "list")
    s.run("context", "show", "work")
    s.run("context", "use", "work")
    s.run("context", "show", "missing")

    # -- provider operations directly
    s.run("github", "user", "get", expect=0)
    s.run("github", "repo", "view", "acme/app", expect=0)
    s.run("github", "repo", "view", "acme/missing", expect=1)
    s.run("github", "pr", "list", "--repo", "acme/app", expect=0)
    s.run("github", "pr", "list", "--repo", "acme/app", "fail", expect=1)
    s.run("github", "pr", "list", "--repo", "acme/app", "split", expect=0)
    for status in (401, 404, 500):
        echo_faults(s.gh, status)
        s.run("github", "api", "GET", "/user")
        s.run("github", "repo", "view", "acme/app")
    # a successful answer carrying the token, as a value and as a key
    s.gh.clear_faults()
    s.gh.inject("/user$", 200, count=None, body={"login": "octocat", "echo": TOKEN, TOKEN: "k"})
    s.run("github", "api", "GET", "/user", expect=0)
    s.run("github", "user", "get", expect=0)
    s.gh.clear_faults()
    s.run("capability", "show", "ok.md")
    s.run("capability", "list")
    s.run("command", "run", "envdump", "a", "b", expect=0)
    s.run("command", "run", "printenv", expect=0)
    s.run("command", "run", "gh", "pr", "status", expect=0)
    s.run("command", "run", "gh", "auth", "token", expect=3)

    # -- the keyring alone (no environment variable)
    for args, code in (
        (("capability", "execute", "ok.md"), 0),
        (("capability", "execute", "gh.md"), 0),
        (("capability", "execute", "gh-split.md"), 0),
        (("capability", "execute", "gh-binary.md"), 0),
        (("capability", "preflight", "ok.md", "--live"), 0),
        (("auth", "status"), 0),
        (("auth", "status", "--live", "--host", s.gh.host), 0),
        (("github", "user", "get"), 0),
        (("github", "pr", "list", "--repo", "acme/app", "fail"), 1),
    ):
        s.run(*args, keyring_only=True, expect=code)
    if FULL:  # everything again with the keyring alone
        for status in (401, 500):
            echo_faults(s.gh, status)
            s.run("auth", "status", "--live", "--host", s.gh.host, keyring_only=True)
            s.run("capability", "execute", "echo.md", keyring_only=True)
            s.run("github", "api", "GET", "/user", keyring_only=True)
        s.gh.clear_faults()


def force_internal_errors(s: Scene) -> None:
    """Engine functions raising with the token in the message: the token nowhere.

    Outside a step that is an internal error (exit 70); inside a step it is that
    step's failure (exit 1), recorded in the audit log like any other.
    """
    import providers.github.client as client
    import runtime.pipeline as pipeline
    from runtime.auth import AuthEngine

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"boom with {TOKEN} and {FORMS['base64']}")

    cases: list[tuple[Any, str, tuple[str, ...], int]] = [
        (pipeline, "build_plan", ("capability", "execute", "ok.md"), 70),
        (pipeline, "build_plan", ("capability", "plan", "ok.md"), 70),
        (client.GitHubHTTP, "request", ("github", "user", "get"), 1),
        (client.GitHubHTTP, "request", ("capability", "execute", "ok.md"), 1),
        (AuthEngine, "lookup", ("auth", "status"), 70),
        (AuthEngine, "binary_environment", ("capability", "execute", "gh-binary.md"), 1),
    ]
    for owner, name, args, code in cases:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(owner, name, boom)
            for result in s.run(*args):
                assert result.code == code, (name, args, result.code, result.stdout, result.stderr)


def test_secrets_campaign(scene: Scene, figure: Callable[[str], None]) -> None:
    run_everything(scene)
    force_internal_errors(scene)
    scene.scan_files()
    # the mapped binary got the token in its environment, the others never did
    assert scene.gh_log.exists(), "the fake gh never ran"
    assert scene.dumps.exists(), "envdump never ran"
    assert not scene.remote_lookups, f"tried to reach {set(scene.remote_lookups)}"
    gh_runs = [json.loads(line) for line in scene.gh_log.read_text().splitlines()]
    assert all(r["got_token"] for r in gh_runs), "gh ran without the token in its environment"
    figure(f"secrets: {scene.scan.outputs} outputs scanned, {len(scene.scan.leaks)} leaks")
    found = []
    if scene.scan.leaks:
        found.append(f"{len(scene.scan.leaks)} leaks:\n" + scene.scan.report())
    if scene.unexpected:  # a path that did not go where the campaign meant it to
        found.append("unexpected exit codes:\n" + "\n".join(scene.unexpected))
    assert not found, "\n".join(found)
