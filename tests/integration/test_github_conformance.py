"""The github provider against GitHub's published API descriptions.

- REST: every ``(METHOD, route)`` the operations declare (``routes=``)
  exists in the OpenAPI description (npm ``@octokit/openapi``), and every
  request the REST operations really send (run through the CLI against the
  loopback double) matches a declared route, with documented query
  parameters and a JSON body that the route's request schema accepts.
- GraphQL: every document the operations declare (``document=``), and
  every document ``repo summary`` really sends, validates against GitHub's
  schema (npm ``@octokit/graphql-schema``); ``repo summary`` is one request.

The npm data lives in ``tests/npm`` (``npm install --prefix tests/npm --no-audit
--no-fund``). Without it these tests skip, or fail under
``RUNTIME_REQUIRE_INTEGRATION=1``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jsonschema
import pytest
from graphql import GraphQLSchema, OperationDefinitionNode, parse, validate
from graphql.execution.values import get_variable_values

from providers.github import OPERATIONS
from providers.github.ops import PROBE_ROUTES
from tests.conftest import check_schema
from tests.github_double import GitHubDouble, SchemaNotInstalledError, load_schema
from tests.github_double.schema import openapi_path

TOKEN = "ghp_" + "C0nf0rm" * 5 + "x"
# What the operations declare: the routes the REST operations send, the GraphQL documents.
REST_ROUTES = [route for op in OPERATIONS for route in op.rest_routes]
GRAPHQL_QUERIES = [op.document for op in OPERATIONS if op.document is not None]


def require_npm_data(locate: Callable[[], Any]) -> Any:
    """``locate()``, or skip (fail under RUNTIME_REQUIRE_INTEGRATION=1) when npm data is missing."""
    try:
        return locate()
    except SchemaNotInstalledError as exc:
        if os.environ.get("RUNTIME_REQUIRE_INTEGRATION") == "1":
            pytest.fail(f"{exc} (RUNTIME_REQUIRE_INTEGRATION=1 is set, so this is an error)")
        pytest.skip(str(exc))


# -- OpenAPI ------------------------------------------------------------------------------------


@cache
def _openapi(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


@pytest.fixture
def openapi() -> dict[str, Any]:
    return _openapi(require_npm_data(openapi_path))


def resolve(document: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """``node`` with every local ``$ref`` (``#/components/...``) inlined."""
    if depth > 40:
        return node
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = document
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return resolve(document, target, depth + 1)
        return {key: resolve(document, value, depth + 1) for key, value in node.items()}
    if isinstance(node, list):
        return [resolve(document, item, depth + 1) for item in node]
    return node


def operation_of(document: dict[str, Any], method: str, route: str) -> dict[str, Any] | None:
    item = document["paths"].get(route)
    if item is None or method.lower() not in item:
        return None
    op = dict(item[method.lower()])
    op["parameters"] = [
        resolve(document, p) for p in [*item.get("parameters", []), *op.get("parameters", [])]
    ]
    return op


def query_parameters(document: dict[str, Any], method: str, route: str) -> set[str]:
    op = operation_of(document, method, route) or {"parameters": []}
    return {p["name"] for p in op["parameters"] if p["in"] == "query"}


def body_schema(document: dict[str, Any], method: str, route: str) -> dict[str, Any] | None:
    op = operation_of(document, method, route) or {}
    content = (op.get("requestBody") or {}).get("content") or {}
    schema = (content.get("application/json") or {}).get("schema")
    return None if schema is None else resolve(document, schema)


def template_regex(route: str) -> re.Pattern[str]:
    pattern = ""
    for literal, name in re.findall(r"([^{]*)(?:\{([^}]+)\})?", route):
        pattern += re.escape(literal)
        if name:
            pattern += ".+" if name == "path" else "[^/]+"
    return re.compile(pattern + "$")


def templates_for(method: str, path: str) -> list[str]:
    return [r for m, r in REST_ROUTES if m == method and template_regex(r).match(path)]


@pytest.mark.parametrize(
    ("method", "route"),
    [*REST_ROUTES, *PROBE_ROUTES],
    ids=[f"{m} {r}" for m, r in [*REST_ROUTES, *PROBE_ROUTES]],
)
def test_declared_route_is_in_the_openapi_description(
    openapi: dict[str, Any], method: str, route: str
) -> None:
    assert route in openapi["paths"], f"{route} is not a path of GitHub's OpenAPI description"
    documented = sorted(k.upper() for k in openapi["paths"][route] if k != "parameters")
    assert method.lower() in openapi["paths"][route], (
        f"{method} {route} is not documented (documented methods: {', '.join(documented)})"
    )
    assert not openapi["paths"][route][method.lower()].get("deprecated"), (
        f"{method} {route} is deprecated"
    )


def test_route_templates_do_not_overlap() -> None:
    for method, route in REST_ROUTES:
        example = re.sub(r"\{([^}]+)\}", lambda m: "a/b" if m[1] == "path" else "x", route)
        assert templates_for(method, example) == [route], (method, route)


# -- what the REST operations really send -------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One CLI invocation of a REST operation and the routes it must send, in order."""

    args: tuple[str, ...]
    routes: tuple[tuple[str, str], ...]

    @property
    def operation(self) -> str:
        known = sorted((op.name for op in OPERATIONS), key=len, reverse=True)
        joined = " ".join(self.args)
        return next(name for name in known if joined == name or joined.startswith(name + " "))


CONTENTS = "/repos/{owner}/{repo}/contents/{path}"
REPO_OPTIONS = (
    "description=Demo",
    "homepage=https://example.com",
    "private=true",
    "auto_init=true",
    "gitignore_template=Python",
    "license_template=mit",
    "has_issues=true",
    "has_wiki=false",
    "has_projects=false",
    "is_template=false",
)
CALLS: tuple[Call, ...] = (
    Call(("user", "get"), (("GET", "/user"),)),
    Call(("org", "list", "per_page=50", "limit=5"), (("GET", "/user/orgs"),)),
    Call(
        ("notification", "list", "all=true", "participating=false", "per_page=20"),
        (("GET", "/notifications"),),
    ),
    Call(("team", "list", "acme", "per_page=10"), (("GET", "/orgs/{org}/teams"),)),
    Call(
        ("repo", "list", "acme", "type=all", "sort=created", "direction=asc", "per_page=5"),
        (("GET", "/orgs/{org}/repos"),),
    ),
    Call(
        ("repo", "list", "type=owner", "sort=updated", "direction=desc", "limit=3"),
        (("GET", "/user/repos"),),
    ),
    Call(("repo", "view", "acme/site"), (("GET", "/repos/{owner}/{repo}"),)),
    Call(("repo", "create", "name=demo", *REPO_OPTIONS), (("POST", "/user/repos"),)),
    Call(
        ("repo", "create", "name=demo", "org=acme", "visibility=private", *REPO_OPTIONS),
        (("POST", "/orgs/{org}/repos"),),
    ),
    Call(
        (
            "issue",
            "list",
            "acme",
            "filter=all",
            "state=open",
            "labels=bug",
            "sort=created",
            "direction=asc",
            "since=2020-01-01T00:00:00Z",
            "per_page=30",
        ),
        (("GET", "/orgs/{org}/issues"),),
    ),
    Call(("issue", "list", "state=all"), (("GET", "/issues"),)),
    Call(
        ("issue", "list", "acme/site", "--state", "closed", "--label", "bug", "-L", "5"),
        (("GET", "/repos/{owner}/{repo}/issues"),),
    ),
    Call(
        ("release", "list", "acme/site", "per_page=10", "limit=5"),
        (("GET", "/repos/{owner}/{repo}/releases"),),
    ),
    Call(
        ("file", "put", "acme/site", "README.md", "message=Update readme", "content=# Site\n"),
        (("GET", CONTENTS), ("PUT", CONTENTS)),
    ),
    Call(
        (
            "file",
            "put",
            "acme/site",
            "docs/guide/intro.md",
            "message=Add intro",
            "content=Hello",
            "branch=main",
        ),
        (("GET", CONTENTS), ("PUT", CONTENTS)),
    ),
)

REST_OPERATIONS = sorted(op.name for op in OPERATIONS if op.transport == "rest")
#: ``api`` sends whatever route its user names, so it has no declared route to check.
USER_CHOSEN_ROUTES = {"api"}


def test_every_rest_operation_and_route_is_exercised() -> None:
    assert {call.operation for call in CALLS} == set(REST_OPERATIONS) - USER_CHOSEN_ROUTES
    exercised = {route for call in CALLS for route in call.routes}
    assert exercised == set(REST_ROUTES), (
        f"declared but never sent: {sorted(set(REST_ROUTES) - exercised)}; "
        f"sent but not declared: {sorted(exercised - set(REST_ROUTES))}"
    )


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme", description="ACME")
        double.add_team("acme", "platform", name="Platform", members=["octocat"])
        double.add_repo("acme", "site", description="Site", language="Python")
        double.add_file("acme", "site", "README.md", "# old\n")
        double.add_issue("acme", "site", "Broken link", labels=["bug"], assignees=["octocat"])
        double.add_notification("acme", "site", "Review requested")
        yield double


def github_env(gh: GitHubDouble) -> dict[str, str]:
    return {**gh.runtime_env(), "RUNTIME_GITHUB_MAX_WAIT": "1"}


def run_github(cli: Any, gh: GitHubDouble, *args: str) -> dict[str, Any]:
    result = cli("--output", "json", "github", *args, extra_env=github_env(gh))
    assert TOKEN not in result.stdout + result.stderr
    doc: dict[str, Any] = result.json()
    check_schema(doc, "execute")
    step = doc["steps"][0]
    assert result.code == 0, f"{' '.join(args)}: {step['error']} ({step['hint']})"
    return doc


def _call_params() -> list[Any]:
    return [pytest.param(call, id=" ".join(call.args)) for call in CALLS]


@pytest.mark.parametrize("call", _call_params())
def test_rest_operation_sends_only_declared_documented_requests(
    cli: Any, gh: GitHubDouble, openapi: dict[str, Any], call: Call
) -> None:
    run_github(cli, gh, *call.args)
    assert gh.errors == []
    graphql_path = urlsplit(gh.graphql_url).path
    received = [(r.method, r.path) for r in gh.requests if urlsplit(r.path).path != graphql_path]
    assert received, "the operation sent no REST request"

    problems: list[str] = []
    routes: list[tuple[str, str]] = []
    for method, target in received:
        path = urlsplit(target).path
        matches = templates_for(method, path)
        if len(matches) != 1:
            problems.append(f"{method} {path} matches {matches or 'no route'} of REST_ROUTES")
            continue
        route = matches[0]
        routes.append((method, route))
        documented = query_parameters(openapi, method, route)
        for name, _ in parse_qsl(urlsplit(target).query, keep_blank_values=True):
            if name not in documented:
                problems.append(f"{method} {route}: query parameter {name!r} is not documented")
    assert not problems, "\n".join(problems)
    assert routes == list(call.routes)

    # JSON bodies, as the double received them, against the route's request schema.
    for request in gh.requests:
        if not request.body or urlsplit(request.path).path == graphql_path:
            continue
        (route,) = templates_for(request.method, urlsplit(request.path).path)
        schema = body_schema(openapi, request.method, route)
        assert schema is not None, f"{request.method} {route} takes no JSON body"
        body = json.loads(request.body)
        undocumented = sorted(set(body) - set(schema.get("properties", {})))
        assert not undocumented, (
            f"{request.method} {route}: body properties {undocumented} are not in GitHub's "
            f"request schema (documented: {sorted(schema.get('properties', {}))})"
        )
        jsonschema.Draft7Validator(schema).validate(body)


def test_repo_create_private_visibility_without_org_is_not_public(
    cli: Any, gh: GitHubDouble, openapi: dict[str, Any]
) -> None:
    """visibility=private for a personal repository: refused locally, or sent as private=true."""
    result = cli(
        "--output",
        "json",
        "github",
        "repo",
        "create",
        "name=secret",
        "visibility=private",
        extra_env=github_env(gh),
    )
    posts = [r for r in gh.requests if r.method == "POST"]
    if result.code != 0:
        assert posts == [], "a refused step must not have sent the request"
        return
    (post,) = posts
    body = json.loads(post.body)
    schema = body_schema(openapi, "POST", "/user/repos")
    assert schema is not None
    undocumented = sorted(set(body) - set(schema["properties"]))
    assert undocumented == [], f"POST /user/repos: undocumented body properties {undocumented}"
    assert body.get("private") is True, body


def test_rest_request_paths_are_well_formed(cli: Any, gh: GitHubDouble) -> None:
    """Owner, repository and file path segments are percent-encoded, nested paths keep '/'."""
    gh.add_repo("acme", "web.site")
    run_github(cli, gh, "file", "put", "acme/web.site", "docs/a b/ü.md", "message=m", "content=x")
    paths = [r.path for r in gh.requests]
    assert paths == ["/repos/acme/web.site/contents/docs/a%20b/%C3%BC.md"] * 2
    for path in paths:
        assert templates_for("PUT", urlsplit(path).path) == [CONTENTS]


# -- GraphQL ------------------------------------------------------------------------------------


@pytest.fixture
def graphql_schema() -> GraphQLSchema:
    schema: GraphQLSchema = require_npm_data(load_schema)
    return schema


def _operations(query: str) -> list[OperationDefinitionNode]:
    return [d for d in parse(query).definitions if isinstance(d, OperationDefinitionNode)]


@pytest.mark.parametrize("query", GRAPHQL_QUERIES, ids=lambda q: _operations(q)[0].name.value)
def test_declared_graphql_query_validates(graphql_schema: GraphQLSchema, query: str) -> None:
    errors = validate(graphql_schema, parse(query))
    assert errors == [], "\n".join(e.message for e in errors)
    operations = _operations(query)
    assert len(operations) == 1 and operations[0].name is not None, "one named operation"


def test_repo_summary_sends_one_valid_query(
    cli: Any, gh: GitHubDouble, graphql_schema: GraphQLSchema
) -> None:
    gh.add_release("acme", "site", "v1.0.0", name="One")
    gh.add_pull("acme", "site", "Add docs", head="docs")
    gh.reset_counters()
    doc = run_github(cli, gh, "repo", "summary", "acme/site")
    step = doc["steps"][0]

    assert [(r.method, r.path) for r in gh.requests] == [("POST", urlsplit(gh.graphql_url).path)], (
        "repo summary must be exactly one request"
    )
    (payload,) = gh.graphql_queries
    assert payload["query"] in GRAPHQL_QUERIES, "repo summary sent an undeclared GraphQL document"
    document = parse(payload["query"])
    errors = validate(graphql_schema, document)
    assert errors == [], "\n".join(e.message for e in errors)
    (operation,) = _operations(payload["query"])
    coerced = get_variable_values(
        graphql_schema, operation.variable_definitions or (), payload["variables"] or {}
    )
    # graphql-core 3.2 returns a dict or a list of errors, 3.3 a VariableValues or errors.
    assert not isinstance(coerced, list), [e.message for e in coerced]
    values = coerced if isinstance(coerced, dict) else coerced.coerced
    assert values == {"owner": "acme", "name": "site"}

    assert step["http_status"] == 200
    data = step["data"]
    assert data["repository"] == "acme/site"
    assert data["language"] == "Python"
    assert data["latest_release"] == "v1.0.0"
    assert data["open_pull_requests"] == 1
    assert data["open_issues"] == 1
