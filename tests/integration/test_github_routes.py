"""REST routes: only documented ones, and an input never rewrites one (issue 18, item 3).

* ``providers/github/routes.json`` is what ``python -m providers.github.routes_build``
  makes from the installed ``@octokit/openapi`` (api.github.com and the newest GHES),
  and every route the REST operations declare (``routes=``) is in it.
* Through the real CLI against the GitHub double: an input value holding ``?``, ``#``,
  ``%``, whitespace or a control character, making a ``.``/``..`` segment, an
  OWNER/REPO with a second ``/``, an ORG with one, or filling a fixed segment of an
  ``api`` route is refused at plan time (exit 2, naming the input, at the arg's
  FILE:LINE:COL) and no request reaches the double. ``PUT /repos/${repo}/topics`` with
  ``repo=acme/app/collaborators/mallory#`` no longer adds a collaborator.
* An undocumented literal ``api`` route is a validation error with the nearest documented
  route as hint; a substituted one is refused at plan time.
* Plan (text and JSON), execute JSON and the audit ``step`` record name the documented
  operation (``repos/get-all-topics``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.github import OPERATIONS, routes, routes_build
from providers.github.ops import PROBE_ROUTES
from tests.conftest import Result, capability, check_schema, write
from tests.github_double import GitHubDouble, SchemaNotInstalledError
from tests.github_double.schema import openapi_path

TOKEN = "ghp_" + "R0utes" * 6 + "x"
REST_ROUTES = [route for op in OPERATIONS for route in op.rest_routes]

STEP = """\
version: v1
inputs:
  v:
    required: true
workflow:
  - provider: github
    args: [{args}]
"""

LITERAL = """\
version: v1
workflow:
  - provider: github
    args: [{args}]
"""


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")
        double.add_repo("acme", "app", topics=["payments"])
        yield double


def position(path: Path, needle: str) -> tuple[int, int]:
    """1-based line and column of ``needle`` in the file (where the arg is written)."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return number, line.index(needle) + 1
    raise AssertionError(f"{needle!r} is not in {path}")


def run_cap(
    cli: Callable[..., Result], gh: GitHubDouble, command: str, name: str, value: str
) -> Result:
    gh.reset_counters()
    return cli(
        "--output",
        "json",
        "capability",
        command,
        name,
        "--input",
        f"v={value}",
        extra_env=gh.runtime_env(),
    )


def assert_refused(result: Result, gh: GitHubDouble, path: Path, arg: str) -> dict[str, Any]:
    """Exit 2, nothing sent, the input named, the problem at the arg's position."""
    assert result.code == 2, result.stdout + result.stderr
    assert gh.requests == [], [f"{r.method} {r.path}" for r in gh.requests]
    doc: dict[str, Any] = result.json()
    check_schema(doc, "error")
    assert "input 'v'" in doc["error"]["message"], doc["error"]
    (problem,) = doc["error"]["problems"]
    assert (problem["line"], problem["column"]) == position(path, arg), problem
    return doc


# -- the collaborator attack and values that cannot be part of a route ------------------------


@pytest.mark.parametrize(
    "value", ["acme/app/collaborators/mallory#", "acme/app/collaborators/mallory"]
)
def test_an_input_cannot_turn_replace_topics_into_add_collaborator(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble, value: str
) -> None:
    path = write(
        work / "topics.md",
        capability(STEP.format(args='api, PUT, "/repos/${v}/topics", "names[]=x"')),
    )
    assert_refused(
        run_cap(cli, gh, "execute", "topics.md", value), gh, path, '"/repos/${v}/topics"'
    )


TOPICS = 'api, PUT, "/repos/${v}/topics", "names[]=x"'
FILE_PATH = 'file, put, acme/app, "${v}", message=m, content=c'
FILE_REPO = 'file, put, "${v}", README.md, message=m, content=c'


