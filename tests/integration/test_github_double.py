"""Integration tests for the loopback GitHub double (httpx and the real ``gh``)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.github_double import (
    GitHubDouble,
    SchemaNotInstalledError,
    load_schema,
    schema_path,
)
from tests.github_double.schema import INSTALL_COMMAND, SCHEMA_ENV_VAR, openapi_path

TOKEN = "ghp_test0123456789abcdefghijklmnopqrstuv"
AUTH = {"Authorization": f"token {TOKEN}"}
BAD_CREDENTIALS = {
    "message": "Bad credentials",
    "documentation_url": "https://docs.github.com/rest",
}

REPO_SUMMARY_QUERY = """
query RepoSummary($owner: String!, $name: String!) {
  viewer { login }
  repository(owner: $owner, name: $name) {
    description
    visibility
    defaultBranchRef { name }
    stargazerCount
    forkCount
    issues(states: OPEN) { totalCount }
    pullRequests(states: OPEN) { totalCount }
    latestRelease { tagName name publishedAt }
    primaryLanguage { name }
    repositoryTopics(first: 10) { nodes { topic { name } } }
  }
}
"""


# ------------------------------------------------------------------ fixtures
def require_or_skip(message: str) -> None:
    """Skip, or fail when RUNTIME_REQUIRE_INTEGRATION=1 demands the integration environment."""
    if os.environ.get("RUNTIME_REQUIRE_INTEGRATION") == "1":
        pytest.fail(f"{message} (RUNTIME_REQUIRE_INTEGRATION=1 is set, so this is an error)")
    pytest.skip(message)


def require_openssl() -> None:
    if shutil.which("openssl") is None:
        require_or_skip("the `openssl` command is not on PATH (needed for GitHubDouble(tls=True))")


def ensure_schema() -> None:
    try:
        load_schema()  # cached per process after the first (~2 s) build
    except SchemaNotInstalledError as exc:
        require_or_skip(str(exc))


@pytest.fixture(scope="session")
def graphql_schema_ready() -> None:
    """Build GitHub's schema once per session (it takes a couple of seconds)."""
    ensure_schema()


def seed(gh: GitHubDouble) -> None:
    gh.add_org("acme", description="ACME Corp", members=["wile"])
    gh.add_team(
        "acme",
        "platform",
        name="Platform",
        members=["octocat", "wile"],
        repos=["acme/payments-api"],
    )
    gh.add_repo(
        "acme",
        "payments-api",
        description="Payments service",
        language="Python",
        stargazers_count=42,
        forks_count=7,
        topics=["payments", "api"],
        license="MIT",
    )
    gh.add_file("acme", "payments-api", "README.md", "# payments-api\n")
    gh.add_file("acme", "payments-api", "LICENSE", "MIT License\n")
    gh.add_file("acme", "payments-api", "src/app.py", "print('hi')\n")
    gh.add_repo("acme", "secret-infra", private=True)
    gh.add_repo("someone-else", "hidden", private=True)
    gh.add_issue(
        "acme", "payments-api", "Timeouts on refunds", labels=["bug"], assignees=["octocat"]
    )
    gh.add_issue("acme", "payments-api", "Old issue", state="closed")
    gh.add_pull(
        "acme",
        "payments-api",
        "Add retries",
        head="retries",
        body="Retries with backoff",
        labels=["feature"],
    )
    gh.add_pull("acme", "payments-api", "Refactor client", head="refactor", draft=True)
    gh.add_pull("acme", "payments-api", "Merged thing", head="merged", merged=True)
    gh.add_release(
        "acme", "payments-api", "v1.0.0", name="First", published_at="2024-01-01T00:00:00Z"
    )
    gh.add_release(
        "acme", "payments-api", "v1.1.0", name="Second", published_at="2024-02-01T00:00:00Z"
    )
    gh.add_release(
        "acme",
        "payments-api",
        "v2.0.0-rc1",
        name="RC",
        prerelease=True,
        published_at="2024-03-01T00:00:00Z",
    )
    ci = gh.add_workflow("acme", "payments-api", "CI", path=".github/workflows/ci.yml")
    gh.add_workflow(
        "acme",
        "payments-api",
        "Nightly",
        path=".github/workflows/nightly.yml",
        content="name: Nightly\non:\n  schedule:\n    - cron: '0 0 * * *'\n",
    )
    gh.add_run(
        "acme",
        "payments-api",
        ci,
        status="completed",
        conclusion="success",
        display_title="Add retries",
    )
    gh.add_run("acme", "payments-api", ci, status="in_progress", head_branch="retries")
    gh.add_notification(
        "acme",
        "payments-api",
        "Timeouts on refunds",
        type="Issue",
        reason="assign",
        subject_number=1,
    )
    gh.add_notification("acme", "payments-api", "Read already", unread=False)


@pytest.fixture()
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN, tls=False) as double:
        seed(double)
        yield double
        assert double.errors == [], "the double raised internally:\n" + "\n".join(double.errors)


@pytest.fixture()
def client(gh: GitHubDouble) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gh.api_url, headers=AUTH, timeout=10) as http:
        yield http


def graphql(
    client: httpx.Client, query: str, variables: dict[str, Any] | None = None
) -> dict[str, Any]:
    response = client.post("/graphql", json={"query": query, "variables": variables or {}})
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    return payload


def parse_link(header: str) -> dict[str, str]:
    links = {}
    for part in header.split(","):
        url, rel = part.split(";")
        links[rel.strip().removeprefix('rel="').removesuffix('"')] = url.strip()[1:-1]
    return links


