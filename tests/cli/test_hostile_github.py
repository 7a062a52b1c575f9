"""The github provider and gh under hostile inputs, through the real CLI and the real gh.

Each test is an attack that worked before: gh's jq reading the token, the token sent to a
host an input chose, a DELETE placed after an option to get past the policy, a mutation
called a read (or a deleting one a write), gigabytes of substituted args. Each now ends in
a refusal before anything runs (nothing reaches the GitHub double) or, for the audit log,
in a bounded record.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import RUNTIME_BIN, Result, capability, require_tool, write
from tests.github_double import GitHubDouble, SchemaNotInstalledError, load_schema
from tests.github_double.peak_rss import run_measured

TOKEN = "rt-hostile-token-" + "9" * 20  # not ghp_-shaped: only registration redacts it


@pytest.fixture
def double() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as gh:
        gh.add_org("acme")
        gh.add_repo("acme", "app")
        yield gh


def one_input(step: str, name: str = "v") -> str:
    return f"version: v1\ninputs:\n  {name}:\n    required: true\nworkflow:\n  - {step}\n"


def leaks(result: Result, home: Path, *secrets: str) -> list[str]:
    audit = home / "audit" / "audit.jsonl"
    seen = result.stdout + result.stderr + (audit.read_text() if audit.exists() else "")
    found = []
    for secret in secrets:
        forms = {secret, base64.b64encode(secret.encode()).decode()[:16]}
        forms.add(",".join(str(ord(c)) for c in secret[:6]))
        found += [f for f in forms if f in seen]
    return found


# -- 1. gh's jq never reads the token ------------------------------------------------------


@pytest.mark.parametrize(
    "step",
    [
        'provider: github\n    args: [pr, list, --repo, acme/app, --json, number, --jq, "${v}"]',
        'provider: github\n    args: [pr, list, --repo, acme/app, --json, number, "--jq=${v}"]',
        'binary: gh\n    args: [api, user, --jq, "${v}"]',
        'binary: gh\n    args: [api, user, -q, "${v}"]',
    ],
)
def test_a_jq_filter_from_an_input_is_refused(
    cli: Callable[..., Result], work: Path, home: Path, double: GitHubDouble, step: str
) -> None:
    write(work / "cap.md", capability(one_input(step)))
    for value in ("env.GH_ENTERPRISE_TOKEN|@base64", "env.GH_TOKEN|explode", ".[0]"):
        result = cli(
            "capability",
            "execute",
            "cap.md",
            "--input",
            f"v={value}",
            extra_env=double.runtime_env(),
        )
        assert result.code == 3, result.stdout + result.stderr
        # refused for the input (and, for env, also for what the filter reads)
        assert ("literal_options: gh" in result.stderr and "input 'v'" in result.stderr) or (
            "env" in value and "gh's jq never reads the environment" in result.stderr
        )
        assert not double.requests
        assert not leaks(result, home, TOKEN)


@pytest.mark.parametrize(
    "args",
    [
        "[api, user, --jq, 'env.GH_TOKEN|@base64']",
        "[api, user, -q, '$ENV.GH_ENTERPRISE_TOKEN']",
        "[api, user, '--jq=[env[]]|tostring|explode']",
    ],
)
def test_a_written_jq_filter_that_reads_the_environment_is_refused(
    cli: Callable[..., Result], work: Path, double: GitHubDouble, args: str
) -> None:
    write(
        work / "cap.md", capability(f"version: v1\nworkflow:\n  - binary: gh\n    args: {args}\n")
    )
    result = cli("capability", "execute", "cap.md", extra_env=double.runtime_env())
    assert result.code == 3, result.stdout + result.stderr
    assert "gh's jq never reads the environment" in result.stderr


# -- 2. the token never goes to a host an input chooses ------------------------------------


@pytest.fixture
def tls_double() -> Iterator[GitHubDouble]:
    require_tool("gh", "the gh CLI transport runs the real gh")
    require_tool("openssl", "GitHubDouble(tls=True) makes its throwaway CA with openssl")
    try:
        load_schema()
    except SchemaNotInstalledError as exc:
        pytest.skip(str(exc))
    with GitHubDouble(token=TOKEN, tls=True) as gh:
        gh.add_org("acme")
        gh.add_repo("acme", "app")
        gh.add_pull("acme", "app", "A change", head="change")
        yield gh


@pytest.mark.parametrize(
    ("step", "value"),
    [
        ('provider: github\n    args: [pr, list, --repo, "${v}"]', "{host}/acme/app"),
        ('provider: github\n    args: [pr, list, -R, "${v}"]', "https://{host}/acme/app"),
        ('binary: gh\n    args: [pr, list, --repo, "${v}"]', "{host}/acme/app"),
        ('binary: gh\n    args: [api, "${v}"]', "https://{host}/steal"),
    ],
)
def test_the_token_never_goes_to_a_host_an_input_names(
    cli_proc: Callable[..., Result],
    home: Path,
    tls_double: GitHubDouble,
    tmp_path: Path,
    step: str,
    value: str,
) -> None:
    """The run's host is ghe.example.com (a context); the input names the double's host, which
    gh would have sent GH_ENTERPRISE_TOKEN to. Refused; the double sees nothing."""
    env = {"SSL_CERT_FILE": tls_double.ca_file, "RUNTIME_GITHUB_TOKEN": TOKEN}
    made = cli_proc("context", "set", "work", "github_host=ghe.example.com", extra_env=env)
    assert made.code == 0, made.stderr
    write(tmp_path / "work" / "cap.md", capability(one_input(step)))
    host = f"localhost:{tls_double.port}"
    result = cli_proc(
        "capability", "execute", "cap.md", "--input", "v=" + value.format(host=host), extra_env=env
    )
    assert result.code == 3, result.stdout + result.stderr
    assert "gh is pinned to its host" in result.stderr and host in result.stderr
    assert not tls_double.requests
    assert not leaks(result, home, TOKEN)


def test_gh_gets_the_enterprise_token_only_for_an_enterprise_host(
    cli_proc: Callable[..., Result], tls_double: GitHubDouble, home: Path, tmp_path: Path
) -> None:
    """The pinned host itself works, and GH_TOKEN (github.com's) is never set for it."""
    env = {"SSL_CERT_FILE": tls_double.ca_file, "RUNTIME_GITHUB_TOKEN": TOKEN}
    host = f"localhost:{tls_double.port}"
    assert cli_proc("context", "set", "work", f"github_host={host}", extra_env=env).code == 0
    result = cli_proc(
        "-o",
        "json",
        "github",
        "pr",
        "list",
        "--repo",
        f"{host}/acme/app",
        "--json",
        "title",
        extra_env=env,
    )
    assert result.code == 0, result.stdout + result.stderr
    assert result.json()["steps"][0]["data"] == [{"title": "A change"}]
    for request in tls_double.requests:
        assert request.headers.get("authorization", "").endswith(TOKEN)


# -- 4. the policy decides on the bound call ----------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        "[api, x=1, DELETE, /repos/acme/app]",
        "[api, DELETE, /repos/acme/app, x=1]",
        "[api, delete, /repos/acme/app]",
    ],
)
def test_a_delete_never_gets_past_the_policy(
    cli: Callable[..., Result], work: Path, double: GitHubDouble, args: str
) -> None:
    write(
        work / "cap.md",
        capability(f"version: v1\nworkflow:\n  - provider: github\n    args: {args}\n"),
    )
    result = cli("capability", "execute", "cap.md", extra_env=double.runtime_env())
    assert result.code in (2, 3), result.stdout + result.stderr
    assert "nothing ran" in result.stderr
    assert not double.requests
    if "x=1, DELETE" in args:  # the method and route come first, where the reviewer reads them
        assert result.code == 2 and "write METHOD and PATH first" in result.stderr
    else:
        assert "effect destroy (allowed_destructive)" in result.stderr