@pytest.mark.parametrize(
    ("args", "value"),
    [
        (TOPICS, "acme/app?x=1"),
        (TOPICS, "acme/app#frag"),
        (TOPICS, "acme/%2e%2e"),
        (TOPICS, "acme/%2E%2E/user"),
        (TOPICS, "acme/.."),
        (TOPICS, "../user/acme"),
        (TOPICS, "acme/app x"),
        (TOPICS, "acme/app\t"),
        (TOPICS, "acme/app\u2028"),
        (TOPICS, "acme/app\x01"),
        (TOPICS, "acme/app\x7f"),
        ('api, GET, "/repos/acme/${v}"', ".."),
        ('api, GET, "/repos/acme/app/${v}"', "."),
        (FILE_PATH, "docs/../../collaborators/mallory"),
        (FILE_PATH, "docs/%2e%2e/x.md"),
        (FILE_PATH, "a b.md"),
        (FILE_PATH, "a.md?ref=x"),
        (FILE_REPO, "acme/app/x"),
        (FILE_REPO, "acme/.."),
        (FILE_REPO, "acme"),
        ('repo, view, "${v}"', "acme/app#x"),
        ('repo, view, "${v}"', "../user"),
        ('team, list, "${v}"', "acme/x"),
        ('team, list, "${v}"', ".."),
        ('team, list, "${v}"', "ac\nme"),
        ('repo, list, "${v}"', ""),
        ('repo, create, name=x, "org=${v}"', "acme/../user"),
        ('repo, create, name=x, "org=${v}"', "acme?x"),
    ],
)
def test_a_value_that_would_change_a_route_is_refused_at_plan_time(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble, args: str, value: str
) -> None:
    path = write(work / "route.md", capability(STEP.format(args=args)))
    arg = next(a for a in re.findall(r'"[^"]*\$\{v\}[^"]*"', args))
    doc = assert_refused(run_cap(cli, gh, "execute", "route.md", value), gh, path, arg)
    # an empty value is refused as empty before it could be part of a route
    code = "empty-input" if value == "" else "input-in-route"
    assert doc["error"]["code"] == code
    # plan refuses the same way (nothing is sent by a plan in any case)
    plan = run_cap(cli, gh, "plan", "route.md", value)
    assert (plan.code, plan.json()["error"]["code"]) == (2, code)


def test_values_that_fit_their_slot_still_run(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble
) -> None:
    """The same capabilities with ordinary values: nothing is refused that belongs."""
    cases = [
        (TOPICS, "acme/app"),
        (FILE_PATH, "docs/guide/intro.md"),
        (FILE_REPO, "acme/app"),
        ('repo, view, "${v}"', "acme/app"),
        ('team, list, "${v}"', "acme"),
        ('api, GET, "/repos/acme/app/contents/${v}"', "docs/a.md"),
    ]
    for args, value in cases:
        write(work / "ok.md", capability(STEP.format(args=args)))
        result = run_cap(cli, gh, "plan", "ok.md", value)
        assert result.code == 0, (args, value, result.stdout, result.stderr)


# -- documented routes only -------------------------------------------------------------------


def _validates(cli: Callable[..., Result], work: Path, args: str) -> None:
    """A one-step capability of ``args`` (a ${v} input when they name one) validates."""
    body = (STEP if "${" in args else LITERAL).format(args=args)
    write(work / "ok.md", capability(body))
    result = cli("capability", "validate", "ok.md")
    assert result.code == 0, result.stdout + result.stderr


def _the_problem(cli: Callable[..., Result], name: str) -> dict[str, Any]:
    """The one problem `capability validate --output json` finds in ``name`` (exit 2)."""
    result = cli("--output", "json", "capability", "validate", name)
    assert result.code == 2, result.stdout
    doc = result.json()
    check_schema(doc, "validate")
    (problem,) = doc["capabilities"][0]["problems"]
    return problem


def test_an_undocumented_literal_route_is_a_validation_error(
    cli: Callable[..., Result], work: Path
) -> None:
    path = write(
        work / "lit.md",
        capability(LITERAL.format(args='api, PUT, "/repos/acme/app/topic", "names[]=x"')),
    )
    line, column = position(path, '"/repos/acme/app/topic"')
    text = cli("capability", "validate", "lit.md")
    assert text.code == 2
    assert f"lit.md:{line}:{column}: error: " in text.stdout + text.stderr
    problem = _the_problem(cli, "lit.md")
    assert (problem["line"], problem["column"], problem["code"]) == (
        line,
        column,
        "undocumented-route",
    )
    assert "/repos/{owner}/{repo}/topics (repos/replace-all-topics)" in problem["hint"]


