"""`runtime auth login|status|logout` and `runtime context ...` through the real entry point.

In process (the ``cli`` fixture), against a plain-http loopback GitHub double
(``GITHUB_API_URL`` / ``GITHUB_GRAPHQL_URL``), with the in-memory keyring of
:mod:`tests.memory_keyring` selected through ``PYTHON_KEYRING_BACKEND``. A
token "piped on stdin" is an ``io.StringIO`` put in ``sys.stdin``.

Every result is checked for the token: it must never be printed.
"""

from __future__ import annotations

import io
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keyring.core
import pytest

from tests.conftest import Result, capability, check_schema, keyring_service, write
from tests.github_double import DEFAULT_SCOPES, GitHubDouble
from tests.memory_keyring import SELECTOR, BrokenKeyring, MemoryKeyring, use_memory_keyring

TOKEN = "rt-cli-token-3f9a1c7e52"
WRONG = "rt-wrong-token-7b2d0e4f18"
GHE = "ghe.example.com"


class TerminalStdin(io.StringIO):
    """A stdin that is a terminal: login must not read it when nobody can type."""

    def isatty(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        raise AssertionError("stdin is a terminal; it must not be read without a prompt")


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN, tls=False) as double:
        double.add_org("acme")
        double.add_repo("acme", "app", description="The app")
        double.add_repo("acme", "infra")
        double.add_repo("octocat", "dotfiles")
        double.add_org("other-org")
        double.add_repo("other-org", "tools")
        yield double


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], str]:
    """The (emptied) in-memory keyring the CLI will use in this test."""
    return use_memory_keyring(monkeypatch)