# -- 5. a mutation is a write or a destroy, whatever precedes it ---------------------------


@pytest.mark.parametrize(
    ("document", "effect"),
    [
        ("# just a comment\nmutation { addStar(input: {}) { clientMutationId } }", "write"),
        ("\n\n  mutation M { x }", "destroy"),  # x is no mutation GitHub publishes
        ("query A { viewer { login } }\nmutation B { x }", "destroy"),
        ("# query\nmutation { deleteIssue(input: {}) { clientMutationId } }", "destroy"),
        ("subscription { x }", "write"),
        ("{ viewer { login } }", "read"),
        ("# mutation in a comment\nquery { viewer { login } }", "read"),
    ],
)
def test_a_graphql_document_is_parsed_for_its_effect(
    cli: Callable[..., Result], work: Path, document: str, effect: str
) -> None:
    block = "".join(f"        {line}\n" for line in document.splitlines())
    body = f"version: v1\nworkflow:\n  - provider: github\n    args:\n      - graphql\n      - |\n{block}"
    write(work / "cap.md", capability(body))
    plan = cli("--output", "json", "capability", "plan", "cap.md")
    assert plan.code == (3 if effect == "destroy" else 0), plan.stdout + plan.stderr
    assert plan.json()["steps"][0]["effect"] == effect