@pytest.mark.parametrize(
    ("args", "needle", "code"),
    [
        ("api, PUTT, /user", "PUTT", "bad-method"),
        ("api, GET, /repos/acme/app/collaborator", "/repos", "undocumented-route"),
        ("api, DELETE, /user/repos", "/user", "undocumented-route"),
        ("api, GET, /repos/acme/../user", "/repos", "undocumented-route"),
        ("api, GET, 'https://api.github.com/user'", "'https", "undocumented-route"),
    ],
)
def test_other_undocumented_literal_calls_are_validation_errors(
    cli: Callable[..., Result], work: Path, args: str, needle: str, code: str
) -> None:
    path = write(work / "lit.md", capability(LITERAL.format(args=args)))
    problem = _the_problem(cli, "lit.md")
    assert (problem["line"], problem["column"], problem["code"]) == (
        *position(path, needle),
        code,
    )


@pytest.mark.parametrize(
    "args",
    [
        "api, GET, /user",
        "api, get, '/orgs/acme/repos?type=all'",
        "api, HEAD, /repos/acme/app",
        "api, GET, /repos/acme/app/contents/docs/guide/intro.md",
        "api, GET, /repos/acme/app/git/ref/heads/feature/x",
        "api, PUT, /repos/acme/app/topics, 'names[]=x'",
        "api, DELETE, /repos/acme/app",
        "api, GET, '/repos/acme/app/compare/main...feature'",
        'api, GET, "/repos/${v}/topics"',
    ],
)
def test_documented_literal_routes_validate(
    cli: Callable[..., Result], work: Path, args: str
) -> None:
    _validates(cli, work, args)


@pytest.mark.parametrize(
    ("args", "value", "message"),
    [
        ('api, GET, "/repos/acme/app/${v}"', "topic", "is not a route GitHub documents"),
        ('api, PUT, "/repos/${v}/topics", "names[]=x"', "acme/app/x", "not a route GitHub"),
        # an input may fill parameters only, never a fixed segment of the route
        ('api, GET, "/repos/acme/app/${v}"', "topics", "a fixed segment of GET"),
        ('api, GET, "/${v}"', "user/repos", "a fixed segment of GET"),
        (
            'api, GET, "/repos/acme/app/branches/${v}"',
            "main/protection",
            "'protection', a fixed segment of GET /repos/{owner}/{repo}/branches/{branch}/protection",
        ),
        ('api, "${v}", /repos/acme/app', "PUTT", "is not an HTTP method"),
    ],
)
def test_a_substituted_route_must_be_documented(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble, args: str, value: str, message: str
) -> None:
    path = write(work / "sub.md", capability(STEP.format(args=args)))
    assert cli("capability", "validate", "sub.md").code == 0  # not known before plan time
    arg = next(a for a in re.findall(r'"[^"]*\$\{v\}[^"]*"', args))
    doc = assert_refused(run_cap(cli, gh, "execute", "sub.md", value), gh, path, arg)
    assert message in doc["error"]["message"], doc["error"]


def test_a_typed_api_call_to_an_undocumented_route_is_refused(
    cli: Callable[..., Result], gh: GitHubDouble
) -> None:
    result = cli(
        "github", "api", "PUT", "/repos/acme/app/topic", "names[]=x", extra_env=gh.runtime_env()
    )
    assert result.code == 2
    assert gh.requests == []
    assert "/repos/{owner}/{repo}/topics (repos/replace-all-topics)" in result.stderr
    ok = cli("github", "api", "GET", "/repos/acme/app/topics", extra_env=gh.runtime_env())
    assert ok.code == 0, ok.stderr