@pytest.fixture
def run(
    cli: Callable[..., Result],
    gh: GitHubDouble,
    store: dict[tuple[str, str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., Result]:
    """``cli`` pointed at the double and the memory keyring; ``stdin=`` feeds sys.stdin."""

    def call(
        *args: str,
        stdin: str | io.StringIO | None = "",
        extra_env: dict[str, str] | None = None,
    ) -> Result:
        if isinstance(stdin, io.StringIO):
            monkeypatch.setattr(sys, "stdin", stdin)
        elif stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        env = {
            "PYTHON_KEYRING_BACKEND": SELECTOR,
            "GITHUB_API_URL": gh.api_url,
            "GITHUB_GRAPHQL_URL": gh.graphql_url,
            **(extra_env or {}),
        }
        result = cli(*args, extra_env=env)
        for secret in (TOKEN, WRONG):
            assert secret not in result.stdout, result.stdout
            assert secret not in result.stderr, result.stderr
        return result

    return call


def service(host: str) -> tuple[str, str]:
    return (keyring_service(host), "token")


# ------------------------------------------------------------------------------ auth login


def test_login_reads_the_token_from_stdin_and_stores_it(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    result = run("auth", "login", "github", "--host", gh.host, stdin=TOKEN + "\n")
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout == f"logged in to {gh.host} as octocat; the token is in the keyring\n"
    assert store == {service(gh.host): TOKEN}  # stripped of the newline
    assert [r.path for r in gh.requests] == ["/user"]  # verified with one GET /user first

    # the stored token serves a REST step, with no environment variable set
    gh.reset_counters()
    step = run("github", "user", "get")
    assert step.code == 0, step.stdout + step.stderr
    assert "login: octocat" in step.stdout
    assert all(r.headers["authorization"].endswith(TOKEN) for r in gh.requests)


def test_login_json(run: Callable[..., Result], gh: GitHubDouble) -> None:
    result = run("-o", "json", "auth", "login", "github", "--host", gh.host, stdin=TOKEN)
    assert result.code == 0, result.stderr
    assert result.json() == {
        "ok": True,
        "host": gh.host,
        "source": "keyring",
        "login": "octocat",
        "stored": True,
    }


def test_login_host_defaults_to_the_active_context(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    assert run("context", "set", "work", f"github_host={gh.host}").code == 0
    result = run("auth", "login", "github", stdin=TOKEN)
    assert result.code == 0, result.stdout + result.stderr
    assert f"logged in to {gh.host} as octocat" in result.stdout
    assert store == {service(gh.host): TOKEN}


def test_login_with_a_bad_token_stores_nothing(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    result = run("auth", "login", "github", "--host", gh.host, stdin=WRONG)
    assert result.code == 4, result.stdout + result.stderr
    assert result.stdout == ""
    assert f"error: the token was not accepted by {gh.host}" in result.stderr
    assert "401" in result.stderr
    assert store == {}

    as_json = run("-o", "json", "auth", "login", "github", "--host", gh.host, stdin=WRONG)
    assert as_json.code == 4
    doc = as_json.json()
    check_schema(doc, "error")
    assert doc["exit_code"] == 4
    assert doc["error"]["code"] == "missing-credential"
    assert store == {}


def test_login_without_stdin_verifies_the_environment_variable(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    env = {"RUNTIME_GITHUB_TOKEN": TOKEN}
    for stdin in (io.StringIO(""), TerminalStdin()):
        result = run("auth", "login", "github", "--host", gh.host, stdin=stdin, extra_env=env)
        assert result.code == 0, result.stdout + result.stderr
        assert result.stdout == (
            f"no token on stdin; RUNTIME_GITHUB_TOKEN is set and valid for {gh.host} "
            "(login octocat); nothing stored\n"
        )
    assert store == {}
    assert [r.path for r in gh.requests] == ["/user", "/user"]

    doc = run("-o", "json", "auth", "login", "github", "--host", gh.host, extra_env=env).json()
    assert doc == {
        "ok": True,
        "host": gh.host,
        "source": "environment variable RUNTIME_GITHUB_TOKEN",
        "login": "octocat",
        "stored": False,
    }
    assert store == {}


def test_login_without_stdin_and_an_invalid_environment_variable(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    result = run(
        "auth", "login", "github", "--host", gh.host, extra_env={"RUNTIME_GITHUB_TOKEN": WRONG}
    )
    assert result.code == 4, result.stdout + result.stderr
    assert f"the token was not accepted by {gh.host}" in result.stderr
    assert store == {}


def test_login_with_nothing_to_read_is_exit_4_with_a_hint(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    for stdin in (io.StringIO(""), io.StringIO("  \n"), TerminalStdin()):
        result = run("auth", "login", "github", "--host", gh.host, stdin=stdin)
        assert result.code == 4, result.stdout + result.stderr
        assert (
            "error: no token given: pipe a GitHub token (classic or fine-grained) on stdin"
            in result.stderr
        )
        assert "hint: in a pipeline, export RUNTIME_GITHUB_TOKEN=<token> instead" in result.stderr
    assert store == {}
    assert gh.requests == []  # nothing to verify, nothing sent


@pytest.mark.parametrize("host", ["https://ghe.example.com", "ghe.example.com/api", ""])
def test_a_host_that_is_not_a_host_is_refused_before_anything_is_sent(
    run: Callable[..., Result],
    gh: GitHubDouble,
    store: dict[tuple[str, str], str],
    host: str,
) -> None:
    for args in (("login", "github"), ("status", "--live"), ("logout", "github")):
        result = run("auth", *args, "--host", host, stdin=TOKEN)
        assert result.code == 2, (args, result.stdout + result.stderr)
        assert result.stderr.startswith("error: --host must be a host name with an optional port")
        assert "hint: give the host alone: --host ghe.example.com" in result.stderr
    assert store == {}
    assert gh.requests == []


def test_login_for_an_unknown_provider_is_a_usage_error(run: Callable[..., Result]) -> None:
    result = run("auth", "login", "gitlab", stdin=TOKEN)
    assert result.code == 2
    assert "no credentials are kept for 'gitlab'" in result.stderr


# ----------------------------------------------------------------------------- auth status


def test_status_shows_the_source_per_host_and_never_the_token(
    run: Callable[..., Result], gh: GitHubDouble
) -> None:
    assert run("context", "set", "work", f"github_host={gh.host}").code == 0
    assert run("context", "set", "enterprise", f"github_host={GHE}").code == 0
    assert run("auth", "login", "github", "--host", gh.host, stdin=TOKEN).code == 0

    gh.reset_counters()
    result = run("auth", "status")
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"{gh.host}: keyring",
        f"{GHE}: no credential",
        "github.com: no credential",
    ]
    assert gh.requests == []  # no --live: nothing leaves the machine

    doc = run("-o", "json", "auth", "status").json()
    assert doc["ok"] is True
    assert doc["provider"] == "github"
    rows = {row["host"]: row for row in doc["hosts"]}
    assert rows[gh.host]["source"] == "keyring"
    assert rows[gh.host]["looked_in"] == [
        "environment variable RUNTIME_GITHUB_TOKEN",
        f"keyring (runtime:github:{gh.host})",
    ]
    assert rows[GHE]["source"] is None
    assert rows["github.com"]["problem"] is None

    with_env = run("auth", "status", extra_env={"RUNTIME_GITHUB_TOKEN": TOKEN})
    assert with_env.stdout.splitlines() == [
        f"{host}: environment variable RUNTIME_GITHUB_TOKEN"
        for host in (gh.host, GHE, "github.com")
    ]

    one = run("auth", "status", "github", "--host", GHE)
    assert one.stdout.splitlines() == [f"{GHE}: no credential"]


def test_status_live_shows_login_and_scopes(run: Callable[..., Result], gh: GitHubDouble) -> None:
    assert run("auth", "login", "github", "--host", gh.host, stdin=TOKEN).code == 0
    result = run("auth", "status", "github", "--host", gh.host, "--live")
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"{gh.host}: keyring; logged in as octocat; scopes: {', '.join(DEFAULT_SCOPES)}"
    ]

    gh.scopes = ["read:org"]
    doc = run("-o", "json", "auth", "status", "github", "--host", gh.host, "--live").json()
    (row,) = doc["hosts"]
    assert row["login"] == "octocat"
    assert row["scopes"] == ["read:org"]
    assert row["valid"] is True

    # a host without a credential is not asked
    gh.reset_counters()
    none = run("auth", "status", "github", "--host", GHE, "--live")
    assert none.code == 0
    assert none.stdout.splitlines() == [f"{GHE}: no credential"]
    assert gh.requests == []


def test_status_live_sends_the_variables_token_only_to_the_current_host(
    run: Callable[..., Result], gh: GitHubDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the variable's token is for the host runs use (here the double's); an Enterprise
    # context and github.com are listed, and never sent it unless --host names them
    assert run("context", "set", "enterprise", f"github_host={GHE}").code == 0
    assert run("context", "use", "--none").code == 0
    looked_up: list[str] = []
    real = socket.getaddrinfo

    def loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if not name.startswith("127.") and name not in ("localhost", "::1"):
            looked_up.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"{name}: not in this test")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", loopback_only)
    env = {"RUNTIME_GITHUB_TOKEN": TOKEN}
    gh.reset_counters()
    result = run("auth", "status", "--live", extra_env=env)
    assert result.code == 0, result.stdout + result.stderr
    note = (
        "  note: not checked: a token from the environment variable RUNTIME_GITHUB_TOKEN "
        f"goes only to {gh.host}, the current host; `runtime auth status --live --host {{}}` "
        "checks it there"
    )
    assert result.stdout.splitlines() == [
        f"{gh.host}: environment variable RUNTIME_GITHUB_TOKEN; logged in as octocat; "
        f"scopes: {', '.join(DEFAULT_SCOPES)}",
        f"{GHE}: environment variable RUNTIME_GITHUB_TOKEN",
        note.format(GHE),
        "github.com: environment variable RUNTIME_GITHUB_TOKEN",
        note.format("github.com"),
    ]
    assert [r.path for r in gh.requests] == ["/user"]
    assert looked_up == []
    doc = run("-o", "json", "auth", "status", "--live", extra_env=env).json()
    check_schema(doc, "auth-status")
    assert doc["ok"] is True
    assert [("note" in row, row.get("valid")) for row in doc["hosts"]] == [
        (False, True),
        (True, None),
        (True, None),
    ]
    # named, it is asked
    named = run("auth", "status", "--live", "--host", GHE, extra_env=env)
    assert named.code == 1
    assert looked_up == [GHE]


def test_status_live_reports_a_revoked_token(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    store[service(gh.host)] = WRONG  # e.g. revoked on the server since login
    result = run("auth", "status", "github", "--host", gh.host, "--live")
    assert result.code == 4, result.stdout + result.stderr
    assert result.stdout.startswith(f"{gh.host}: keyring; NOT valid: the token was not accepted")
    doc = run("-o", "json", "auth", "status", "github", "--host", gh.host, "--live").json()
    assert doc["ok"] is False
    assert doc["hosts"][0]["valid"] is False


def test_status_live_shows_what_the_host_says_redacted_and_needs_a_user(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    store[service(gh.host)] = TOKEN
    # a proxy that echoes the request's Authorization header in the answer (`run` fails
    # the test if the token is printed)
    gh.inject("/user$", 200, count=None, body={"login": f"me Bearer {TOKEN}"})
    echoed = run("auth", "status", "github", "--host", gh.host, "--live")
    assert echoed.code == 0, echoed.stdout + echoed.stderr
    assert "logged in as me Bearer [REDACTED]" in echoed.stdout
    doc = run("-o", "json", "auth", "status", "github", "--host", gh.host, "--live").json()
    assert doc["hosts"][0]["login"] == "me Bearer [REDACTED]"
    # a sign-in page answering 200 says nothing of the token: not checked, never valid
    gh.clear_faults()
    page = {"Content-Type": "text/html"}
    gh.inject("/user$", 200, count=None, body="<html>Sign in</html>", headers=page)
    html = run("-o", "json", "auth", "status", "github", "--host", gh.host, "--live")
    assert html.code == 1, html.stdout + html.stderr
    (row,) = html.json()["hosts"]
    assert "valid" not in row
    assert "answered GET /user with no user in it" in row["error"]
    login = run("auth", "login", "github", "--host", gh.host, stdin=WRONG)
    assert login.code == 1
    assert "answered GET /user with no user in it" in login.stderr
    assert store[service(gh.host)] == TOKEN  # nothing stored


# ----------------------------------------------------------------------------- auth logout


def test_logout_removes_the_token(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    assert run("auth", "login", "github", "--host", gh.host, stdin=TOKEN).code == 0
    result = run("auth", "logout", "github", "--host", gh.host)
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout == f"removed the {gh.host} token from the keyring\n"
    assert store == {}

    again = run("-o", "json", "auth", "logout", "github", "--host", gh.host)
    assert again.json() == {"ok": True, "host": gh.host, "removed": False}

    text = run("auth", "logout", "github", "--host", gh.host)
    assert text.stdout == f"no {gh.host} token was in the keyring\n"

    step = run("github", "user", "get")
    assert step.code == 4, step.stdout + step.stderr
    assert f"runtime auth login github --host {gh.host}" in step.stderr


def test_logout_notes_a_remaining_environment_variable(
    run: Callable[..., Result], gh: GitHubDouble
) -> None:
    result = run(
        "auth", "logout", "github", "--host", gh.host, extra_env={"RUNTIME_GITHUB_TOKEN": TOKEN}
    )
    assert result.code == 0
    assert "note: RUNTIME_GITHUB_TOKEN is still set in this environment" in result.stderr


def test_status_and_login_with_a_failing_keyring(
    run: Callable[..., Result], gh: GitHubDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyring.core, "_keyring_backend", BrokenKeyring())
    env = {"PYTHON_KEYRING_BACKEND": ""}  # keep the broken backend keyring already holds
    status = run("auth", "status", "github", "--host", gh.host, extra_env=env)
    assert status.code == 0
    assert status.stdout.splitlines() == [
        f"{gh.host}: no credential",
        "  note: the keyring failed (RuntimeError); use RUNTIME_GITHUB_TOKEN instead",
    ]
    login = run("auth", "login", "github", "--host", gh.host, stdin=TOKEN, extra_env=env)
    assert login.code == 4
    assert "error: the keyring refused the token (RuntimeError)" in login.stderr


def test_logout_with_a_failing_keyring_is_a_clear_error(
    run: Callable[..., Result], gh: GitHubDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not an internal error (exit 70): the backend's failure is named, the exit code is 2."""
    monkeypatch.setattr(keyring.core, "_keyring_backend", BrokenKeyring())
    result = run(
        "auth", "logout", "github", "--host", gh.host, extra_env={"PYTHON_KEYRING_BACKEND": ""}
    )
    assert result.code == 2, result.stderr
    assert "internal error" not in result.stderr
    assert "error: cannot reach the keyring: the keyring failed (RuntimeError)" in result.stderr


# -------------------------------------------------------------------------------- contexts


def test_context_set_list_use_show(run: Callable[..., Result], gh: GitHubDouble) -> None:
    empty = run("context", "list")
    assert empty.code == 0
    assert empty.stdout.startswith("no contexts; create one with `runtime context set")

    created = run("context", "set", "work", f"github_host={gh.host}", "organization=acme")
    assert created.code == 0, created.stderr
    assert created.stdout == f"work: github_host={gh.host} organization=acme\n"
    second = run("context", "set", "personal", f"github_host={GHE}")
    assert second.stdout == f"personal: github_host={GHE}\n"

    # the first context made becomes the active one
    listed = run("context", "list")
    assert listed.stdout.splitlines() == [
        f"  personal  github_host={GHE}",
        f"* work  github_host={gh.host} organization=acme",
    ]
    shown = run("context", "show")
    assert shown.stdout.splitlines() == [
        "work (active)",
        f"  github_host: {gh.host}",
        "  organization: acme",
    ]

    used = run("context", "use", "personal")
    assert used.code == 0
    assert used.stdout == "active context: personal\n"
    assert run("context", "list").stdout.splitlines()[0] == f"* personal  github_host={GHE}"
    assert run("context", "show").stdout.splitlines() == [
        "personal (active)",
        f"  github_host: {GHE}",
    ]
    assert run("context", "show", "work").stdout.splitlines()[0] == "work"

    # no NAME: the active context is changed; an empty value removes a key
    assert run("context", "set", "organization=beta").stdout == (
        f"personal: github_host={GHE} organization=beta\n"
    )
    assert run("context", "set", "personal", "organization=").stdout == (
        f"personal: github_host={GHE}\n"
    )

    doc = run("-o", "json", "context", "list").json()
    assert doc == {
        "ok": True,
        "active": "personal",
        "contexts": [
            {"name": "personal", "github_host": GHE},
            {"name": "work", "github_host": gh.host, "organization": "acme"},
        ],
    }
    show = run("-o", "json", "context", "show", "work").json()
    assert show == {
        "ok": True,
        "name": "work",
        "active": False,
        "values": {"github_host": gh.host, "organization": "acme"},
    }


def test_context_errors_are_usage_errors(run: Callable[..., Result]) -> None:
    unknown_key = run("context", "set", "work", "colour=blue")
    assert unknown_key.code == 2
    assert "error: unknown context key 'colour'" in unknown_key.stderr
    assert "known keys: github_host, organization" in unknown_key.stderr

    not_a_pair = run("context", "set", "work", "organization")
    assert not_a_pair.code == 2
    assert "'organization' is not key=value" in not_a_pair.stderr

    bad_name = run("context", "set", "-bad", "organization=acme")
    assert bad_name.code == 2

    assert run("context", "set", "work", "organization=acme").code == 0
    missing = run("context", "use", "nope")
    assert missing.code == 2
    assert "no context named 'nope'" in missing.stderr
    assert "contexts: work" in missing.stderr

    as_json = run("-o", "json", "context", "set", "work", "colour=blue")
    assert as_json.code == 2
    check_schema(as_json.json(), "error")
    # the failed calls changed nothing
    assert run("-o", "json", "context", "show", "work").json()["values"] == {"organization": "acme"}


def _plan_capability(work: Path) -> Path:
    return write(
        work / "repos.md",
        capability(
            "version: v1\nworkflow:\n  - provider: github\n    args: [repo, list]\n",
            frontmatter="name: repos\ndescription: List repositories\n",
            title="Repositories",
        ),
    )


def test_repo_list_takes_org_from_the_context(
    run: Callable[..., Result], gh: GitHubDouble, work: Path
) -> None:
    env = {"RUNTIME_GITHUB_TOKEN": TOKEN}
    assert run("context", "set", "work", f"github_host={gh.host}", "organization=acme").code == 0

    result = run("github", "repo", "list", extra_env=env)
    assert result.code == 0, result.stdout + result.stderr
    paths = [r.path.partition("?")[0] for r in gh.requests if r.method == "GET"]
    assert paths == ["/orgs/acme/repos"]
    assert "acme/app" in result.stdout
    assert "acme/infra" in result.stdout
    assert "octocat/dotfiles" not in result.stdout

    cap = _plan_capability(work)
    plan = run("capability", "plan", str(cap), "--verbose", extra_env=env)
    assert plan.code == 0, plan.stdout + plan.stderr
    assert "note: ORG = acme (from context 'work')" in plan.stdout
    assert f"note: host {gh.host} (context 'work')" in plan.stdout

    doc = run("-o", "json", "capability", "plan", str(cap), extra_env=env).json()
    check_schema(doc, "plan")
    assert "ORG = acme (from context 'work')" in doc["steps"][0]["notes"]

    # an explicit ORG wins over the context
    gh.reset_counters()
    explicit = run("github", "repo", "list", "other-org", extra_env=env)
    assert explicit.code == 0, explicit.stdout + explicit.stderr
    assert [r.path.partition("?")[0] for r in gh.requests] == ["/orgs/other-org/repos"]


def test_repo_list_without_a_context_org_lists_your_own(
    run: Callable[..., Result], gh: GitHubDouble, work: Path
) -> None:
    env = {"RUNTIME_GITHUB_TOKEN": TOKEN}
    assert run("context", "set", "personal", f"github_host={gh.host}").code == 0

    result = run("github", "repo", "list", extra_env=env)
    assert result.code == 0, result.stdout + result.stderr
    assert [r.path.partition("?")[0] for r in gh.requests] == ["/user/repos"]
    assert "octocat/dotfiles" in result.stdout

    plan = run("capability", "plan", str(_plan_capability(work)), "-v", extra_env=env)
    assert plan.code == 0, plan.stdout + plan.stderr
    assert "note: no ORG and no context organization: GET /user/repos" in plan.stdout
    assert "ORG = " not in plan.stdout


def test_a_run_reads_the_keyring_once_however_many_steps_use_it(
    run: Callable[..., Result],
    gh: GitHubDouble,
    store: dict[tuple[str, str], str],
    work: Path,
) -> None:
    # a keyring read is a round trip to the Secret Service (and may prompt on a locked
    # one): a run of many GitHub steps asks as often as a run of one
    store[service(gh.host)] = TOKEN

    def reads_for(steps: int) -> int:
        body = "".join(
            "  - provider: github\n    args: [repo, view, acme/app]\n" for _ in range(steps)
        )
        cap = write(
            work / f"views-{steps}.md",
            capability(
                f"version: v1\nworkflow:\n{body}",
                frontmatter="name: views\ndescription: View a repository\n",
                title="Views",
            ),
        )
        MemoryKeyring.reads.clear()
        result = run("capability", "execute", str(cap))
        assert result.code == 0, result.stdout + result.stderr
        assert result.stdout.count("The app") == steps
        return len(MemoryKeyring.reads)

    # preflight, the redactor and the step's client all need it: one read serves them
    assert reads_for(1) == 1
    assert reads_for(6) == 1
    assert {s for s, _ in MemoryKeyring.reads} == {keyring_service(gh.host)}


# ------------------------------------------------- contexts: names, delete, off (issue 20)


def test_show_on_a_fresh_home_prints_the_empty_effective_context(
    cli: Callable[..., Result], home: Path
) -> None:
    shown = cli("context", "show")
    assert shown.code == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "no active context",
        "  (no values; `runtime context set NAME key=value` creates a context)",
    ]
    doc = cli("-o", "json", "context", "show")
    assert doc.code == 0
    check_schema(doc.json(), "context")
    assert doc.json() == {"ok": True, "name": None, "active": False, "values": {}, "sources": {}}

    # config.yaml's values are part of the effective context, marked as such
    write(home / "config.yaml", "github_host: ghe.example.com\n")
    assert cli("context", "show").stdout.splitlines() == [
        "no active context",
        "  github_host: ghe.example.com (config.yaml)",
    ]
    assert cli("context", "set", "work", "organization=acme").code == 0
    assert cli("context", "show").stdout.splitlines() == [
        "work (active)",
        "  github_host: ghe.example.com (config.yaml)",
        "  organization: acme",
    ]
    effective = cli("-o", "json", "context", "show").json()
    assert effective["values"] == {"github_host": "ghe.example.com", "organization": "acme"}
    assert effective["sources"] == {"github_host": "config.yaml", "organization": "context 'work'"}


@pytest.mark.parametrize("name", ["", " ", "a b", "x\n", "café"])
def test_an_empty_or_invalid_context_name_is_refused(
    cli: Callable[..., Result], home: Path, name: str
) -> None:
    assert cli("context", "set", "work", "organization=acme").code == 0
    before = (home / "contexts.json").read_bytes()
    for args in (
        ("context", "set", name, "organization=x"),
        ("context", "use", name),
        ("context", "show", name),
        ("context", "delete", name),
    ):
        result = cli(*args)
        assert result.code == 2, (args, result.stdout, result.stderr)
        assert f"error: {name!r} is not a valid context name" in result.stderr, result.stderr
        assert "hint: letters, digits, '.', '_' and '-'" in result.stderr
    assert (home / "contexts.json").read_bytes() == before


def test_delete_a_context_and_turn_the_active_one_off(
    cli: Callable[..., Result], home: Path
) -> None:
    assert cli("context", "set", "work", "organization=acme").code == 0
    assert cli("context", "set", "personal", "organization=me").code == 0

    off = cli("context", "use", "--none")
    assert off.code == 0, off.stderr
    assert off.stdout == "no context is active now\n"
    assert cli("context", "show").stdout.splitlines()[0] == "no active context"
    assert cli("-o", "json", "context", "list").json()["active"] is None
    # with contexts but none active, a set without NAME does not guess which one
    unnamed = cli("context", "set", "organization=x")
    assert unnamed.code == 2
    assert "error: no active context to set values in" in unnamed.stderr
    # and naming one does not make it active again behind the user's back
    assert cli("context", "set", "personal", "organization=you").code == 0
    assert cli("-o", "json", "context", "list").json()["active"] is None

    assert cli("context", "use", "work").code == 0
    deleted = cli("context", "delete", "personal")
    assert deleted.code == 0, deleted.stderr
    assert deleted.stdout == "deleted context 'personal'\n"
    active = cli("context", "delete", "work")
    assert active.code == 0
    assert active.stdout == (
        "deleted context 'work'; it was the active context, so no context is active now\n"
    )
    listed = cli("-o", "json", "context", "list").json()
    assert listed == {"ok": True, "active": None, "contexts": []}

    missing = cli("context", "delete", "work")
    assert missing.code == 2
    assert "error: no context named 'work'" in missing.stderr

    doc = cli("-o", "json", "context", "use", "--none")
    check_schema(doc.json(), "context")
    assert doc.json() == {"ok": True, "active": None}
    assert cli("context", "set", "again", "organization=z").code == 0
    doc = cli("-o", "json", "context", "delete", "again")
    check_schema(doc.json(), "context")
    assert doc.json() == {"ok": True, "deleted": "again", "active": None}

    both = cli("context", "use", "work", "--none")
    assert both.code == 2
    assert "error: name a context or give --none, not both" in both.stderr
    neither = cli("context", "use")
    assert neither.code == 2
    assert "error: name the context to use, or give --none" in neither.stderr
    # every write left a whole file behind, and no temporary
    assert [p.name for p in home.iterdir() if "contexts" in p.name] == ["contexts.json"]


# --------------------------------------------------- auth without a keyring or a network


def test_logout_without_a_keyring_says_nothing_is_stored(cli_proc: Callable[..., Result]) -> None:
    no_keyring = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    result = cli_proc("auth", "logout", "github", extra_env=no_keyring)
    assert result.code == 0, result.stderr
    assert result.stdout == (
        "no github.com token is stored: no keyring backend is available on this machine "
        "(common on headless servers)\n"
    )
    assert result.stderr == ""

    with_env = cli_proc(
        "auth", "logout", "github", extra_env={**no_keyring, "RUNTIME_GITHUB_TOKEN": TOKEN}
    )
    assert with_env.code == 0, with_env.stderr
    assert with_env.stderr == (
        "note: RUNTIME_GITHUB_TOKEN is still set in this environment and is used; "
        "`unset RUNTIME_GITHUB_TOKEN` to stop using it\n"
    )
    assert TOKEN not in with_env.stdout + with_env.stderr

    doc = cli_proc("-o", "json", "auth", "logout", "github", extra_env=no_keyring)
    assert doc.code == 0
    assert doc.json() == {"ok": True, "host": "github.com", "removed": False}


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_host_is_not_a_rejected_token(
    run: Callable[..., Result], store: dict[tuple[str, str], str]
) -> None:
    port = _closed_port()
    down = {"GITHUB_API_URL": f"http://127.0.0.1:{port}"}
    login = run("auth", "login", "github", stdin=TOKEN, extra_env=down)
    assert login.code == 1, login.stdout + login.stderr
    assert "not accepted" not in login.stderr
    assert "error: cannot check the token with 127.0.0.1" in login.stderr
    assert "cannot reach 127.0.0.1" in login.stderr
    assert "nothing was stored" in login.stderr
    assert "hint: check the host, the network" in login.stderr
    assert store == {}

    status = run(
        "auth",
        "status",
        "--live",
        "--host",
        f"127.0.0.1:{port}",
        extra_env={**down, "RUNTIME_GITHUB_TOKEN": TOKEN},
    )
    assert status.code == 1, status.stdout + status.stderr
    assert "NOT valid" not in status.stdout
    assert (
        f"; cannot check the token with 127.0.0.1:{port}: cannot reach 127.0.0.1" in status.stdout
    )