# -- 8. memory: substituted args and the audit log are bounded ------------------------------


def test_thousands_of_references_to_a_large_input_are_refused_before_planning(
    work: Path, home: Path, env: dict[str, str], tmp_path: Path
) -> None:
    refs = ", ".join(['"${a}"'] * 2000)
    body = f"version: v1\ninputs:\n  a:\n    required: true\nworkflow:\n  - binary: echo\n    args: [{refs}]\n"
    write(work / "cap.md", capability(body))
    big = tmp_path / "big.txt"
    big.write_text("x" * (1024 * 1024 - 1))
    measured = run_measured(
        [str(RUNTIME_BIN), "capability", "execute", "cap.md", "--input", f"a=@{big}"],
        cwd=work,
        env=env,
        cap_mib=1024,
    )
    assert measured.code == 2, measured.stdout + measured.stderr
    assert "over the limit of 33,554,432 per step" in measured.stderr
    assert measured.peak_mib < 200  # the input is 1 MiB; 2,000 copies of it are never built
    audit = home / "audit" / "audit.jsonl"
    assert not audit.exists() or audit.stat().st_size < 64 * 1024


def test_a_large_input_is_recorded_once_as_its_digest(
    cli: Callable[..., Result], work: Path, home: Path, tmp_path: Path
) -> None:
    body = (
        "version: v1\ninputs:\n  a:\n    required: true\nworkflow:\n"
        '  - provider: files\n    args: [write, one.txt, "${a}"]\n'
        '  - provider: files\n    args: [write, two.txt, "${a}"]\n'
    )
    write(work / "cap.md", capability(body))
    big = tmp_path / "big.txt"
    big.write_text("y" * (1024 * 1024))
    audit = home / "audit" / "audit.jsonl"
    result = cli("capability", "execute", "cap.md", "--input", f"a=@{big}")
    assert result.code == 0, result.stdout + result.stderr
    assert audit.stat().st_size < 32 * 1024  # the 1 MiB value is in no record in full
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    start = next(r for r in records if r["event"] == "run.start")
    digest = start["inputs"]["a"]
    import hashlib

    assert digest["size"] == 1024 * 1024
    assert digest["sha256"] == hashlib.sha256(b"y" * (1024 * 1024)).hexdigest()
    assert digest["head"] == "y" * 200
    step = next(r for r in records if r["event"] == "step")
    assert step["args"][2]["sha256"] == digest["sha256"]
    assert (work / "one.txt").stat().st_size == 1024 * 1024 + 1  # and its final newline
    assert os.path.getsize(work / "two.txt") == 1024 * 1024 + 1
