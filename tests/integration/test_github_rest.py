"""The github provider's REST and GraphQL operations against the loopback GitHub double.

Everything goes through the real CLI entry point with GITHUB_API_URL and
GITHUB_GRAPHQL_URL pointing at the double (plain http is allowed on loopback).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, capability, check_schema, write
from tests.github_double import GitHubDouble

TOKEN = "ghp_" + "T0k3n" * 7 + "x"


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")
        double.add_repo("acme", "payments-api", description="Payments", language="Python")
        yield double


@pytest.fixture
def genv(gh: GitHubDouble) -> dict[str, str]:
    return {**gh.runtime_env(), "RUNTIME_GITHUB_MAX_WAIT": "3"}


def run(cli: Any, genv: dict[str, str], *args: str, extra: dict[str, str] | None = None) -> Any:
    result = cli("--output", "json", "github", *args, extra_env={**genv, **(extra or {})})
    assert TOKEN not in result.stdout + result.stderr
    doc = result.json()
    if "steps" in doc:
        check_schema(doc, "execute")
    return result.code, doc


def paths(gh: GitHubDouble) -> list[str]:
    return [f"{r.method} {r.path}" for r in gh.requests]


def test_user_org_team_notification_lists(cli, gh: GitHubDouble, genv) -> None:
    gh.add_team("acme", "platform")
    gh.add_notification("acme", "payments-api", "Review requested")
    code, doc = run(cli, genv, "user", "get")
    assert code == 0 and doc["steps"][0]["data"]["login"] == "octocat"
    code, doc = run(cli, genv, "org", "list")
    assert [o["login"] for o in doc["steps"][0]["data"]] == ["acme"]
    code, doc = run(cli, genv, "team", "list", "acme")
    assert [t["slug"] for t in doc["steps"][0]["data"]] == ["platform"]
    code, doc = run(cli, genv, "notification", "list", "all=true")
    assert code == 0 and len(doc["steps"][0]["data"]) == 1
    assert any(p.startswith("GET /notifications?") and "all=true" in p for p in paths(gh))


def test_repo_list_follows_pagination_in_exactly_three_requests(
    cli, gh: GitHubDouble, genv
) -> None:
    for i in range(249):
        gh.add_repo("acme", f"r{i:03}")
    gh.reset_counters()
    code, doc = run(cli, genv, "repo", "list", "acme")
    assert code == 0
    assert len(doc["steps"][0]["data"]) == 250
    assert [r.method + " " + r.path.split("?")[0] for r in gh.requests] == [
        "GET /orgs/acme/repos"
    ] * 3
    assert "per_page=100" in gh.requests[0].path
    assert gh.connections == 1
    gh.reset_counters()
    code, doc = run(cli, genv, "repo", "list", "acme", "per_page=10", "limit=25")
    assert len(doc["steps"][0]["data"]) == 25 and len(gh.requests) == 3


def test_repo_list_without_org_is_the_users_own(cli, gh: GitHubDouble, genv) -> None:
    gh.reset_counters()
    code, _ = run(cli, genv, "repo", "list")
    assert code == 0
    assert gh.requests[0].path.startswith("/user/repos")


@pytest.mark.usefixtures("graphql_schema")
def test_repo_view_and_summary_in_one_request(cli, gh: GitHubDouble, genv) -> None:
    gh.add_release("acme", "payments-api", "v1.2.0")
    gh.add_issue("acme", "payments-api", "Bug")
    gh.add_pull("acme", "payments-api", "Fix", head="fix")
    code, doc = run(cli, genv, "repo", "view", "acme/payments-api")
    assert doc["steps"][0]["data"]["full_name"] == "acme/payments-api"
    gh.reset_counters()
    code, doc = run(cli, genv, "repo", "summary", "acme/payments-api")
    assert code == 0
    assert len(gh.requests) == 1
    assert doc["steps"][0]["data"] == {
        "repository": "acme/payments-api",
        "description": "Payments",
        "visibility": "PUBLIC",
        "default_branch": "main",
        "stars": 0,
        "forks": 0,
        "open_issues": 1,
        "open_pull_requests": 1,
        "latest_release": "v1.2.0",
        "language": "Python",
    }


def test_repo_create_types_its_body(cli, gh: GitHubDouble, genv) -> None:
    code, doc = run(
        cli, genv, "repo", "create", "name=demo", "private=true", "description=A demo", "org=acme"
    )
    assert code == 0, doc
    assert doc["steps"][0]["data"]["full_name"] == "acme/demo"
    assert gh.repo("acme", "demo").private is True
    code, doc = run(cli, genv, "repo", "create", "name=mine")
    assert doc["steps"][0]["data"]["full_name"] == "octocat/mine"


def test_issue_list_org_and_own(cli, gh: GitHubDouble, genv) -> None:
    gh.add_issue("acme", "payments-api", "Bug", assignees=["octocat"])
    gh.reset_counters()
    code, _doc = run(cli, genv, "issue", "list", "acme", "state=open")
    assert code == 0 and gh.requests[0].path.startswith("/orgs/acme/issues")
    run(cli, genv, "issue", "list")
    assert gh.requests[-1].path.startswith("/issues")


def test_file_put_creates_then_updates_with_the_current_sha(cli, gh: GitHubDouble, genv) -> None:
    code, doc = run(
        cli,
        genv,
        "file",
        "put",
        "acme/payments-api",
        "docs/README.md",
        "message=Add",
        "content=# Hello\n",
    )
    assert code == 0, doc
    puts = [r for r in gh.requests if r.method == "PUT"]
    assert len(puts) == 1
    state_file = gh.repo("acme", "payments-api").branches["main"]["docs/README.md"]
    assert state_file.content == b"# Hello\n"
    code, doc = run(
        cli,
        genv,
        "file",
        "put",
        "acme/payments-api",
        "docs/README.md",
        "message=Edit",
        "content=v2",
    )
    assert code == 0, doc
    assert gh.repo("acme", "payments-api").branches["main"]["docs/README.md"].content == b"v2"
    assert "updated docs/README.md" in doc["steps"][0]["output"]


def test_api_query_params_typed_body_and_kept_query(cli, gh: GitHubDouble, genv) -> None:
    gh.reset_counters()
    code, doc = run(cli, genv, "api", "GET", "/orgs/acme/repos?type=all", "per_page=5")
    assert code == 0
    assert gh.requests[0].path.startswith("/orgs/acme/repos?")
    assert "type=all" in gh.requests[0].path and "per_page=5" in gh.requests[0].path
    code, doc = run(
        cli,
        genv,
        "api",
        "POST",
        "/repos/acme/payments-api/issues",
        "title=Typed",
        "labels[]=bug",
        "labels[]=p1",
        "body=100",
    )
    assert code == 0, doc
    issue = doc["steps"][0]["data"]
    assert issue["title"] == "Typed"
    assert [label["name"] for label in issue["labels"]] == ["bug", "p1"]
    assert issue["body"] == 100 or issue["body"] == "100"


def test_build_body_types_values() -> None:
    from providers.github.arguments import build_body

    assert build_body(
        [
            ("a", "true"),
            ("b", "false"),
            ("c", "null"),
            ("d", "42"),
            ("e", "-3"),
            ("f", "007"),
            ("g[]", "x"),
            ("g[]", "y"),
            ("h[i]", "1"),
            ("h[j][k]", "text"),
        ]
    ) == {
        "a": True,
        "b": False,
        "c": None,
        "d": 42,
        "e": -3,
        "f": "007",
        "g": ["x", "y"],
        "h": {"i": 1, "j": {"k": "text"}},
    }


def test_api_delete_is_denied_by_default_policy(cli, gh: GitHubDouble, genv) -> None:
    gh.reset_counters()
    result = cli("github", "api", "DELETE", "/repos/acme/payments-api", extra_env=genv)
    assert result.code == 3
    assert "refused by effect destroy (allowed_destructive)" in result.stderr
    assert "'github api' destroys what it names" in result.stderr
    assert gh.requests == []
    lower = cli("github", "api", "delete", "/repos/acme/payments-api", extra_env=genv)
    assert lower.code == 3


@pytest.mark.usefixtures("graphql_schema")
def test_graphql_with_variables(cli, gh: GitHubDouble, genv) -> None:
    code, doc = run(
        cli,
        genv,
        "graphql",
        "query($o: String!, $n: String!) { repository(owner: $o, name: $n) { name } }",
        "o=acme",
        "n=payments-api",
    )
    assert code == 0, doc
    assert doc["steps"][0]["data"] == {"repository": {"name": "payments-api"}}
    code, doc = run(cli, genv, "graphql", "query { nope }")
    assert code == 1 and "GraphQL error" in doc["steps"][0]["error"]


# -- failures -------------------------------------------------------------------------------


def test_not_found_names_status_method_path_and_docs(cli, gh: GitHubDouble, genv) -> None:
    result = cli("github", "repo", "view", "acme/nope", extra_env=genv)
    assert result.code == 1
    assert "error: 404 Not Found: GET /repos/acme/nope: Not Found" in result.stderr
    assert "hint: see https://docs.github.com/" in result.stderr


def test_bad_token_is_a_clear_failure(cli, gh: GitHubDouble, genv) -> None:
    bad = "ghp_" + "B" * 36
    result = cli("github", "user", "get", extra_env={**genv, "RUNTIME_GITHUB_TOKEN": bad})
    assert result.code == 4  # a credential failure, as `runtime auth login` says of it
    assert "401" in result.stderr and "runtime auth status --live" in result.stderr
    assert bad not in result.stdout + result.stderr


def test_missing_credential_fails_before_any_request_with_exit_4(
    cli, gh: GitHubDouble, genv
) -> None:
    gh.reset_counters()
    env = {
        **genv,
        "RUNTIME_GITHUB_TOKEN": "",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    result = cli("github", "repo", "view", "acme/payments-api", extra_env=env)
    assert result.code == 4
    assert "no github credential for 127.0.0.1" in result.stderr
    assert "export RUNTIME_GITHUB_TOKEN" in result.stderr
    assert gh.requests == []


@pytest.mark.parametrize("as_date", [False, True], ids=["seconds", "date"])
def test_rate_limited_get_waits_and_retries(cli, gh: GitHubDouble, genv, as_date: bool) -> None:
    """Retry-After: 1, or the HTTP date a second ahead (RFC 9110 allows both): the date is
    sent in whole seconds, so it may be less than a second away, and a second is the least
    wait."""
    gh.inject_secondary_rate_limit("/repos/acme/payments-api$", retry_after=1, as_date=as_date)
    gh.reset_counters()
    started = time.monotonic()
    code, _doc = run(cli, genv, "repo", "view", "acme/payments-api")
    assert code == 0
    assert time.monotonic() - started >= 1
    assert len(gh.requests) == 2


def test_a_retry_after_date_beyond_the_bound_fails_naming_it(cli, gh: GitHubDouble, genv) -> None:
    gh.inject_secondary_rate_limit(
        "/repos/acme/payments-api$", count=None, retry_after=3600, as_date=True
    )
    gh.reset_counters()
    code, doc = run(cli, genv, "repo", "view", "acme/payments-api")
    assert code == 1 and len(gh.requests) == 1
    error = doc["steps"][0]["error"]
    assert re.fullmatch(
        r"429 rate limited: GET /repos/acme/payments-api; "
        r"retry after \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(waiting would exceed 3 s\)",
        error,
    ), error


def test_rate_limit_beyond_the_bound_fails_with_the_reset_time(cli, gh: GitHubDouble, genv) -> None:
    gh.inject_rate_limit("/repos/acme/payments-api$", count=None, reset_in=3600)
    code, doc = run(cli, genv, "repo", "view", "acme/payments-api")
    assert code == 1
    assert (
        "403 rate limited: GET /repos/acme/payments-api; the limit resets at"
        in doc["steps"][0]["error"]
    )


@pytest.mark.parametrize("as_date", [False, True], ids=["seconds", "date"])
def test_rate_limited_write_is_never_retried(cli, gh: GitHubDouble, genv, as_date: bool) -> None:
    gh.inject_secondary_rate_limit("/orgs/acme/repos", retry_after=1, count=None, as_date=as_date)
    gh.reset_counters()
    code, doc = run(cli, genv, "repo", "create", "name=x", "org=acme")
    assert code == 1
    assert [r.method for r in gh.requests] == ["POST"]
    assert "a write is never retried automatically" in doc["steps"][0]["error"]


@pytest.mark.parametrize(
    ("inject", "expected", "requests"),
    [
        (
            lambda gh: gh.inject("/repos/acme/payments-api$", 500),
            "500 Internal Server Error: GET /repos/acme/payments-api",
            1,
        ),
        (
            lambda gh: gh.inject("/repos/acme/payments-api$", 502, count=None),
            "502 Bad Gateway: GET /repos/acme/payments-api",
            3,
        ),
        (lambda gh: gh.inject_drop("/repos/acme/payments-api$"), "cannot reach 127.0.0.1", 1),
        (
            lambda gh: gh.inject_malformed_json("/repos/acme/payments-api$"),
            "malformed JSON for GET /repos/acme/payments-api",
            1,
        ),
        (lambda gh: gh.inject_truncated("/repos/acme/payments-api$"), "cannot reach 127.0.0.1", 1),
        (
            lambda gh: gh.inject_truncated("/repos/acme/payments-api$", mode="cut_json"),
            "malformed JSON",
            1,
        ),
        (
            lambda gh: gh.inject_delay("/repos/acme/payments-api$", 5),
            "timed out waiting for 127.0.0.1",
            1,
        ),
        # what Python's json reads but no JSON document holds (--output json must stay JSON)
        *(
            (
                lambda gh, body=body: gh.inject(
                    "/repos/acme/payments-api$",
                    200,
                    body=body,
                    headers={"Content-Type": "application/json"},
                ),
                "malformed JSON for GET /repos/acme/payments-api",
                1,
            )
            for body in (
                b'{"name": "x", "n": NaN}',
                b'{"name": "x", "big": 1e400}',
                b'{"a": ' * 100_000,  # nested past Python's stack
            )
        ),
    ],
    ids=[
        "500",
        "502-retried",
        "dropped",
        "malformed",
        "truncated",
        "cut-json",
        "slow",
        "nan",
        "infinite",
        "too-deep",
    ],
)
def test_faults_end_in_clear_failures(
    cli, gh: GitHubDouble, genv, inject: Any, expected: str, requests: int
) -> None:
    inject(gh)
    gh.reset_counters()
    code, doc = run(
        cli, genv, "repo", "view", "acme/payments-api", extra={"RUNTIME_GITHUB_TIMEOUT": "1"}
    )
    assert code == 1
    assert expected in doc["steps"][0]["error"], doc["steps"][0]["error"]
    assert len(gh.requests) == requests


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        (
            {"X-RateLimit-Reset": "99999999999999999"},
            "403 rate limited: GET /repos/acme/payments-api (",
        ),
        ({"X-RateLimit-Reset": "\u00b2", "Retry-After": "1000"}, "; retry after 1000 s ("),
        # no wait can be read from them: the answer is taken as the 403 it is
        ({"X-RateLimit-Reset": "nan", "Retry-After": "\u00b2"}, "403 Forbidden: GET /repos"),
    ],
    ids=["no-date", "not-ascii", "neither"],
)
def test_rate_limit_headers_that_are_not_numbers_end_in_a_clear_failure(
    cli, gh: GitHubDouble, genv, headers: dict[str, str], said: str
) -> None:
    # a server's headers are untrusted: none of these may become an internal error
    limit = {"X-RateLimit-Remaining": "0", **headers}
    gh.inject("/repos/acme/payments-api$", 403, count=None, headers=limit)
    code, doc = run(cli, genv, "repo", "view", "acme/payments-api")
    assert code == 1
    error = doc["steps"][0]["error"]
    assert said in error and "internal error" not in error, error


@pytest.mark.parametrize(
    ("route", "body", "args"),
    [
        ("/orgs/acme/repos", ["a", "b"], ("repo", "list", "acme")),
        ("/orgs/acme/repos", [None], ("repo", "list", "acme")),
        ("/graphql", {"errors": {"message": "boom"}}, ("repo", "summary", "acme/payments-api")),
        ("/graphql", {"data": {"repository": "a/b"}}, ("repo", "summary", "acme/payments-api")),
    ],
    ids=["strings", "nulls", "errors-object", "repository-string"],
)
def test_an_answer_of_another_shape_is_said_so_not_an_internal_error(
    cli, gh: GitHubDouble, genv, route: str, body: Any, args: tuple[str, ...]
) -> None:
    answer = json.dumps(body).encode()
    json_type = {"Content-Type": "application/json"}
    gh.inject(route + "$", 200, count=None, body=answer, headers=json_type)
    code, doc = run(cli, genv, *args)
    assert code == 1
    step = doc["steps"][0]
    assert step["error"].startswith(f"the answer to {' '.join(args[:2])} is not shaped as GitHub's")
    assert "check that the API URL is GitHub's" in step["hint"]


@pytest.mark.parametrize(
    ("inject", "args", "said"),
    [
        (
            lambda gh: gh.inject_redirect("/repos/acme/payments-api$", "http://192.0.2.1/x"),
            ("repo", "view", "acme/payments-api"),
            "302 redirect of GET /repos/acme/payments-api points to plain http:// on 192.0.2.1",
        ),
        (
            lambda gh: gh.inject_next_link("/orgs/acme/repos", location="http://192.0.2.1/p2"),
            ("repo", "list", "acme"),
            "the next page of GET /orgs/acme/repos points to plain http:// on 192.0.2.1",
        ),
        (
            lambda gh: gh.inject_redirect("/repos/acme/payments-api$", "file:///etc/passwd"),
            ("repo", "view", "acme/payments-api"),
            "points to 'file:///etc/passwd', which is not an http(s) URL",
        ),
    ],
    ids=["redirect", "next-page", "file-url"],
)
def test_a_link_to_plain_http_elsewhere_is_not_followed(
    cli, gh: GitHubDouble, genv, inject: Any, args: tuple[str, ...], said: str
) -> None:
    # only loopback addresses may use http, as for the configured URLs: an answer over
    # plain http from anywhere else could be anyone's
    inject(gh)
    code, doc = run(cli, genv, *args, extra={"RUNTIME_GITHUB_TIMEOUT": "1"})
    assert code == 1
    assert said in doc["steps"][0]["error"], doc["steps"][0]["error"]


def test_repo_create_succeeds_only_with_the_repository_it_created(
    cli, gh: GitHubDouble, genv
) -> None:
    # an empty 201, or a 303 followed to another page, says nothing was created
    gh.inject("/orgs/acme/repos$", 201, body={}, method="POST")
    code, doc = run(cli, genv, "repo", "create", "name=x", "org=acme")
    assert code == 1
    assert doc["steps"][0]["error"].startswith(
        "POST /orgs/acme/repos answered 201 without the repository it would have created"
    )
    gh.inject_redirect("/orgs/acme/repos$", gh.base_url + "/user", status=303)
    code, doc = run(cli, genv, "repo", "create", "name=y", "org=acme")
    assert code == 1 and "answered 200 without the repository" in doc["steps"][0]["error"]
    code, doc = run(cli, genv, "repo", "create", "name=z", "org=acme")
    assert code == 0 and doc["steps"][0]["output"].startswith("created acme/z ")


@pytest.mark.usefixtures("graphql_schema")
def test_a_graphql_query_is_retried_as_a_get_is_and_a_mutation_never(
    cli, gh: GitHubDouble, genv
) -> None:
    gh.inject("/graphql$", 429, count=1, retry_after=1)
    gh.reset_counters()
    code, doc = run(cli, genv, "repo", "summary", "acme/payments-api")
    assert code == 0, doc
    assert [r.path for r in gh.requests] == ["/graphql", "/graphql"]
    gh.inject("/graphql$", 502, count=1)
    gh.reset_counters()
    query = "query { viewer { login } }"
    code, doc = run(cli, genv, "graphql", query)
    assert code == 0, doc
    assert len(gh.requests) == 2
    gh.inject("/graphql$", 429, count=1, retry_after=1)
    gh.reset_counters()
    mutation = 'mutation { addStar(input: {starrableId: "x"}) { clientMutationId } }'
    code, doc = run(cli, genv, "graphql", mutation)
    assert code == 1
    assert "a write is never retried automatically" in doc["steps"][0]["error"]
    assert len(gh.requests) == 1


def test_redirect_to_another_host_does_not_carry_the_token(cli, gh: GitHubDouble, genv) -> None:
    with GitHubDouble(token=TOKEN) as other:
        other.add_org("acme")
        other.add_repo("acme", "payments-api")
        gh.inject_redirect("/repos/acme/payments-api$", other.base_url, status=302)
        code, doc = run(cli, genv, "repo", "view", "acme/payments-api")
        assert other.requests, "the redirect was not followed"
        assert all("authorization" not in r.headers for r in other.requests)
        # the other host's 401 says nothing of the token, which never went there
        assert code == 1 and "401" in doc["steps"][0]["error"]
        assert "runtime sends no token to" in doc["steps"][0]["hint"]
        gh.inject_redirect("/orgs/acme/repos", other.base_url, status=307)
        code, doc = run(cli, genv, "repo", "create", "name=x", "org=acme")
        assert (
            code == 1
            and "redirect of POST /orgs/acme/repos to another host" in doc["steps"][0]["error"]
        )


def test_plain_http_is_refused_for_a_non_loopback_host(cli, gh: GitHubDouble, genv) -> None:
    result = cli(
        "github", "user", "get", extra_env={**genv, "GITHUB_API_URL": "http://api.example.com"}
    )
    assert result.code == 2  # an invalid setting, said before anything runs
    assert "only loopback addresses may use http" in result.stderr


# -- capabilities end to end ----------------------------------------------------------------


@pytest.mark.usefixtures("graphql_schema")
def test_seed_worked_example_runs_end_to_end(cli, gh: GitHubDouble, genv) -> None:
    result = cli(
        "--output",
        "json",
        "capability",
        "execute",
        str(EXAMPLES / "repository-audit.md"),
        "--input",
        "organization=acme",
        "--input",
        "repository=acme/payments-api",
        extra_env=genv,
    )
    assert result.code == 0, result.stdout
    doc = result.json()
    check_schema(doc, "execute")
    assert [s["transport"] for s in doc["steps"]] == ["rest", "graphql", "rest"]
    assert doc["steps"][2]["data"]["health_percentage"] >= 0
    assert gh.connections == 1


@pytest.mark.usefixtures("graphql_schema")
def test_twenty_steps_share_one_connection(cli, gh: GitHubDouble, genv, work: Path) -> None:
    steps = "".join(
        "  - provider: github\n    args: [repo, view, acme/payments-api]\n" for _ in range(10)
    )
    steps += "".join(
        "  - provider: github\n    args: [repo, summary, acme/payments-api]\n" for _ in range(10)
    )
    write(work / "many.md", capability("version: v1\nworkflow:\n" + steps))
    gh.reset_counters()
    result = cli("capability", "execute", "many.md", extra_env=genv)
    assert result.code == 0
    assert len(gh.requests) == 20
    assert gh.connections == 1


def test_token_never_reaches_outputs_or_audit(cli, gh: GitHubDouble, genv, home: Path) -> None:
    gh.inject("/user$", 500, body={"message": f"echo {TOKEN}"})
    for args in (
        ("user", "get"),
        ("repo", "view", "acme/payments-api"),
        ("repo", "view", "acme/missing"),
    ):
        for mode in ((), ("--output", "json")):
            result = cli(*mode, "github", *args, extra_env=genv)
            assert TOKEN not in result.stdout + result.stderr
    assert TOKEN not in (home / "audit" / "audit.jsonl").read_text()
    assert json.dumps(TOKEN)[1:-1] not in (home / "audit" / "audit.jsonl").read_text()
    assert (
        base64.b64encode(TOKEN.encode()).decode()
        not in (home / "audit" / "audit.jsonl").read_text()
    )


@pytest.mark.usefixtures("graphql_schema")
def test_status_note_example_writes_the_file(cli, gh: GitHubDouble, genv) -> None:
    gh.add_issue("acme", "payments-api", "Open one")
    result = cli(
        "capability",
        "execute",
        str(EXAMPLES / "repo-status-note.md"),
        "--input",
        "repository=acme/payments-api",
        "--input",
        "note=All green\n",
        extra_env=genv,
    )
    assert result.code == 0, result.stdout
    assert gh.repo("acme", "payments-api").branches["main"]["STATUS.md"].content == b"All green\n"