# -- an internal repository only where GitHub makes one -------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        "repo, create, name=x, visibility=internal",
        "repo, create, name=x, visibility=internal, org=",
    ],
    ids=["no-org", "empty-org"],
)
def test_a_literal_internal_repository_without_org_is_a_validation_error(
    cli: Callable[..., Result], work: Path, args: str
) -> None:
    path = write(work / "internal.md", capability(LITERAL.format(args=args)))
    text = cli("capability", "validate", "internal.md")
    assert text.code == 2
    line, column = position(path, "visibility=internal")
    assert f"internal.md:{line}:{column}: error: step 1: visibility=internal " in text.stdout
    problem = _the_problem(cli, "internal.md")
    assert (problem["line"], problem["column"], problem["code"]) == (
        line,
        column,
        "missing-option",
    )
    assert "GitHub makes internal repositories only in organizations" in problem["message"]
    assert problem["hint"].startswith("add org=ORG")
    assert "visibility=private or visibility=public" in problem["hint"]


@pytest.mark.parametrize(
    "args",
    [
        "repo, create, name=x, visibility=internal, org=acme",
        'repo, create, name=x, visibility=internal, "org=${v}"',
        'repo, create, name=x, "visibility=${v}"',
        "repo, create, name=x, visibility=private",
    ],
)
def test_an_internal_repository_that_may_have_an_org_validates(
    cli: Callable[..., Result], work: Path, args: str
) -> None:
    _validates(cli, work, args)


@pytest.mark.parametrize("command", ["plan", "execute"])
def test_an_internal_repository_from_an_input_without_org_is_refused_at_plan_time(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble, command: str
) -> None:
    path = write(
        work / "create.md", capability(STEP.format(args='repo, create, name=x, "visibility=${v}"'))
    )
    doc = assert_refused(
        run_cap(cli, gh, command, "create.md", "internal"), gh, path, '"visibility=${v}"'
    )
    assert doc["error"]["message"] == (
        "visibility=internal (from input 'v') without org=: GitHub makes internal "
        "repositories only in organizations (step 1); nothing ran"
    )
    (problem,) = doc["error"]["problems"]
    assert problem["message"].startswith("step 1 (github repo create): visibility=internal")
    assert problem["code"] == "missing-option"
    # another value of the same input is no internal repository: it runs
    assert run_cap(cli, gh, "plan", "create.md", "private").code == 0


def test_a_typed_internal_repository_without_org_is_refused_before_any_request(
    cli: Callable[..., Result], gh: GitHubDouble
) -> None:
    for org in ((), ("org=",)):
        gh.reset_counters()
        result = cli(
            *("-o", "json", "github", "repo", "create", "name=x", "visibility=internal", *org),
            extra_env=gh.runtime_env(),
        )
        assert result.code == 2, result.stdout + result.stderr
        assert gh.requests == []
        error = result.json()["error"]
        assert error["code"] == "missing-option"  # as in a capability
        assert error["message"].startswith("visibility=internal with")
        assert "only in organizations" in error["message"]
        assert "add org=ORG" in error["hint"]
    # in an organization it is made, internal
    result = cli(
        *("-o", "json", "github", "repo", "create", "name=x", "visibility=internal", "org=acme"),
        extra_env=gh.runtime_env(),
    )
    assert result.code == 0, result.stdout + result.stderr
    assert result.json()["steps"][0]["data"]["visibility"] == "internal"
    assert [f"{r.method} {r.path}" for r in gh.requests] == ["POST /orgs/acme/repos"]


def test_only_the_organization_route_takes_an_internal_visibility() -> None:
    """What the refusal rests on, in GitHub's OpenAPI descriptions: POST /user/repos has
    no visibility; POST /orgs/{org}/repos takes internal on GitHub Enterprise (Cloud and
    Server), and only public or private on api.github.com."""

    def visibility(description: str, route: str) -> Any:
        try:
            path = openapi_path(description)
        except SchemaNotInstalledError as exc:
            if os.environ.get("RUNTIME_REQUIRE_INTEGRATION") == "1":
                pytest.fail(str(exc))
            pytest.skip(str(exc))
        document = json.loads(path.read_text(encoding="utf-8"))
        body = document["paths"][route]["post"]["requestBody"]["content"]["application/json"]
        return body["schema"]["properties"].get("visibility")

    for description in ("api.github.com", "ghec", "ghes-3.19"):
        assert visibility(description, "/user/repos") is None, description
    assert visibility("api.github.com", "/orgs/{org}/repos")["enum"] == ["public", "private"]
    for description in ("ghec", "ghes-3.19"):
        assert "internal" in visibility(description, "/orgs/{org}/repos")["enum"], description