# ---------------------------------------------------------------- lifecycle
def test_urls_and_context_manager() -> None:
    with GitHubDouble(token=TOKEN) as double:
        port = double.port
        assert double.base_url == f"http://127.0.0.1:{port}"
        assert double.host == f"127.0.0.1:{port}"
        assert double.graphql_url == f"http://127.0.0.1:{port}/graphql"
        response = httpx.get(f"{double.api_url}/api/v3/user", headers=AUTH)
        assert response.json()["login"] == "octocat"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/user", headers=AUTH, timeout=2)


# --------------------------------------------------------------- pagination
def test_pagination_250_repos_three_pages_with_link_headers() -> None:
    with GitHubDouble(token=TOKEN) as double, httpx.Client(headers=AUTH) as http:
        double.add_org("bulk")
        for index in range(250):
            double.add_repo("bulk", f"repo-{index:03d}")
        url: str | None = f"{double.api_url}/orgs/bulk/repos?per_page=100"
        pages: list[list[str]] = []
        links_seen: list[dict[str, str]] = []
        while url:
            response = http.get(url)
            assert response.status_code == 200
            pages.append([repo["name"] for repo in response.json()])
            links = parse_link(response.headers["Link"])
            links_seen.append(links)
            for target in links.values():
                assert target.startswith(double.base_url + "/orgs/bulk/repos?")
                assert "per_page=100" in target
            url = links.get("next")
        assert [len(page) for page in pages] == [100, 100, 50]
        assert len({name for page in pages for name in page}) == 250
        assert set(links_seen[0]) == {"next", "last"}
        assert links_seen[0]["next"].endswith("page=2") and links_seen[0]["last"].endswith("page=3")
        assert set(links_seen[1]) == {"prev", "next", "last", "first"}
        assert links_seen[1]["prev"].endswith("page=1") and links_seen[1]["next"].endswith("page=3")
        assert set(links_seen[2]) == {"prev", "first"}
        assert links_seen[2]["prev"].endswith("page=2") and links_seen[2]["first"].endswith(
            "page=1"
        )
        assert len(double.requests) == 3


def test_pagination_defaults_cap_and_enterprise_prefix(
    gh: GitHubDouble, client: httpx.Client
) -> None:
    for index in range(120):
        gh.add_repo("octocat", f"mine-{index}")
    first = client.get("/user/repos")
    assert len(first.json()) == 30
    capped = client.get("/user/repos", params={"per_page": 500})
    assert len(capped.json()) == 100
    beyond = client.get("/user/repos", params={"per_page": 100, "page": 99})
    assert beyond.json() == []
    prefixed = client.get("/api/v3/user/repos", params={"per_page": 50})
    assert parse_link(prefixed.headers["Link"])["next"].startswith(
        gh.base_url + "/api/v3/user/repos?"
    )


# ---------------------------------------------------------------------- auth
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "token wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer ghp_nope"},
    ],
    ids=["missing", "wrong-token", "wrong-scheme", "wrong-bearer"],
)
def test_auth_failures_return_bad_credentials(gh: GitHubDouble, headers: dict[str, str]) -> None:
    for path in ("/user", "/api/v3/repos/acme/payments-api"):
        response = httpx.get(gh.api_url + path, headers=headers)
        assert response.status_code == 401
        assert response.json()["message"] == BAD_CREDENTIALS["message"]
        assert response.json()["documentation_url"] == BAD_CREDENTIALS["documentation_url"]
        assert response.headers["Content-Type"].startswith("application/json")
    graphql_response = httpx.post(
        gh.graphql_url, headers=headers, json={"query": "{ viewer { login } }"}
    )
    assert graphql_response.status_code == 401


