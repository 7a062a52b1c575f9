"""Tokens that cannot be tokens (issue 18 A), through the real entry point.

A token is stripped of surrounding whitespace wherever it is read (the
environment, the keyring, ``auth login``'s stdin or prompt), as gh does. What
is left must be printable ASCII: a control character or a non-ASCII character
is refused with exit 4 (error code ``invalid-credential``), naming where the
value came from and never showing it. ``auth login`` stores nothing (exit 4,
like its other refusals). No request carries such a value.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import RUNTIME_BIN, Result, capability, check_schema, keyring_service, write
from tests.github_double import GitHubDouble
from tests.memory_keyring import SELECTOR, use_memory_keyring

GOOD = "rt-good-token-5c1e9a77d3"
# Each bad token is two long, recognisable pieces around the offending character.
HEAD, TAIL = "tokHEAD-Zq8SECRETalpha", "omegaPIECE-77Hk-SECRET"
BAD = {
    "newline inside": f"{HEAD}\n{TAIL}",
    "control character": f"{HEAD}\x01{TAIL}",
    "escape sequence": f"{HEAD}\x1b[2J{TAIL}",
    "non-ASCII": f"{HEAD}É{TAIL}",
    "non-breaking space": f"{HEAD}\u00a0{TAIL}",
}
CONTROL = "contains a control character"
NON_ASCII = "contains a non-ASCII character"


def expected_problem(token: str) -> str:
    return NON_ASCII if any(ord(c) > 0x7E for c in token) else CONTROL


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=GOOD, tls=False) as double:
        yield double


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], str]:
    return use_memory_keyring(monkeypatch)


@pytest.fixture
def run(
    cli: Callable[..., Result],
    gh: GitHubDouble,
    store: dict[tuple[str, str], str],
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., Result]:
    """``cli`` pointed at the double and the memory keyring, with every output checked."""

    def call(
        *args: str, stdin: str | io.StringIO = "", env: dict[str, str] | None = None
    ) -> Result:
        monkeypatch.setattr(
            sys, "stdin", stdin if isinstance(stdin, io.StringIO) else io.StringIO(stdin)
        )
        extra = {
            "PYTHON_KEYRING_BACKEND": SELECTOR,
            "GITHUB_API_URL": gh.api_url,
            "GITHUB_GRAPHQL_URL": gh.graphql_url,
            **(env or {}),
        }
        result = cli(*args, extra_env=extra)
        assert_no_piece(result.stdout + result.stderr, "output")
        audit = home / "audit" / "audit.jsonl"
        if audit.exists():
            assert_no_piece(audit.read_text(encoding="utf-8"), "the audit log")
        return result

    return call


def assert_no_piece(text: str, where: str) -> None:
    for piece in (HEAD, TAIL, "Zq8SECRET", "omegaPIECE", json.dumps(HEAD)[1:-1]):
        assert piece not in text, f"a piece of the token is in {where}: {text[-800:]}"


def assert_never_sent(gh: GitHubDouble) -> None:
    for request in gh.requests:
        header = request.headers.get("authorization", "")
        assert HEAD not in header and TAIL not in header, header
    assert gh.requests == [], [r.path for r in gh.requests]


def _capability(work: Path) -> str:
    write(
        work / "me.md",
        capability("version: v1\nworkflow:\n  - provider: github\n    args: [user, get]\n"),
    )
    return "me.md"


# -- the environment variable --------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_token_in_the_environment_is_refused_and_never_sent(
    run: Callable[..., Result], gh: GitHubDouble, work: Path, kind: str
) -> None:
    token = BAD[kind]
    env = {"RUNTIME_GITHUB_TOKEN": token}
    step = run("github", "user", "get", env=env)
    assert step.code == 4, step.stdout + step.stderr
    assert f"the token from RUNTIME_GITHUB_TOKEN {expected_problem(token)}" in step.stderr
    assert "set RUNTIME_GITHUB_TOKEN to the token alone" in step.stderr

    cap = _capability(work)
    assert run("capability", "plan", cap, env=env).code == 0  # the plan sends nothing
    executed = run("capability", "execute", cap, env=env)
    assert executed.code == 4
    assert "RUNTIME_GITHUB_TOKEN" in executed.stderr
    assert "set RUNTIME_GITHUB_TOKEN to the token alone" in executed.stderr

    doc = run("-o", "json", "capability", "execute", cap, env=env)
    assert doc.code == 4
    check_schema(doc.json(), "error")

    status = run("-o", "json", "auth", "status", "github", "--host", gh.host, env=env)
    assert status.code == 4
    (row,) = status.json()["hosts"]
    assert row["source"] is None and row["valid"] is False
    assert row["error"].startswith("the token from RUNTIME_GITHUB_TOKEN")
    check_schema(status.json(), "auth-status")
    assert_never_sent(gh)


def test_surrounding_whitespace_is_stripped_from_the_environment(
    run: Callable[..., Result], gh: GitHubDouble
) -> None:
    result = run("github", "user", "get", env={"RUNTIME_GITHUB_TOKEN": f"  {GOOD}\r\n"})
    assert result.code == 0, result.stdout + result.stderr
    assert [r.headers["authorization"] for r in gh.requests] == [f"Bearer {GOOD}"]


# -- the keyring ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["control character", "non-ASCII"])
def test_a_bad_token_in_the_keyring_is_refused_naming_the_entry(
    run: Callable[..., Result],
    gh: GitHubDouble,
    store: dict[tuple[str, str], str],
    kind: str,
) -> None:
    store[(keyring_service(gh.host), "token")] = BAD[kind]
    result = run("github", "user", "get")
    assert result.code == 4, result.stdout + result.stderr
    assert (
        f"the token from the keyring entry runtime:github:{gh.host} (user token) "
        f"{expected_problem(BAD[kind])}" in result.stderr
    )
    assert f"runtime auth login github --host {gh.host}" in result.stderr
    status = run("auth", "status", "github", "--host", gh.host)
    assert status.code == 4
    assert status.stdout.startswith(f"{gh.host}: no credential; NOT valid: the token from")
    assert_never_sent(gh)


def test_surrounding_whitespace_is_stripped_from_the_keyring(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    store[(keyring_service(gh.host), "token")] = f"{GOOD}\n"
    result = run("github", "user", "get")
    assert result.code == 0, result.stdout + result.stderr
    assert [r.headers["authorization"] for r in gh.requests] == [f"Bearer {GOOD}"]


# -- auth login ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BAD))
def test_login_refuses_to_store_a_bad_token_from_stdin(
    run: Callable[..., Result],
    gh: GitHubDouble,
    store: dict[tuple[str, str], str],
    kind: str,
) -> None:
    result = run("auth", "login", "github", "--host", gh.host, stdin=f" {BAD[kind]}\n")
    assert result.code == 4, result.stdout + result.stderr
    assert f"error: the token from stdin {expected_problem(BAD[kind])}" in result.stderr
    assert "nothing was stored" in result.stderr
    doc = run("-o", "json", "auth", "login", "github", "--host", gh.host, stdin=BAD[kind])
    assert doc.code == 4
    check_schema(doc.json(), "error")
    assert doc.json()["error"]["code"] == "invalid-credential"
    assert store == {}
    assert_never_sent(gh)


def test_login_refuses_a_bad_token_from_the_prompt(
    run: Callable[..., Result],
    gh: GitHubDouble,
    store: dict[tuple[str, str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    import getpass

    monkeypatch.setattr(getpass, "getpass", lambda prompt="": BAD["control character"])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    result = run("auth", "login", "github", "--host", gh.host, stdin=Terminal(""))
    assert result.code == 4, result.stdout + result.stderr
    assert f"the token from the prompt {CONTROL}" in result.stderr
    assert store == {}
    assert_never_sent(gh)


def test_login_verifying_a_bad_environment_variable_is_refused(
    run: Callable[..., Result], gh: GitHubDouble, store: dict[tuple[str, str], str]
) -> None:
    result = run(
        "auth", "login", "github", "--host", gh.host, env={"RUNTIME_GITHUB_TOKEN": BAD["non-ASCII"]}
    )
    assert result.code == 4, result.stdout + result.stderr
    assert f"the token from RUNTIME_GITHUB_TOKEN {NON_ASCII}" in result.stderr
    assert store == {}
    assert_never_sent(gh)


def test_login_with_stdin_that_is_not_utf8_is_refused(
    env: dict[str, str], work: Path, gh: GitHubDouble
) -> None:
    """A child process: sys.stdin decodes the bytes itself."""
    proc = subprocess.run(
        [str(RUNTIME_BIN), "auth", "login", "github", "--host", gh.host],
        input=HEAD.encode() + b"\xff\xfe" + TAIL.encode(),
        env={
            **env,
            "PYTHON_KEYRING_BACKEND": SELECTOR,
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
            "GITHUB_API_URL": gh.api_url,
        },
        cwd=work,
        capture_output=True,
        timeout=60,
    )
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 4, text
    assert "the token" in text and "stdin" in text and "nothing was stored" in text
    assert_no_piece(text, "output")
    assert_never_sent(gh)
