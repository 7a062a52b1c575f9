"""contexts.json: host values of the right form, and a malformed file (issue 18 C, D).

A ``github_host`` is ``name[:port]``: a DNS name, an IPv4 address or an IPv6
address in brackets, port 1-65535. ``runtime context set`` refuses anything
else (exit 2); a hand-edited file holding such a value is refused when the
context is used (exit 2, naming the file), while ``context list`` / ``show``
still show it and ``context set`` repairs it. A file that is not JSON, or not
of the expected shape, is exit 2 naming the file (line and column for JSON
syntax) and how to repair it, for every command that reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Result, capability, check_schema, write
from tests.github_double import GitHubDouble

TOKEN = "rt-context-token-81d0c2f9aa"
FORM = "github_host must be a host name with an optional port (ghe.example.com or ghe.example.com:8443)"

BAD_HOSTS = [
    "github.com@localhost:18443",
    "https://x",
    "http://ghe.example.com",
    "ghe.example.com/api/v3",
    "ghe.example.com?x=1",
    "user:pw@ghe.example.com",
    "ghe.example.com:0",
    "ghe.example.com:65536",
    "ghe.example.com:08443",
    "ghe.example.com:84a",
    "ghe.example.com:",
    ":8443",
    "::1",
    "[::1",
    "[::1]x",
    "[fe80::1%eth0]",
    "[ghe.example.com]",
    "ghe example.com",
    "ghe..example.com",
    "ghe.example.com.",
    "-ghe.example.com",
    "ghe_example.com",
    "999.1.1.1",
    "ghe.example.com\n",
    "ghé.example.com",
    "a" * 64 + ".example.com",
]
GOOD_HOSTS = [
    "ghe.example.com",
    "GHE.Example.com:8443",
    "localhost",
    "127.0.0.1:18443",
    "[::1]:8443",
    "[2001:db8::1]",
    "xn--bcher-kva.example",
    "a-b.c-d.example:65535",
]


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN, tls=False) as double:
        yield double


@pytest.fixture
def run(cli: Callable[..., Result], gh: GitHubDouble) -> Callable[..., Result]:
    def call(*args: str) -> Result:
        result = cli(*args, extra_env=gh.runtime_env())
        assert "internal error" not in result.stdout + result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        return result

    return call


def contexts_file(home: Path) -> Path:
    return home / "contexts.json"


def _github_capability(work: Path) -> str:
    write(
        work / "me.md",
        capability("version: v1\nworkflow:\n  - provider: github\n    args: [user, get]\n"),
    )
    return "me.md"


# -- C: the form of a host -----------------------------------------------------------------


@pytest.mark.parametrize("value", BAD_HOSTS)
def test_context_set_refuses_a_host_that_is_not_name_and_port(
    run: Callable[..., Result], home: Path, value: str
) -> None:
    assert run("context", "set", "work", "organization=acme").code == 0
    before = contexts_file(home).read_text()
    result = run("context", "set", "work", f"github_host={value}")
    assert result.code == 2, result.stdout + result.stderr
    assert f"error: {FORM}, not {value!r}" in result.stderr
    assert result.stdout == ""
    assert contexts_file(home).read_text() == before


def test_context_set_refuses_a_value_that_is_not_utf8(
    cli_proc: Callable[..., Result], home: Path
) -> None:
    # `organization=$'ac\xffme'`: stored, it became a lone surrogate escape in
    # contexts.json, which a strict JSON reader refuses whole
    assert cli_proc("context", "set", "work", "organization=acme").code == 0
    before = contexts_file(home).read_text()
    result = cli_proc("context", "set", "work", "organization=ac\udcffme")
    assert result.code == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        "error: the value of 'organization' is not UTF-8 text (byte 0xff at character 3)",
        "  hint: a context holds text: convert the value (iconv -t UTF-8)",
    ]
    assert contexts_file(home).read_text() == before


def test_the_refusal_in_json(run: Callable[..., Result]) -> None:
    result = run("-o", "json", "context", "set", "work", "github_host=https://x")
    assert result.code == 2
    doc = result.json()
    check_schema(doc, "error")
    assert doc["error"]["message"].startswith(f"{FORM}, not 'https://x' (it is a URL")


@pytest.mark.parametrize("value", GOOD_HOSTS)
def test_context_set_accepts_name_and_port(
    run: Callable[..., Result], home: Path, value: str
) -> None:
    result = run("context", "set", "work", f"github_host={value}")
    assert result.code == 0, result.stderr
    assert json.loads(contexts_file(home).read_text())["contexts"]["work"] == {"github_host": value}
    assert run("context", "show").code == 0


def test_a_hand_edited_host_is_refused_when_used_and_can_be_repaired(
    run: Callable[..., Result], home: Path, work: Path, gh: GitHubDouble
) -> None:
    assert run("context", "list").code == 0  # Home exists
    path = contexts_file(home)
    path.write_text(
        json.dumps(
            {
                "active": "work",
                "contexts": {"work": {"github_host": "https://x", "organization": "acme"}},
            }
        )
    )
    message = f"{path}: context 'work': {FORM}, not 'https://x'"
    cap = _github_capability(work)
    for command in (
        ("github", "user", "get"),
        ("capability", "execute", cap),
        ("capability", "plan", cap),
        ("auth", "status"),
        ("auth", "logout", "github"),
    ):
        result = run(*command)
        assert result.code == 2, (command, result.stdout, result.stderr)
        assert message in result.stderr + result.stdout, (command, result.stderr)
        assert "runtime context set work github_host=HOST" in result.stderr + result.stdout
    assert gh.requests == []
    doctor = run("doctor")
    assert doctor.code == 5 and f"ERROR   contexts: {message}" in doctor.stdout

    # shown as stored, so that it can be found
    listed = run("context", "list")
    assert listed.code == 0
    assert listed.stdout == "* work  github_host=https://x organization=acme\n"
    assert run("context", "show", "work").code == 0

    # repaired with the command the hint names; the other value is kept
    fixed = run("context", "set", "work", f"github_host={gh.host}")
    assert fixed.code == 0, fixed.stderr
    step = run("github", "user", "get")
    assert step.code == 0, step.stdout + step.stderr
    assert json.loads(path.read_text())["contexts"]["work"]["organization"] == "acme"
    assert "OK      contexts: 1 context (active: work)" in run("doctor").stdout


def test_another_context_with_a_bad_host_does_not_block_the_active_one(
    run: Callable[..., Result], home: Path, gh: GitHubDouble
) -> None:
    assert run("context", "list").code == 0
    contexts_file(home).write_text(
        json.dumps(
            {
                "active": "good",
                "contexts": {"good": {"github_host": gh.host}, "bad": {"github_host": "a/b"}},
            }
        )
    )
    assert run("github", "user", "get").code == 0
    used = run("context", "use", "bad")
    assert used.code == 0  # choosing it is not using it
    result = run("github", "user", "get")
    assert result.code == 2
    assert "context 'bad': github_host must be" in result.stderr + result.stdout


# -- D: a malformed file -------------------------------------------------------------------

MALFORMED = {
    "syntax": (b'{"contexts": {\n  "work": {"organization": "acme",}\n}}', ":2:"),
    "truncated": (b'{"contexts": {', ":1:15: not valid JSON"),
    "empty": (b"", ":1:1: not valid JSON: Expecting value"),
    "not utf-8": (b'{"contexts": {"w\xff": {}}}', ":1:17: not UTF-8 text"),
    "an array": (b"[]", ": expected a JSON object, found an array"),
    "contexts an array": (b'{"contexts": []}', ': "contexts" must be an object, not an array'),
    "active a number": (b'{"active": 5, "contexts": {}}', ': "active" must be a context name'),
    "a context a number": (
        b'{"active": "a", "contexts": {"a": 1}}',
        ': context "a" must be an object of keys, not 1',
    ),
    "a value a number": (
        b'{"active": "a", "contexts": {"a": {"github_host": 5}}}',
        ': context "a": "github_host" must be a string, not 5',
    ),
    "an unknown key": (
        b'{"contexts": {"a": {"githubhost": "x"}}}',
        ': context "a" has an unknown key "githubhost"',
    ),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_contexts_file_is_exit_2_naming_the_file_and_the_repair(
    run: Callable[..., Result], home: Path, work: Path, kind: str
) -> None:
    assert run("context", "list").code == 0
    data, problem = MALFORMED[kind]
    path = contexts_file(home)
    path.write_bytes(data)
    cap = _github_capability(work)
    for command in (
        ("context", "list"),
        ("context", "show"),
        ("context", "use", "a"),
        ("context", "set", "work", "organization=acme"),
        ("github", "user", "get"),
        ("capability", "plan", cap),
        ("capability", "execute", cap),
        ("auth", "status"),
        ("auth", "logout", "github"),
    ):
        result = run(*command)
        assert result.code == 2, (command, result.stdout, result.stderr)
        text = result.stderr + result.stdout
        assert f"{path}{problem}" in text, (command, text)
        assert f"mv {path} {path}.broken" in text, (command, text)
        assert "runtime context set NAME key=value" in text
    assert path.read_bytes() == data  # never rewritten behind the user's back

    # doctor, asked what to fix, names it too, instead of calling the installation healthy
    doctor = run("doctor")
    assert doctor.code == 5, doctor.stdout
    assert f"ERROR   contexts: {path}{problem}" in doctor.stdout
    assert f"mv {path} {path}.broken" in doctor.stdout
    checks = {c["check"]: c for c in run("-o", "json", "doctor").json()["checks"]}
    assert checks["contexts"]["status"] == "error"

    doc = run("-o", "json", "context", "list")
    assert doc.code == 2
    check_schema(doc.json(), "error")
    assert doc.json()["error"]["code"] == "invalid-contexts"

    # the repair the hint names
    path.rename(path.with_name("contexts.json.broken"))
    assert run("context", "set", "work", "organization=acme").code == 0
    assert run("context", "list").stdout == "* work  organization=acme\n"


def test_a_file_without_contexts_is_an_empty_store(run: Callable[..., Result], home: Path) -> None:
    assert run("context", "list").code == 0
    contexts_file(home).write_text("{}\n")
    assert run("context", "list").stdout.startswith("no contexts")
    assert run("context", "set", "work", "organization=acme").code == 0


def test_a_context_name_ending_in_a_newline_is_refused(run: Callable[..., Result]) -> None:
    result = run("context", "set", "work\n", "organization=acme")
    assert result.code == 2
    assert "is not a valid context name" in result.stderr