def test_bearer_auth_headers_and_scopes(gh: GitHubDouble) -> None:
    response = httpx.get(f"{gh.api_url}/user", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert response.headers["X-OAuth-Scopes"] == "repo, read:org, workflow"
    assert response.headers["X-RateLimit-Limit"] == "5000"
    remaining = int(response.headers["X-RateLimit-Remaining"])
    assert int(response.headers["X-RateLimit-Reset"]) > time.time()
    assert response.headers["X-GitHub-Request-Id"]
    again = httpx.get(f"{gh.api_url}/user", headers=AUTH)
    assert int(again.headers["X-RateLimit-Remaining"]) == remaining - 1
    gh.scopes = ["repo"]
    assert httpx.get(f"{gh.api_url}/user", headers=AUTH).headers["X-OAuth-Scopes"] == "repo"


def test_exhausted_rate_limit_budget(gh: GitHubDouble, client: httpx.Client) -> None:
    gh.set_rate_limit(remaining=1, reset_in=120)
    assert client.get("/user").status_code == 200
    limited = client.get("/user")
    assert limited.status_code == 403
    assert limited.headers["X-RateLimit-Remaining"] == "0"
    assert "rate limit exceeded" in limited.json()["message"]


# ---------------------------------------------------------------------- REST
def test_user_orgs_teams_and_repos(gh: GitHubDouble, client: httpx.Client) -> None:
    assert client.get("/user").json()["login"] == "octocat"
    assert [org["login"] for org in client.get("/user/orgs").json()] == ["acme"]
    teams = client.get("/orgs/acme/teams").json()
    assert [(team["slug"], team["name"]) for team in teams] == [("platform", "Platform")]
    names = {repo["full_name"] for repo in client.get("/user/repos").json()}
    assert names == {"acme/payments-api", "acme/secret-infra"}
    org_repos = client.get("/orgs/acme/repos", params={"type": "private"}).json()
    assert [repo["name"] for repo in org_repos] == ["secret-infra"]
    repo = client.get("/repos/acme/payments-api").json()
    assert repo["owner"]["login"] == "acme"
    assert repo["default_branch"] == "main"
    assert repo["stargazers_count"] == 42 and repo["forks_count"] == 7
    assert repo["topics"] == ["payments", "api"] and repo["language"] == "Python"
    assert repo["private"] is False and repo["visibility"] == "public"
    assert repo["url"] == f"{gh.base_url}/repos/acme/payments-api"
    missing = client.get("/repos/someone-else/hidden")
    assert missing.status_code == 404
    assert missing.json()["message"] == "Not Found" and "documentation_url" in missing.json()
    assert client.get("/orgs/nope/repos").status_code == 404


def test_create_and_delete_repositories(gh: GitHubDouble, client: httpx.Client) -> None:
    created = client.post(
        "/user/repos", json={"name": "new-thing", "private": True, "description": "d"}
    )
    assert created.status_code == 201
    assert created.json()["full_name"] == "octocat/new-thing" and created.json()["private"] is True
    duplicate = client.post("/user/repos", json={"name": "new-thing"})
    assert duplicate.status_code == 422
    assert duplicate.json()["errors"][0]["message"] == "name already exists on this account"
    assert client.post("/user/repos", json={}).status_code == 422
    org_created = client.post("/orgs/acme/repos", json={"name": "svc", "auto_init": True})
    assert org_created.status_code == 201
    assert client.get("/repos/acme/svc/contents/README.md").status_code == 200
    gh.add_org("strangers", viewer_role=None)
    assert client.post("/orgs/strangers/repos", json={"name": "x"}).status_code == 403
    denied = client.delete("/repos/acme/svc")
    assert denied.status_code == 403  # default scopes lack delete_repo, like a real token
    gh.scopes = [*gh.scopes, "delete_repo"]
    deleted = client.delete("/repos/acme/svc")
    assert deleted.status_code == 204 and deleted.content == b""
    assert deleted.headers["Content-Length"] == "0"
    assert client.get("/repos/acme/svc").status_code == 404


def test_issues_notifications_and_pulls(gh: GitHubDouble, client: httpx.Client) -> None:
    issues = client.get("/repos/acme/payments-api/issues").json()
    # Like GitHub, the issues API includes open pull requests.
    assert {item["title"] for item in issues} == {
        "Timeouts on refunds",
        "Add retries",
        "Refactor client",
    }
    assert sum("pull_request" in item for item in issues) == 2
    closed = client.get("/repos/acme/payments-api/issues", params={"state": "closed"}).json()
    assert {item["title"] for item in closed} == {"Old issue", "Merged thing"}
    bugs = client.get("/repos/acme/payments-api/issues", params={"labels": "bug"}).json()
    assert [item["number"] for item in bugs] == [1]
    assigned = client.get("/issues").json()
    assert [item["title"] for item in assigned] == ["Timeouts on refunds"]
    assert assigned[0]["repository"]["full_name"] == "acme/payments-api"
    assert [item["title"] for item in client.get("/orgs/acme/issues").json()] == [
        "Timeouts on refunds"
    ]
    created = client.post("/repos/acme/payments-api/issues", json={"title": "New", "labels": ["x"]})
    assert created.status_code == 201 and created.json()["number"] == 6
    assert (
        client.post("/repos/acme/payments-api/issues", json={"body": "no title"}).status_code == 422
    )
    notifications = client.get("/notifications").json()
    assert [n["subject"]["title"] for n in notifications] == ["Timeouts on refunds"]
    assert notifications[0]["subject"]["url"].endswith("/repos/acme/payments-api/issues/1")
    assert len(client.get("/notifications", params={"all": "true"}).json()) == 2
    pulls = client.get("/repos/acme/payments-api/pulls").json()
    assert [(p["number"], p["head"]["ref"], p["draft"]) for p in pulls] == [
        (4, "refactor", True),
        (3, "retries", False),
    ]
    merged = client.get("/repos/acme/payments-api/pulls", params={"state": "closed"}).json()
    assert merged[0]["merged_at"] is not None


def test_contents_get_put_conflicts(gh: GitHubDouble, client: httpx.Client) -> None:
    readme = client.get("/repos/acme/payments-api/contents/README.md")
    assert readme.status_code == 200
    body = readme.json()
    assert base64.b64decode(body["content"]) == b"# payments-api\n"
    assert body["encoding"] == "base64" and body["type"] == "file"
    sha = body["sha"]
    assert sha == gh.add_file("acme", "payments-api", "README.md", "# payments-api\n")
    raw = client.get(
        "/repos/acme/payments-api/contents/README.md",
        headers={"Accept": "application/vnd.github.raw"},
    )
    assert raw.content == b"# payments-api\n"
    listing = client.get("/repos/acme/payments-api/contents").json()
    assert [(item["name"], item["type"]) for item in listing] == [
        (".github", "dir"),
        ("LICENSE", "file"),
        ("README.md", "file"),
        ("src", "dir"),
    ]
    assert client.get("/repos/acme/payments-api/contents/nope.txt").status_code == 404
    assert (
        client.get(
            "/repos/acme/payments-api/contents/README.md", params={"ref": "nope"}
        ).status_code
        == 404
    )

    encoded = base64.b64encode(b"new file\n").decode()
    created = client.put(
        "/repos/acme/payments-api/contents/docs/NEW.md", json={"message": "add", "content": encoded}
    )
    assert created.status_code == 201
    assert created.json()["content"]["path"] == "docs/NEW.md"
    assert created.json()["commit"]["message"] == "add"

    update = {"message": "update", "content": base64.b64encode(b"changed\n").decode()}
    missing_sha = client.put("/repos/acme/payments-api/contents/README.md", json=update)
    assert missing_sha.status_code == 422 and "sha" in missing_sha.json()["message"]
    wrong_sha = client.put(
        "/repos/acme/payments-api/contents/README.md", json={**update, "sha": "0" * 40}
    )
    assert wrong_sha.status_code == 409
    assert {"message", "documentation_url"} <= set(wrong_sha.json())
    updated = client.put("/repos/acme/payments-api/contents/README.md", json={**update, "sha": sha})
    assert updated.status_code == 200
    new_sha = updated.json()["content"]["sha"]
    assert new_sha != sha
    fetched = client.get("/repos/acme/payments-api/contents/README.md").json()
    assert base64.b64decode(fetched["content"]) == b"changed\n" and fetched["sha"] == new_sha

    gh.add_branch("acme", "payments-api", "dev")
    on_branch = client.put(
        "/repos/acme/payments-api/contents/dev.txt",
        json={"message": "m", "content": encoded, "branch": "dev"},
    )
    assert on_branch.status_code == 201
    assert client.get("/repos/acme/payments-api/contents/dev.txt").status_code == 404
    assert (
        client.get("/repos/acme/payments-api/contents/dev.txt", params={"ref": "dev"}).status_code
        == 200
    )
    no_branch = client.put(
        "/repos/acme/payments-api/contents/x.txt",
        json={"message": "m", "content": encoded, "branch": "ghost"},
    )
    assert no_branch.status_code == 404
    assert (
        client.put("/repos/acme/payments-api/contents/x.txt", json={"content": encoded}).status_code
        == 422
    )


def test_community_profile_and_releases(client: httpx.Client) -> None:
    profile = client.get("/repos/acme/payments-api/community/profile").json()
    assert profile["files"]["readme"] is not None and profile["files"]["license"] is not None
    assert profile["files"]["contributing"] is None and profile["files"]["code_of_conduct"] is None
    assert 0 < profile["health_percentage"] < 100
    latest = client.get("/repos/acme/payments-api/releases/latest").json()
    assert latest["tag_name"] == "v1.1.0"  # the newer pre-release does not count
    assert client.get("/repos/acme/secret-infra/releases/latest").status_code == 404


def test_actions_workflows_runs_and_dispatch(gh: GitHubDouble, client: httpx.Client) -> None:
    workflows = client.get("/repos/acme/payments-api/actions/workflows").json()
    assert workflows["total_count"] == 2
    assert [w["path"] for w in workflows["workflows"]] == [
        ".github/workflows/ci.yml",
        ".github/workflows/nightly.yml",
    ]
    runs = client.get("/repos/acme/payments-api/actions/runs").json()
    assert runs["total_count"] == 2
    newest = runs["workflow_runs"][0]
    assert newest["status"] == "in_progress" and newest["conclusion"] is None
    single = client.get(f"/repos/acme/payments-api/actions/runs/{newest['id']}").json()
    assert single["id"] == newest["id"] and single["name"] == "CI"
    assert client.get("/repos/acme/payments-api/actions/runs/1").status_code == 404
    filtered = client.get(
        "/repos/acme/payments-api/actions/runs", params={"branch": "retries"}
    ).json()
    assert filtered["total_count"] == 1

    dispatched = client.post(
        "/repos/acme/payments-api/actions/workflows/ci.yml/dispatches",
        json={"ref": "main", "inputs": {"x": "1"}},
    )
    assert dispatched.status_code == 204 and dispatched.content == b""
    repo = gh.repo("acme", "payments-api")
    assert repo is not None and repo.dispatches[-1]["inputs"] == {"x": "1"}
    assert client.get("/repos/acme/payments-api/actions/runs").json()["total_count"] == 3
    no_trigger = client.post(
        "/repos/acme/payments-api/actions/workflows/nightly.yml/dispatches", json={"ref": "main"}
    )
    assert no_trigger.status_code == 422
    assert (
        client.post(
            "/repos/acme/payments-api/actions/workflows/ci.yml/dispatches", json={}
        ).status_code
        == 422
    )
    assert (
        client.post(
            "/repos/acme/payments-api/actions/workflows/nope.yml/dispatches", json={"ref": "main"}
        ).status_code
        == 404
    )


def test_second_token_sees_github_permissions() -> None:
    with GitHubDouble(token=TOKEN, extra_tokens={"ghp_mallory": "mallory"}) as double:
        seed(double)
        other = {"Authorization": "token ghp_mallory"}
        with httpx.Client(base_url=double.api_url, headers=other) as http:
            assert http.get("/user").json()["login"] == "mallory"
            assert http.get("/repos/acme/payments-api").json()["permissions"]["push"] is False
            assert http.get("/repos/acme/secret-infra").status_code == 404
            content = {"message": "m", "content": base64.b64encode(b"x").decode()}
            assert (
                http.put("/repos/acme/payments-api/contents/x.txt", json=content).status_code == 403
            )
            assert http.get("/orgs/acme/teams").status_code == 403
            assert http.get("/user/orgs").json() == []


def test_concurrent_clients_share_a_pool(gh: GitHubDouble) -> None:
    gh.reset_counters()
    limits = httpx.Limits(max_connections=8, max_keepalive_connections=8)
    with httpx.Client(base_url=gh.api_url, headers=AUTH, limits=limits) as http:

        def fetch(index: int) -> int:
            return http.get("/repos/acme/payments-api" if index % 2 else "/user/repos").status_code

        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(fetch, range(200)))
    assert statuses == [200] * 200
    assert len(gh.requests) == 200
    assert 1 <= gh.connections <= 8


