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

Three attacks on top of the outputs, counted in the figure too:

* the /proc attack: ``grep -r -a -h -o -s --include=environ NAME=... /proc`` as a
  binary step, for NAME = RUNTIME_GITHUB_TOKEN, GH_TOKEN and GITHUB_TOKEN (the token
  in runtime's environment under that name), alone and after a github step, the
  whole value and, with ``-P`` lookbehinds, in two pieces that no redaction knows
  (each piece is scanned for). In process (pytest's /proc holds no token) and
  through the installed ``runtime`` in a child process (whose own environ holds
  it), while a dumpable bystander process of the same user holds the token in its
  environment: only the step's confinement keeps it out (its own PID namespace and
  /proc; its own user namespace also denies reading any environ outside it).
* encoded forms printed by a binary step: a fake binary prints the token as Basic
  auth headers (base64 after prefixes of each length modulo 3), hex, percent- and
  form-encoded, and as jq ``explode`` code points (jq ``--arg`` called by the fake
  binary; and a jq step reading the token with ``--rawfile``). The token reaches the
  step through ``binary_credentials`` (its own environment), or from a file while
  runtime has it in its environment under a secret-like name (registered by name
  only), or from a file while a later step's credential comes from the keyring
  (registered before the first step runs).
* a non-dumpable runtime: while ``runtime capability execute`` runs ``sleep``,
  another process of the same user (when the tests run as root: root without any
  capability, through ``setpriv``) cannot read ``/proc/<runtime pid>/environ``, though it reads the environ
  of an ordinary process of that user.

Scanned, for the token itself, its base64 forms and its URL-encoded forms:
stdout, stderr, the audit log and every other file in Runtime Home, and what
binaries not mapped to github received (argv and environment, recorded by a
fake binary; ``printenv``'s output). A binary mapped to github (gh) must get
the token in its environment, never in argv.

The campaign prints ``secrets: N outputs scanned, L leaks``.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from tests.adversarial.conftest import FULL, dump_binary, fake_binary, user_policy
from tests.conftest import RUNTIME_BIN, Result, capability, keyring_service, require_tool, write
from tests.github_double import GitHubDouble
from tests.memory_keyring import SELECTOR, use_memory_keyring

# Not shaped like ghp_... (so only registration can redact it); '+' and '/' make the
# base64 and URL-encoded forms differ from the token itself.
TOKEN = "rt-adv+Secr3t/9f3c2a71e5d4Qz"
# The /proc attack prints the token in two pieces: the first HEAD characters, then the rest.
HEAD = 10
# Variables of runtime's environment that carry the token (registered by their names).
SECRET_VARIABLES = ("RUNTIME_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")


def base64_cores(raw: bytes) -> list[str]:
    """The base64 characters that depend on ``raw`` alone, wherever it stands in a longer
    stream (0, 1 or 2 bytes before it in its 3-byte group), in both alphabets."""
    cores = []
    for before in range(3):
        encoded = base64.b64encode(bytes(before) + raw).decode()
        core = encoded[-(-8 * before // 6) : 8 * (before + len(raw)) // 6]
        cores += [core, core.translate(str.maketrans("+/", "-_"))]
    return cores


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
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "code points": ",".join(str(c) for c in raw),
        "code points (jq pretty)": ",\n  ".join(str(c) for c in raw),
        "code points (Python list)": ", ".join(str(c) for c in raw),
        "piece 1": secret[:HEAD],
        "piece 2": secret[HEAD:],
    }
    for number, core in enumerate(base64_cores(raw)):
        found[f"base64 core {number}"] = core
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

# A binary that prints the token in encoded forms. `file PATH` reads it from PATH, else
# it takes it from its environment (mapped to it by binary_credentials).
FAKE_ENC = """\
import base64, json, os, subprocess, sys
from urllib.parse import quote, quote_plus
args = sys.argv[1:]
if args[:1] == ["file"]:
    with open(args[1], encoding="utf-8") as fh:
        tok = fh.read()
else:
    tok = os.environ.get("GH_TOKEN") or os.environ.get("GH_ENTERPRISE_TOKEN") or ""
if not tok:
    sys.exit("no token here")
raw = tok.encode()
for prefix in ("x-access-token:", "git:", "x:"):  # each alignment of the token's bytes
    print("Authorization: Basic " + base64.b64encode(prefix.encode() + raw).decode())
    print("url-safe: " + base64.urlsafe_b64encode(prefix.encode() + raw).decode().rstrip("="))
print("hex=" + raw.hex())
print("HEX=" + raw.hex().upper(), file=sys.stderr)
print("url=" + quote(tok, safe="") + " form=" + quote_plus(tok))
print(json.dumps({{"token": tok}}))
for flags in (["-c"], []):  # jq -c and jq's pretty array
    sys.stdout.write(subprocess.run(
        [{jq!r}, "-n", *flags, "--arg", "t", tok, "$t | explode"],
        capture_output=True, text=True, check=True,
    ).stdout)
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


def grep_proc(name: str, part: str) -> list[str]:
    """grep's args that print NAME's value from every environ under /proc: whole, or the
    first HEAD characters ("head"), or the rest ("tail")."""
    if part == "whole":
        return ["-r", "-a", "-h", "-o", "-s", "--include=environ", f"{name}=[^[:cntrl:]]*", "/proc"]
    pattern = (
        f"(?<={name}=).{{{HEAD}}}" if part == "head" else f"(?<={name}=.{{{HEAD}}})[^[:cntrl:]]*"
    )
    return ["-r", "-a", "-h", "-o", "-s", "-P", "--include=environ", pattern, "/proc"]


def attack_caps(secret_file: Path) -> dict[str, str]:
    caps = {}
    github = "  - provider: github\n    args: [user, get]\n"
    for name in SECRET_VARIABLES:
        for part in ("whole", "head", "tail"):
            grep = f"  - binary: grep\n    args: {json.dumps(grep_proc(name, part))}\n"
            caps[f"proc-{name}-{part}.md"] = "version: v1\nworkflow:\n" + grep
            caps[f"proc-gh-{name}-{part}.md"] = "version: v1\nworkflow:\n" + github + grep
    from_file = f"  - binary: encbin\n    args: {json.dumps(['file', str(secret_file)])}\n"
    program = '[($t | explode), ($t | @base64), ($t | @uri), ("x:" + $t | @base64)]'
    jq_args = ["-n", "-c", "--rawfile", "t", str(secret_file), program]
    jq = f"  - binary: jq\n    args: {json.dumps(jq_args)}\n"
    mapped = "  - binary: encmapped\n    args: []\n"
    caps["enc-mapped.md"] = "version: v1\nworkflow:\n" + mapped
    caps["enc-file.md"] = "version: v1\nworkflow:\n" + from_file + jq
    caps["enc-keyring.md"] = "version: v1\nworkflow:\n" + from_file + jq + mapped
    return caps


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
    cli_proc: Callable[..., Result]
    secret_file: Path
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
        env: dict[str, str] | None = None,
        child: bool = False,
    ) -> list[Result]:
        """Run the CLI in process (``child``: the installed ``runtime`` in a child process),
        with ``--output json`` and without, in the scene's environment or ``env``."""
        named = "" if env is None else "".join(f" [{n}]" for n in SECRET_VARIABLES if n in env)
        env = dict(self.env if env is None else env)
        if keyring_only:
            env.pop("RUNTIME_GITHUB_TOKEN")
        results = []
        for head in (("--output", "json"), ()) if json_too else ((),):
            if child:
                result = self.cli_proc(*head, *args, extra_env=env, input=stdin or "")
            else:
                self.monkeypatch.setattr(sys, "stdin", io.StringIO(stdin or ""))
                result = self.cli(*head, *args, extra_env=env)
            label = " ".join(("runtime", *head, *args))
            label += " [keyring only]" if keyring_only else ""
            label += " [child process]" if child else ""
            label += named
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
    cli_proc: Callable[..., Result],
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
    require_tool("jq", "the encoded-forms shape prints code points with jq")
    for name in ("encbin", "encmapped"):
        fake_binary(bin_dir, name, FAKE_ENC.format(jq=shutil.which("jq")))
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(TOKEN, encoding="utf-8")
    policy = user_policy(
        tmp_path / "policy.yaml",
        ["envdump", "printenv", "encbin", "encmapped"],
        extra="binary_credentials:\n  encmapped: github\n",
        writable=[tmp_path],
        also=[shutil.which("jq") or "/usr/bin/jq"],
    )
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "RUNTIME_POLICY_FILE": str(policy),
        "RUNTIME_GITHUB_TOKEN": TOKEN,
        "PYTHON_KEYRING_BACKEND": SELECTOR,
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_GRAPHQL_URL": gh.graphql_url,
    }
    for name, body in {**CAPS, **attack_caps(secret_file)}.items():
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
    return Scene(
        cli,
        gh,
        work,
        home,
        tmp_path,
        env,
        dumps,
        gh_log,
        monkeypatch,
        remote,
        cli_proc,
        secret_file,
    )


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
        s.run("capability", "plan", name, "--verbose")
        s.run("capability", "execute", name, "--dry-run")
    for name, code in (("ok.md", 0), ("not-found.md", 1), ("echo.md", 0), ("gh.md", 0)):
        s.run("capability", "execute", name, expect=code)
    for name, code in (("gh-fail.md", 1), ("gh-split.md", 0), ("gh-binary.md", 0)):
        s.run("capability", "execute", name, expect=code)
    s.run("capability", "execute", "refused.md", expect=3)
    s.run("capability", "execute", "invalid.md", expect=2)
    # a 401 to a request that carried the token is the credential's failure (4)
    for status, code in ((401, 4), (404, 1), (500, 1)):
        echo_faults(s.gh, status)
        s.run("capability", "execute", "echo.md", expect=code)
        s.run("capability", "execute", "ok.md", expect=code)
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
    # (without --host, --live asks only the current host: never github.com here)
    s.run("auth", "status")
    s.run("auth", "status", "--live", expect=0)
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
    # an argument quoting the token or an encoded form of it, refused before anything runs
    # (the refusal names the argument) or failing in its step
    raw = TOKEN.encode()
    for quoted in (TOKEN, base64.b64encode(raw).decode(), raw.hex(), quote(TOKEN, safe="")):
        s.run("github", "api", "GET", "/" + quoted, expect=2)
        s.run("files", "read", quoted, expect=1)

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
    import runtime.plan.build as planning
    from runtime.home.auth import AuthEngine

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"boom with {TOKEN} and {FORMS['base64']}")

    cases: list[tuple[Any, str, tuple[str, ...], int]] = [
        (planning, "build_plan", ("capability", "execute", "ok.md"), 70),
        (planning, "build_plan", ("capability", "plan", "ok.md"), 70),
        (client.GitHubHTTP, "request", ("github", "user", "get"), 1),
        (client.GitHubHTTP, "request", ("capability", "execute", "ok.md"), 1),
        (AuthEngine, "lookup", ("auth", "status"), 70),
        (AuthEngine, "program_environment", ("capability", "execute", "gh-binary.md"), 1),
    ]
    for owner, name, args, code in cases:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(owner, name, boom)
            for result in s.run(*args):
                assert result.code == code, (name, args, result.code, result.stdout, result.stderr)


def token_in(name: str, base: dict[str, str]) -> dict[str, str]:
    """``base`` with the token under ``name`` only (of the secret-like variables)."""
    env = {k: v for k, v in base.items() if k not in SECRET_VARIABLES}
    env[name] = TOKEN
    return env


def proc_attack(s: Scene) -> None:
    """grep every environ under /proc for the token, whole and in pieces, from a binary step.

    A bystander (a dumpable process of this user, like the shell that exported the
    token) holds it under every name; runtime in a child process holds it too.
    """
    # as root, without capabilities: a process of the same user and no more (a sandboxed
    # program without capabilities may read it, as it may a non-root user's processes)
    capless = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]
    bystander = subprocess.Popen(
        [*(capless if os.geteuid() == 0 else []), "sleep", "600"],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **dict.fromkeys(SECRET_VARIABLES, TOKEN),
        },
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        environ = Path(f"/proc/{bystander.pid}/environ")
        deadline = time.monotonic() + 5  # the exec of sleep sets its environ
        while TOKEN.encode() not in environ.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert TOKEN.encode() in environ.read_bytes(), "the bystander does not hold the token"
        for name in SECRET_VARIABLES:
            for part in ("whole", "head", "tail"):
                # the token under NAME alone; then NAME and RUNTIME_GITHUB_TOKEN, which a
                # github step uses first (so the token is registered for certain)
                for cap, env in (
                    (f"proc-{name}-{part}.md", token_in(name, s.env)),
                    (f"proc-gh-{name}-{part}.md", {**s.env, name: TOKEN}),
                ):
                    # grep finds nothing: exit 1 (after the github step went well)
                    s.run("capability", "execute", cap, env=env, expect=1)
                    s.run(
                        "capability", "execute", cap, env=env, expect=1, child=True, json_too=FULL
                    )
    finally:
        bystander.kill()
        bystander.wait()