# -- the operation id in plan, execute and audit ----------------------------------------------


def test_plan_execute_and_audit_name_the_documented_operation(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble, home: Path
) -> None:
    write(work / "topics.md", capability(STEP.format(args='api, GET, "/repos/${v}/topics"')))
    route = {
        "method": "GET",
        "path": "/repos/{owner}/{repo}/topics",
        "operation_id": "repos/get-all-topics",
    }
    text = cli(
        "capability",
        "plan",
        "topics.md",
        "--input",
        "v=acme/app",
        "--verbose",
        extra_env=gh.runtime_env(),
    )
    assert text.code == 0, text.stderr
    assert "route: GET /repos/{owner}/{repo}/topics (repos/get-all-topics)" in text.stdout

    plan = run_cap(cli, gh, "plan", "topics.md", "acme/app")
    check_schema(plan.json(), "plan")
    assert plan.json()["steps"][0]["route"] == route

    done = run_cap(cli, gh, "execute", "topics.md", "acme/app")
    assert done.code == 0, done.stdout
    doc = done.json()
    check_schema(doc, "execute")
    assert doc["steps"][0]["route"] == route
    assert doc["steps"][0]["data"] == {"names": ["payments"]}

    records = [
        json.loads(line)
        for line in (home / "audit" / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    (step,) = [r for r in records if r["event"] == "step"]
    assert step["route_operation"] == "repos/get-all-topics"

    # an operation without an api route has none
    write(work / "view.md", capability(STEP.format(args='repo, view, "${v}"')))
    view = run_cap(cli, gh, "plan", "view.md", "acme/app")
    assert view.json()["steps"][0]["route"] is None


def test_the_table_loads_only_for_api_steps_and_once(
    cli: Callable[..., Result], work: Path, gh: GitHubDouble
) -> None:
    routes._table.cache_clear()
    routes._bucket.cache_clear()
    write(work / "view.md", capability(STEP.format(args='repo, view, "${v}"')))
    assert run_cap(cli, gh, "plan", "view.md", "acme/app").code == 0
    assert routes._table.cache_info().currsize == 0, "a repo view step read routes.json"
    write(work / "api.md", capability(STEP.format(args='api, GET, "/repos/${v}/topics"')))
    for _ in range(2):
        assert run_cap(cli, gh, "plan", "api.md", "acme/app").code == 0
    info = routes._table.cache_info()
    assert (info.misses, info.currsize) == (1, 1), "routes.json was read more than once"


# -- the table itself -------------------------------------------------------------------------


def test_committed_route_table_is_what_the_generator_makes() -> None:
    try:
        package = openapi_path().parents[1]
    except SchemaNotInstalledError as exc:
        if os.environ.get("RUNTIME_REQUIRE_INTEGRATION") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    made = routes_build.build(package)
    assert made == routes.TABLE.read_text(encoding="utf-8"), (
        "providers/github/routes.json is stale: run `make routes`"
    )


def _example(template: str) -> str:
    """A concrete path of ``template``: 'x' for a parameter, two segments for {path}."""
    return re.sub(r"\{([^}]+)\}", lambda m: "a/b" if m[1] == "path" else "x", template)


@pytest.mark.parametrize(
    ("method", "template"),
    [*REST_ROUTES, *PROBE_ROUTES],
    ids=[f"{m} {r}" for m, r in [*REST_ROUTES, *PROBE_ROUTES]],
)
def test_every_route_the_rest_operations_send_is_documented(method: str, template: str) -> None:
    route = routes.documented(method, template)
    assert route is not None, f"{method} {template} is not in routes.json"
    found = routes.find(method, _example(template)[1:].split("/"))
    assert found is not None and found[0] == route, (method, template, found)