# ------------------------------------------------- OpenAPI conformance
@pytest.fixture(scope="session")
def openapi() -> dict[str, Any]:
    try:
        path = openapi_path()
    except SchemaNotInstalledError as exc:
        require_or_skip(str(exc))
    description: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return description


def _deref(spec: dict[str, Any], schema: Any) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Any = spec
        for part in schema["$ref"].split("/")[1:]:
            node = node[part]
        schema = node
    return schema


def missing_required(
    spec: dict[str, Any], value: Any, schema: Any, where: str = "$", depth: int = 0
) -> list[str]:
    """Required properties of ``schema`` (recursively) that ``value`` lacks."""
    schema = _deref(spec, schema)
    if (
        value is None
        or depth > 5
        or not isinstance(schema, dict)
        or "anyOf" in schema
        or "oneOf" in schema
    ):
        return []
    problems: list[str] = []
    for sub in schema.get("allOf", []):
        problems += missing_required(spec, value, sub, where, depth)
    if isinstance(value, list) and schema.get("type") == "array":
        for item in value[:3]:
            problems += missing_required(spec, item, schema.get("items"), f"{where}[]", depth + 1)
    elif isinstance(value, dict):
        problems += [f"{where}.{key}" for key in schema.get("required", []) if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problems += missing_required(spec, value[key], sub, f"{where}.{key}", depth + 1)
    return problems


CONFORMANCE_CASES = [
    ("/user", "/user"),
    ("/users/{username}", "/users/octocat"),
    ("/user/orgs", "/user/orgs"),
    ("/orgs/{org}", "/orgs/acme"),
    ("/user/repos", "/user/repos"),
    ("/orgs/{org}/repos", "/orgs/acme/repos"),
    ("/repos/{owner}/{repo}", "/repos/acme/payments-api"),
    ("/orgs/{org}/teams", "/orgs/acme/teams"),
    ("/notifications", "/notifications"),
    ("/issues", "/issues"),
    ("/orgs/{org}/issues", "/orgs/acme/issues"),
    ("/repos/{owner}/{repo}/issues", "/repos/acme/payments-api/issues"),
    ("/repos/{owner}/{repo}/issues/{issue_number}", "/repos/acme/payments-api/issues/1"),
    ("/repos/{owner}/{repo}/contents/{path}", "/repos/acme/payments-api/contents/README.md"),
    ("/repos/{owner}/{repo}/community/profile", "/repos/acme/payments-api/community/profile"),
    ("/repos/{owner}/{repo}/pulls", "/repos/acme/payments-api/pulls?state=all"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}", "/repos/acme/payments-api/pulls/5"),
    ("/repos/{owner}/{repo}/actions/workflows", "/repos/acme/payments-api/actions/workflows"),
    ("/repos/{owner}/{repo}/actions/runs", "/repos/acme/payments-api/actions/runs"),
    ("/repos/{owner}/{repo}/releases", "/repos/acme/payments-api/releases"),
    ("/repos/{owner}/{repo}/releases/latest", "/repos/acme/payments-api/releases/latest"),
    ("/rate_limit", "/rate_limit"),
]


@pytest.mark.parametrize(
    ("template", "url"), CONFORMANCE_CASES, ids=[case[0] for case in CONFORMANCE_CASES]
)
def test_rest_shapes_have_openapi_required_fields(
    openapi: dict[str, Any], client: httpx.Client, template: str, url: str
) -> None:
    response = client.get(url)
    assert response.status_code == 200
    documented = _deref(openapi, openapi["paths"][template]["get"]["responses"]["200"])
    schema = documented["content"]["application/json"]["schema"]
    assert missing_required(openapi, response.json(), schema) == []


def test_every_route_is_a_documented_github_route(
    gh: GitHubDouble, openapi: dict[str, Any]
) -> None:
    def shape(template: str) -> str:
        return re.sub(r"\{[^}]+\}", "{}", template)

    documented = {
        (method.upper(), shape(path)) for path, item in openapi["paths"].items() for method in item
    }
    undocumented = [
        (method, template)
        for method, template in gh.rest_routes
        if (method, shape(template)) not in documented
        and template != "/repos/{owner}/{repo}/contents"
    ]
    assert undocumented == []


# -------------------------------------------------------------------- faults
def test_fault_status_count_and_method(gh: GitHubDouble, client: httpx.Client) -> None:
    fault = gh.inject(r"^/user$", status=502, count=2)
    assert client.get("/user").status_code == 502
    assert client.get("/api/v3/user").status_code == 502
    assert client.get("/user").status_code == 200
    assert fault.hits == 2 and fault.exhausted
    gh.inject(r"/issues$", status=503, count=None, method="POST")
    assert client.get("/repos/acme/payments-api/issues").status_code == 200
    for _ in range(3):
        failed = client.post("/repos/acme/payments-api/issues", json={"title": "x"})
        assert failed.status_code == 503 and failed.json()["message"] == "Service Unavailable"
    gh.clear_faults()
    assert client.post("/repos/acme/payments-api/issues", json={"title": "x"}).status_code == 201


def test_fault_primary_rate_limit(gh: GitHubDouble, client: httpx.Client) -> None:
    gh.inject_rate_limit(r"/user", reset_in=30)
    response = client.get("/user")
    assert response.status_code == 403
    assert response.headers["X-RateLimit-Remaining"] == "0"
    reset = int(response.headers["X-RateLimit-Reset"])
    assert time.time() + 20 < reset <= time.time() + 31
    assert "API rate limit exceeded" in response.json()["message"]
    assert client.get("/user").status_code == 200


def test_fault_secondary_rate_limit(gh: GitHubDouble, client: httpx.Client) -> None:
    gh.inject_secondary_rate_limit(r"/user", retry_after=7)
    response = client.get("/user")
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "7"
    assert "secondary rate limit" in response.json()["message"]
    gh.inject_secondary_rate_limit(r"/user", retry_after=3, status=403)
    assert client.get("/user").status_code == 403


def test_fault_slow_response(gh: GitHubDouble, client: httpx.Client) -> None:
    gh.inject_delay(r"/user", 0.5)
    started = time.monotonic()
    assert client.get("/user").status_code == 200
    assert time.monotonic() - started >= 0.5
    gh.inject_delay(r"/user", 2.0)
    with pytest.raises(httpx.ReadTimeout):
        client.get("/user", timeout=0.3)


def test_fault_dropped_connection(gh: GitHubDouble, client: httpx.Client) -> None:
    gh.inject_drop(r"/user")
    with pytest.raises(httpx.RemoteProtocolError):
        client.get("/user")
    assert client.get("/user").status_code == 200
    gh.inject_drop(r"/user", reset=True)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        client.get("/user")


def test_fault_truncated_bodies(gh: GitHubDouble, client: httpx.Client) -> None:
    gh.inject_truncated(r"/repos/acme/payments-api$")
    with pytest.raises(httpx.RemoteProtocolError):
        client.get("/repos/acme/payments-api")
    gh.inject_truncated(r"/repos/acme/payments-api$", mode="cut_json")
    cut = client.get("/repos/acme/payments-api")
    assert cut.status_code == 200
    assert int(cut.headers["Content-Length"]) == len(cut.content)
    with pytest.raises(json.JSONDecodeError):
        cut.json()
    assert client.get("/repos/acme/payments-api").json()["name"] == "payments-api"


def test_fault_malformed_json(
    gh: GitHubDouble, client: httpx.Client, graphql_schema_ready: None
) -> None:
    gh.inject_malformed_json(r"/user")
    response = client.get("/user")
    assert response.status_code == 200 and response.headers["Content-Type"].startswith(
        "application/json"
    )
    with pytest.raises(json.JSONDecodeError):
        response.json()
    gh.inject_malformed_json(r"/graphql", body="<html>unicorn</html>")
    with pytest.raises(json.JSONDecodeError):
        client.post("/graphql", json={"query": "{ viewer { login } }"}).json()


def test_fault_redirect_to_another_host(
    gh: GitHubDouble, client: httpx.Client, graphql_schema_ready: None
) -> None:
    with GitHubDouble(token=TOKEN) as other:
        other.add_user("octocat", name="Moved Cat")
        gh.inject_redirect(r"^/user$", other.base_url)
        response = client.get("/user", params={"x": "1"})
        assert response.status_code == 302
        assert response.headers["Location"] == f"{other.base_url}/user?x=1"
        # httpx, like most clients, drops Authorization on a cross-origin redirect,
        # so the other host answers 401: the token does not leak to it.
        gh.inject_redirect(r"^/user$", other.base_url, status=307)
        followed = client.get("/user", follow_redirects=True)
        assert str(followed.url) == f"{other.base_url}/user"
        assert followed.status_code == 401
        assert [r.path for r in other.requests] == ["/user"]
        assert "authorization" not in other.requests[0].headers
        # 307 keeps the method and body; with explicit credentials the other host serves it.
        gh.inject_redirect(r"/graphql$", other.base_url, status=307)
        moved = client.post("/graphql", json={"query": "{ viewer { login } }"})
        assert moved.status_code == 307
        retried = httpx.post(
            moved.headers["Location"], headers=AUTH, json={"query": "{ viewer { login } }"}
        )
        assert retried.json() == {"data": {"viewer": {"login": "octocat"}}}
        assert other.requests[-1].method == "POST"


# ------------------------------------------------------------------- GraphQL
def test_graphql_repo_summary_in_one_request(
    gh: GitHubDouble, client: httpx.Client, graphql_schema_ready: None
) -> None:
    gh.reset_counters()
    result = graphql(client, REPO_SUMMARY_QUERY, {"owner": "acme", "name": "payments-api"})
    assert "errors" not in result
    assert len(gh.requests) == 1 and gh.requests[0].method == "POST"
    assert result["data"]["viewer"] == {"login": "octocat"}
    repo = result["data"]["repository"]
    assert repo["description"] == "Payments service"
    assert repo["visibility"] == "PUBLIC"
    assert repo["defaultBranchRef"] == {"name": "main"}
    assert repo["stargazerCount"] == 42 and repo["forkCount"] == 7
    assert repo["issues"] == {"totalCount": 1}
    assert repo["pullRequests"] == {"totalCount": 2}
    assert repo["latestRelease"] == {
        "tagName": "v1.1.0",
        "name": "Second",
        "publishedAt": "2024-02-01T00:00:00Z",
    }
    assert repo["primaryLanguage"] == {"name": "Python"}
    assert [n["topic"]["name"] for n in repo["repositoryTopics"]["nodes"]] == ["payments", "api"]
    alt = httpx.post(
        gh.base_url + "/api/graphql", headers=AUTH, json={"query": "{ viewer { login } }"}
    )
    assert alt.json() == {"data": {"viewer": {"login": "octocat"}}}


def test_graphql_validation_errors(client: httpx.Client, graphql_schema_ready: None) -> None:
    invalid = graphql(
        client, '{ repository(owner: "acme", name: "payments-api") { descriptionz } }'
    )
    assert "data" not in invalid
    [error] = invalid["errors"]
    assert error["message"] == "Field 'descriptionz' doesn't exist on type 'Repository'"
    assert error["extensions"] == {
        "code": "undefinedField",
        "typeName": "Repository",
        "fieldName": "descriptionz",
    }
    assert error["locations"] == [{"line": 1, "column": 53}]
    bad_arg = graphql(client, '{ repository(owner: "acme") { name } }')
    assert "name" in bad_arg["errors"][0]["message"]
    syntax = graphql(client, "{ viewer { login }")
    assert syntax["errors"] and "data" not in syntax
    assert client.post("/graphql", content=b"{not json").status_code == 400


def test_graphql_resolution_errors_and_pagination(
    client: httpx.Client, graphql_schema_ready: None
) -> None:
    missing = graphql(client, '{ repository(owner: "acme", name: "nope") { name } }')
    assert missing["data"] == {"repository": None}
    assert missing["errors"][0]["type"] == "NOT_FOUND"
    assert (
        missing["errors"][0]["message"]
        == "Could not resolve to a Repository with the name 'acme/nope'."
    )
    hidden = graphql(client, '{ repository(owner: "someone-else", name: "hidden") { name } }')
    assert hidden["errors"][0]["type"] == "NOT_FOUND"
    unbounded = graphql(
        client, '{ repository(owner: "acme", name: "payments-api") { issues { nodes { title } } } }'
    )
    assert unbounded["errors"][0]["type"] == "MISSING_PAGINATION_BOUNDARIES"
    excessive = graphql(
        client,
        '{ repository(owner: "acme", name: "payments-api") { issues(first: 101) { totalCount } } }',
    )
    assert excessive["errors"][0]["type"] == "EXCESSIVE_PAGINATION"

    query = """query($cursor: String) { repository(owner: "acme", name: "payments-api") {
        pullRequests(first: 1, after: $cursor, states: [OPEN, MERGED], orderBy: {field: CREATED_AT, direction: ASC}) {
          totalCount nodes { number state isDraft author { login } } pageInfo { hasNextPage endCursor } } } }"""
    seen: list[tuple[int, str]] = []
    cursor: str | None = None
    while True:
        page = graphql(client, query, {"cursor": cursor})["data"]["repository"]["pullRequests"]
        assert page["totalCount"] == 3
        seen.extend((node["number"], node["state"]) for node in page["nodes"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        cursor = page["pageInfo"]["endCursor"]
    assert seen == [(3, "OPEN"), (4, "OPEN"), (5, "MERGED")]
    not_implemented = graphql(
        client, 'mutation { addStar(input: {starrableId: "x"}) { clientMutationId } }'
    )
    assert not_implemented["errors"][0]["type"] == "NOT_IMPLEMENTED"


def test_graphql_unknown_fields_get_typed_defaults(
    client: httpx.Client, graphql_schema_ready: None
) -> None:
    result = graphql(
        client,
        """{ repository(owner: "acme", name: "payments-api") {
              pullRequest(number: 3) { title headRefName reviewDecision isDraft
                reactionGroups { content } reviews(first: 5) { totalCount nodes { body } } }
              rateLimitFree: viewerPermission } rateLimit { limit remaining } }""",
    )
    assert "errors" not in result, result
    pull = result["data"]["repository"]["pullRequest"]
    assert pull["title"] == "Add retries" and pull["headRefName"] == "retries"
    assert pull["reviews"] == {"totalCount": 0, "nodes": []}
    assert result["data"]["repository"]["rateLimitFree"] == "ADMIN"
    assert result["data"]["rateLimit"]["limit"] == 5000


# -------------------------------------------------------------- keep-alive
def test_keep_alive_counts_one_connection(gh: GitHubDouble) -> None:
    gh.reset_counters()
    with httpx.Client(base_url=gh.api_url, headers=AUTH) as http:
        for _ in range(25):
            assert http.get("/user").status_code == 200
            assert http.get("/repos/acme/payments-api").status_code == 200
    assert len(gh.requests) == 50
    assert gh.connections == 1
    for _ in range(3):
        httpx.get(f"{gh.api_url}/user", headers=AUTH)
    assert gh.connections == 4


def test_keep_alive_with_raw_socket_pipelined_requests(gh: GitHubDouble) -> None:
    gh.reset_counters()
    request = (
        f"GET /user HTTP/1.1\r\nHost: {gh.host}\r\nAuthorization: token {TOKEN}\r\n\r\n".encode()
    )
    with socket.create_connection(("127.0.0.1", gh.port), timeout=5) as sock:
        sock.sendall(request * 3)
        data = b""
        while data.count(b"HTTP/1.1 200 OK") < 3 or not data.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, "server closed a keep-alive connection"
            data += chunk
    assert data.count(b"Content-Length:") == 3
    assert gh.connections == 1 and len(gh.requests) == 3


@pytest.mark.integration
def test_tls_mode_serves_https_with_throwaway_ca() -> None:
    require_openssl()
    with GitHubDouble(token=TOKEN, tls=True) as double:
        assert double.base_url.startswith("https://127.0.0.1:")
        assert Path(double.ca_file).read_text().startswith("-----BEGIN CERTIFICATE-----")
        context = ssl.create_default_context(cafile=double.ca_file)
        with httpx.Client(verify=context, headers=AUTH) as http:
            for host in (double.base_url, f"https://localhost:{double.port}"):
                assert http.get(f"{host}/api/v3/user").json()["login"] == "octocat"
        assert double.connections == 2
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{double.base_url}/user", headers=AUTH)  # not trusted without the CA
    with GitHubDouble(token=TOKEN) as plain, pytest.raises(RuntimeError):
        _ = plain.ca_file


def test_schema_helper_names_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SCHEMA_ENV_VAR, str(tmp_path / "missing" / "schema.graphql"))
    with pytest.raises(SchemaNotInstalledError) as info:
        schema_path()
    assert INSTALL_COMMAND in str(info.value)
    assert INSTALL_COMMAND == "npm install --prefix tests/npm --no-audit --no-fund"
    monkeypatch.delenv(SCHEMA_ENV_VAR)
    try:
        path = schema_path()
    except SchemaNotInstalledError:
        pytest.skip("npm test dependencies are not installed")
    assert path.parts[-4:] == ("node_modules", "@octokit", "graphql-schema", "schema.graphql")


# ------------------------------------------------------------------ real gh
@pytest.fixture()
def gh_cli(tmp_path: Path) -> Iterator[tuple[GitHubDouble, dict[str, str]]]:
    if shutil.which("gh") is None:
        require_or_skip(
            "the `gh` CLI is not on PATH (Debian: apt-get update && apt-get install -y gh)"
        )
    require_openssl()
    ensure_schema()
    with GitHubDouble(token=TOKEN, tls=True) as double:
        seed(double)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GH_", "GITHUB_"))}
        env.update(double.gh_env(tmp_path / "gh-config"))
        yield double, env
        assert double.errors == [], "\n".join(double.errors)


def run_gh(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["gh", *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, (
        f"gh {' '.join(args)} failed ({result.returncode}): {result.stderr}"
    )
    return result


@pytest.mark.integration
def test_gh_pr_list_json(gh_cli: tuple[GitHubDouble, dict[str, str]]) -> None:
    double, env = gh_cli
    result = run_gh(env, "pr", "list", "--repo", "acme/payments-api", "--json", "number,title")
    assert json.loads(result.stdout) == [
        {"number": 4, "title": "Refactor client"},
        {"number": 3, "title": "Add retries"},
    ]
    assert [r.path for r in double.requests] == ["/api/graphql"]
    assert double.requests[0].headers["authorization"] == f"token {TOKEN}"
    assert "PullRequestList" in double.graphql_queries[0]["query"]


@pytest.mark.integration
def test_gh_pr_view(gh_cli: tuple[GitHubDouble, dict[str, str]]) -> None:
    _, env = gh_cli
    result = run_gh(env, "pr", "view", "3", "--repo", "acme/payments-api")
    assert "title:\tAdd retries" in result.stdout
    assert "state:\tOPEN" in result.stdout
    assert "labels:\tfeature" in result.stdout
    assert "Retries with backoff" in result.stdout
    as_json = run_gh(
        env,
        "pr",
        "view",
        "4",
        "--repo",
        "acme/payments-api",
        "--json",
        "number,isDraft,headRefName",
    )
    assert json.loads(as_json.stdout) == {"number": 4, "isDraft": True, "headRefName": "refactor"}
    missing = subprocess.run(
        ["gh", "pr", "view", "99", "--repo", "acme/payments-api"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode != 0 and "Could not resolve to a PullRequest" in missing.stderr


@pytest.mark.integration
def test_gh_run_list(gh_cli: tuple[GitHubDouble, dict[str, str]]) -> None:
    double, env = gh_cli
    result = run_gh(env, "run", "list", "--repo", "acme/payments-api")
    lines = [line.split("\t") for line in result.stdout.strip().splitlines()]
    assert len(lines) == 2
    assert lines[0][0] == "in_progress" and lines[0][4] == "retries"
    assert lines[1][:3] == ["completed", "success", "Add retries"]
    paths = [r.path.split("?")[0] for r in double.requests]
    assert "/api/v3/repos/acme/payments-api/actions/runs" in paths


@pytest.mark.integration
def test_gh_workflow_run(gh_cli: tuple[GitHubDouble, dict[str, str]]) -> None:
    double, env = gh_cli
    run_gh(env, "workflow", "run", "ci.yml", "--repo", "acme/payments-api")
    repo = double.repo("acme", "payments-api")
    assert repo is not None
    assert repo.dispatches == [
        {
            "workflow_id": repo.dispatches[0]["workflow_id"],
            "ref": "main",
            "inputs": {},
            "actor": "octocat",
        }
    ]
    assert (
        "POST",
        f"/api/v3/repos/acme/payments-api/actions/workflows/{repo.dispatches[0]['workflow_id']}/dispatches",
    ) in [(r.method, r.path) for r in double.requests]
    queued = [run for run in repo.runs.values() if run.event == "workflow_dispatch"]
    assert len(queued) == 1 and queued[0].status == "queued"
    listed = run_gh(env, "run", "list", "--repo", "acme/payments-api", "--json", "status,event")
    assert {"status": "queued", "event": "workflow_dispatch"} in json.loads(listed.stdout)
    by_name = run_gh(env, "workflow", "run", "CI", "--repo", "acme/payments-api")
    assert by_name.returncode == 0 and len(repo.dispatches) == 2


@pytest.mark.integration
def test_gh_with_host_in_repo_argument(gh_cli: tuple[GitHubDouble, dict[str, str]]) -> None:
    double, env = gh_cli
    env = {k: v for k, v in env.items() if k != "GH_HOST"}
    result = run_gh(
        env,
        "pr",
        "list",
        "--repo",
        f"localhost:{double.port}/acme/payments-api",
        "--json",
        "number",
    )
    assert json.loads(result.stdout) == [{"number": 4}, {"number": 3}]