def encoded_forms(s: Scene) -> None:
    """A binary step prints the token base64-encoded, hex, percent-encoded, as code points."""
    # the token in the step's own environment, through binary_credentials
    s.run("capability", "execute", "enc-mapped.md", expect=0)
    s.run("capability", "execute", "enc-mapped.md", keyring_only=True, expect=0)
    s.run("command", "run", "encmapped", expect=0)
    # from a file: only runtime's environment, by the variable's name, registers it
    for name in SECRET_VARIABLES:
        env = token_in(name, s.env)
        s.run("capability", "execute", "enc-file.md", env=env, expect=0)
        s.run("capability", "execute", "enc-file.md", env=env, expect=0, child=True, json_too=False)
        s.run("command", "run", "encbin", "file", str(s.secret_file), env=env, expect=0)
    # from a file, the token in the keyring only: registered for the last step's credential
    # before the first step runs
    s.run("capability", "execute", "enc-keyring.md", keyring_only=True, expect=0)


def sleeping(marker: str) -> list[int]:
    """The processes running ``sleep MARKER``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
                if len(argv) == 2 and argv[0].endswith(b"sleep") and argv[1] == marker.encode():
                    found.append(int(entry.name))
    return found


def non_dumpable(s: Scene) -> list[str]:
    """While runtime runs a step, another process of its user cannot read its environ.

    As root, runtime and the reader run as root without any capability (setpriv, as
    the /proc attack's bystander): root's CAP_SYS_PTRACE reads any environ, and a
    process of uid 0 without it is one more process of the same user. Not as nobody:
    the Python that runs the tests may live in root's home (pyenv), which nobody cannot
    load; root without capabilities runs the very interpreter and code under test.
    Returns the problems found.
    """
    problems: list[str] = []
    prefix: list[str] = []
    if os.geteuid() == 0:
        require_tool("setpriv", "the non-dumpable shape runs runtime as root without capabilities")
        prefix = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]
    who = " [as root without capabilities]" if prefix else ""
    # the step's program, unique to this run: `sleep MARKER`
    marker = str(3000 + os.getpid() % 1000)
    base = Path(tempfile.mkdtemp(prefix="runtime-secrets-nodump-"))
    runtime: subprocess.Popen[str] | None = None
    control: subprocess.Popen[bytes] | None = None
    try:
        user, work = base / "user", base / "user" / "work"
        write(
            work / "sleep.md",
            capability(f"version: v1\nworkflow:\n  - binary: sleep\n    args: ['{marker}']\n"),
        )
        policy = user_policy(base / "policy.yaml", ["sleep"])
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(user),
            "LANG": "C.UTF-8",
            "RUNTIME_HOME": str(user / "runtime-home"),
            "RUNTIME_POLICY_FILE": str(policy),
            "RUNTIME_GITHUB_TOKEN": TOKEN,
        }
        runtime = subprocess.Popen(
            [*prefix, str(RUNTIME_BIN), "capability", "execute", "sleep.md"],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 20  # the step runs: protect_process() ran before
        while not sleeping(marker) and runtime.poll() is None:
            if time.monotonic() > deadline:
                problems.append("runtime did not start its step within 20 s")
                break
            time.sleep(0.02)
        control = subprocess.Popen(
            [*prefix, "sleep", "60"],
            env={"PATH": env["PATH"], "CONTROL_SECRET": "control-value"},
            stdin=subprocess.DEVNULL,
        )
        # until the control is sleep itself: setpriv before its exec holds the variable
        # too, but still has the capabilities it gives up at exec, so a reader without
        # them may not read it yet
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{control.pid}/cmdline").read_bytes().split(b"\0")
                if argv[0].endswith(b"sleep"):
                    break
            time.sleep(0.01)

        def read(pid: int) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*prefix, "cat", f"/proc/{pid}/environ"],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=10,
            )

        ordinary = read(control.pid)
        if ordinary.returncode != 0 or "CONTROL_SECRET=control-value" not in ordinary.stdout:
            problems.append(f"the reader cannot read an ordinary process's environ: {ordinary}")
        if runtime.poll() is not None:
            problems.append(f"runtime ended before the check (exit {runtime.returncode})")
        got = read(runtime.pid)
        s.scan.text("cat /proc/<runtime pid>/environ", "stdout", got.stdout)
        s.scan.text("cat /proc/<runtime pid>/environ", "stderr", got.stderr)
        if got.returncode == 0 or "Permission denied" not in got.stderr:
            problems.append(
                f"another process of runtime's user read /proc/{runtime.pid}/environ: exit "
                f"{got.returncode}, {len(got.stdout)} characters, stderr {got.stderr.strip()!r}"
            )
    finally:
        if runtime is not None:
            if runtime.poll() is None:
                runtime.send_signal(signal.SIGTERM)  # runtime stops its step and exits 143
            try:
                out, err = runtime.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                runtime.kill()
                out, err = runtime.communicate()
            s.scan.text("runtime capability execute sleep.md" + who, "stdout", out)
            s.scan.text("runtime capability execute sleep.md" + who, "stderr", err)
            if runtime.returncode != 143:
                problems.append(
                    f"runtime (sleep, SIGTERM) exited {runtime.returncode}: {err[-500:]}"
                )
        if control is not None:
            control.kill()
            control.wait()
        time.sleep(0.2)
        for pid in sleeping(marker):  # the step must have ended with runtime
            problems.append(f"the step's program outlived runtime (pid {pid})")
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for path in sorted((base / "user" / "runtime-home").rglob("*")):
            if path.is_file():
                text = path.read_bytes().decode("utf-8", errors="replace")
                s.scan.text(f"file {path.relative_to(base)}{who}", "file", text)
        shutil.rmtree(base, ignore_errors=True)
    return problems


HOSTILE_GITHUB = {
    # gh's jq reading the token, from an input and as written
    "jq-input.md": (
        "version: v1\ninputs:\n  f:\n    required: true\nworkflow:\n  - provider: github\n"
        '    args: [pr, list, --repo, acme/app, --json, number, --jq, "${f}"]\n'
    ),
    "jq-binary.md": (
        "version: v1\ninputs:\n  f:\n    required: true\nworkflow:\n  - binary: gh\n"
        '    args: [api, user, --jq, "${f}"]\n'
    ),
    "jq-written.md": (
        "version: v1\nworkflow:\n  - binary: gh\n"
        "    args: [api, user, --jq, 'env.GH_TOKEN|@base64']\n"
    ),
    # the token sent to a host an input names
    "host-repo.md": (
        "version: v1\ninputs:\n  r:\n    required: true\nworkflow:\n  - provider: github\n"
        '    args: [pr, list, --repo, "${r}"]\n'
    ),
    "host-api.md": (
        'version: v1\ninputs:\n  r:\n    required: true\nworkflow:\n  - binary: gh\n    args: [api, "${r}"]\n'
    ),
}


def hostile_github(s: Scene) -> None:
    """The shapes of the hostile-inputs issue: every one refused, the token nowhere."""
    for name, body in HOSTILE_GITHUB.items():
        write(s.work / name, capability(body))
    for name in ("jq-input.md", "jq-binary.md"):
        for value in ("env.GH_TOKEN|@base64", "env.GH_ENTERPRISE_TOKEN|explode", "$ENV|tostring"):
            s.run("capability", "execute", name, "--input", f"f={value}", expect=3)
    s.run("capability", "execute", "jq-written.md", expect=3)
    for value in ("localhost:1/acme/app", "https://localhost:1/acme/app", "evil.example/a/b"):
        s.run("capability", "execute", "host-repo.md", "--input", f"r={value}", expect=3)
    s.run("capability", "execute", "host-api.md", "--input", "r=https://localhost:1/x", expect=3)
    # a token with a control character or outside ASCII: refused, never echoed
    for bad in (TOKEN + "\x07", TOKEN + "\u00e9"):
        env = {**s.env, "RUNTIME_GITHUB_TOKEN": bad}
        s.run("capability", "execute", "ok.md", env=env, expect=4)


def test_secrets_campaign(scene: Scene, figure: Callable[[str], None]) -> None:
    run_everything(scene)
    hostile_github(scene)
    force_internal_errors(scene)
    proc_attack(scene)
    encoded_forms(scene)
    not_dumpable = non_dumpable(scene)
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
    if not_dumpable:
        found.append("runtime's environ is readable:\n" + "\n".join(not_dumpable))
    assert not found, "\n".join(found)
