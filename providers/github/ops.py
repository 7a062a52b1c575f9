"""The github operations: REST and GraphQL over :mod:`providers.github.client`, CLI over gh."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote as _quote

from providers.github import endpoints as ep
from providers.github.client import GitHubHTTP, build_body, dumps
from runtime.provider import (
    ApiRoute,
    BoundCall,
    Decision,
    Inspection,
    Operation,
    RunContext,
    StepEnvironment,
    StepError,
    StepOutcome,
)

REPO_SUMMARY_QUERY = """query RepoSummary($owner: String!, $name: String!) {
  repository(owner: $owner, name: $name) {
    nameWithOwner
    description
    visibility
    defaultBranchRef { name }
    stargazerCount
    forkCount
    issues(states: OPEN) { totalCount }
    pullRequests(states: OPEN) { totalCount }
    latestRelease { tagName name publishedAt }
    primaryLanguage { name }
  }
}"""

# Every REST route and method the provider sends, for the conformance test against
# GitHub's published OpenAPI description.
REST_ROUTES: tuple[tuple[str, str], ...] = (
    ("GET", "/user"),
    ("GET", "/user/orgs"),
    ("GET", "/notifications"),
    ("GET", "/orgs/{org}/teams"),
    ("GET", "/orgs/{org}/repos"),
    ("GET", "/user/repos"),
    ("GET", "/repos/{owner}/{repo}"),
    ("POST", "/user/repos"),
    ("POST", "/orgs/{org}/repos"),
    ("GET", "/orgs/{org}/issues"),
    ("GET", "/issues"),
    ("GET", "/repos/{owner}/{repo}/contents/{path}"),
    ("PUT", "/repos/{owner}/{repo}/contents/{path}"),
)
# Routes `preflight --live` reads (besides GET /user): does the host answer at all.
PROBE_ROUTES: tuple[tuple[str, str], ...] = (("GET", "/"),)
GRAPHQL_QUERIES: tuple[str, ...] = (REPO_SUMMARY_QUERY,)


# -- shared plumbing ------------------------------------------------------------------------


def context_values(run: RunContext | None) -> tuple[str | None, str | None, str | None]:
    """(context name, github host, organization): from the active context (the host also
    from config.yaml, when no context names one)."""
    if run is None:
        return None, None, None
    host = run.setting("github_host")
    org = run.setting("organization")
    name = next((s.context for s in (host, org) if s is not None and s.context), None)
    return name, host.value if host else None, org.value if org else None


def endpoints_for(environ: Any, run: RunContext | None) -> ep.Endpoints:
    host = run.setting("github_host") if run is not None else None
    if host is None:
        return ep.resolve(environ, None, None)
    if host.context is None:  # config.yaml's
        return ep.resolve(environ, host.value, None, "config.yaml")
    return ep.resolve(environ, host.value, host.context)


class _Run:
    """What the github provider keeps for one run (RunContext.state): its endpoints,
    resolved once, and an HTTP client per API base URL.

    The plan shows the host and every step of the run then talks to that host,
    even if the active context changes meanwhile.
    """

    def __init__(self) -> None:
        self.endpoints: ep.Endpoints | None = None
        self.clients: dict[str, GitHubHTTP] = {}


def run_endpoints(environ: Any, run: RunContext) -> ep.Endpoints:
    state = run.state(_Run)
    if state.endpoints is None:
        state.endpoints = endpoints_for(environ, run)
    return state.endpoints


def client(env: StepEnvironment) -> GitHubHTTP:
    run = env.run
    endpoints = run_endpoints(env.environ, run)
    clients = run.state(_Run).clients
    if endpoints.api not in clients:
        token = run.credential("github", endpoints.host)
        http = GitHubHTTP(endpoints, token, env.environ, check_host=env.check_host)
        clients[endpoints.api] = http
        run.on_close(http.close)
    found = clients[endpoints.api]
    found.limit_step(env.deadline, env.timeout)  # the run's client, this step's time
    return found


# What quote(..., safe="") leaves as it is: every owner, repository and organization
# name GitHub allows. Such a value skips quote(), ~10 us a step (bench/, figure 7d).
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")


def quote(value: str, safe: str = "") -> str:
    """A path segment, percent-encoded as ``urllib.parse.quote(value, safe="")``."""
    if not safe and _UNRESERVED.fullmatch(value):
        return value
    return _quote(value, safe=safe)


def _split_repo(value: str) -> tuple[str, str]:
    owner, sep, name = value.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise StepError(f"'{value}' is not OWNER/REPO", hint="write the repository as owner/name")
    return quote(owner, safe=""), quote(name, safe="")


def _limit(call: BoundCall) -> int | None:
    raw = call.option("limit")
    if raw is None:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise StepError(f"limit={raw} is not a positive integer")
    return int(raw)


def _list_params(call: BoundCall, names: tuple[str, ...]) -> dict[str, str]:
    params = {k: v for k, v in call.options if k in names}
    per_page = call.option("per_page")
    if per_page is not None:
        params["per_page"] = per_page
    return params


def _org(call: BoundCall, env: StepEnvironment) -> str | None:
    org = call.positionals.get("ORG")
    if org:
        return org
    return context_values(env.run)[2]


# -- rendering ------------------------------------------------------------------------------


def _table(
    items: list[dict[str, Any]], columns: list[tuple[str, Callable[[dict[str, Any]], Any]]]
) -> str:
    rows = [[h for h, _ in columns]] + [
        [("" if f(i) is None else str(f(i))).replace("\n", " ")[:70] for _, f in columns]
        for i in items
    ]
    widths = [max(len(r[c]) for r in rows) for c in range(len(columns))]
    lines = ["  ".join(cell.ljust(widths[c]) for c, cell in enumerate(r)).rstrip() for r in rows]
    lines.append(f"({len(items)} item{'s' if len(items) != 1 else ''})")
    return "\n".join(lines)


def _summary(item: dict[str, Any], keys: list[str]) -> str:
    lines = []
    for key in keys:
        value = item.get(key)
        if value is not None and value != "":
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def _ok(data: Any, text: str, status: int) -> StepOutcome:
    return StepOutcome(ok=True, data=data, output=text, http_status=status)


# -- REST operations ------------------------------------------------------------------------


def user_get(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    r = client(env).request("GET", "/user")
    return _ok(
        r.data, _summary(r.data, ["login", "name", "company", "email", "html_url"]), r.status
    )


def org_list(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    items, status = client(env).paginate("/user/orgs", _list_params(call, ()), _limit(call))
    return _ok(
        items,
        _table(
            items,
            [("LOGIN", lambda i: i.get("login")), ("DESCRIPTION", lambda i: i.get("description"))],
        ),
        status,
    )


def notification_list(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    items, status = client(env).paginate(
        "/notifications", _list_params(call, ("all", "participating")), _limit(call)
    )
    return _ok(
        items,
        _table(
            items,
            [
                ("REPOSITORY", lambda i: (i.get("repository") or {}).get("full_name")),
                ("REASON", lambda i: i.get("reason")),
                ("TITLE", lambda i: (i.get("subject") or {}).get("title")),
            ],
        ),
        status,
    )


def team_list(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    org = quote(call.positionals["ORG"], safe="")
    items, status = client(env).paginate(f"/orgs/{org}/teams", _list_params(call, ()), _limit(call))
    return _ok(
        items,
        _table(items, [("SLUG", lambda i: i.get("slug")), ("NAME", lambda i: i.get("name"))]),
        status,
    )


def repo_list(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    org = _org(call, env)
    path = f"/orgs/{quote(org, safe='')}/repos" if org else "/user/repos"
    items, status = client(env).paginate(
        path, _list_params(call, ("type", "sort", "direction")), _limit(call)
    )
    return _ok(
        items,
        _table(
            items,
            [
                ("REPOSITORY", lambda i: i.get("full_name")),
                (
                    "VISIBILITY",
                    lambda i: i.get("visibility") or ("private" if i.get("private") else "public"),
                ),
                ("DESCRIPTION", lambda i: i.get("description")),
            ],
        ),
        status,
    )


def repo_view(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    owner, name = _split_repo(call.positionals["OWNER/REPO"])
    r = client(env).request("GET", f"/repos/{owner}/{name}")
    return _ok(
        r.data,
        _summary(
            r.data,
            [
                "full_name",
                "description",
                "visibility",
                "default_branch",
                "language",
                "stargazers_count",
                "forks_count",
                "open_issues_count",
                "html_url",
            ],
        ),
        r.status,
    )


def repo_create(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    org = call.option("org")
    pairs = [(k, v) for k, v in call.options if k != "org"]
    if not org:
        # POST /user/repos has no `visibility`: GitHub would ignore it and create a public
        # repository, so it is translated to `private` (internal exists only in organizations).
        visibility = call.option("visibility")
        if visibility is not None:
            if visibility not in ("private", "public"):
                raise StepError(
                    f"visibility={visibility} is only possible in an organization",
                    hint="add org=ORG, or use visibility=private / public",
                )
            pairs = [(k, v) for k, v in pairs if k not in ("visibility", "private")]
            pairs.append(("private", "true" if visibility == "private" else "false"))
    body = build_body(pairs)
    path = f"/orgs/{quote(org, safe='')}/repos" if org else "/user/repos"
    r = client(env).request("POST", path, body=body)
    return _ok(r.data, f"created {r.data.get('full_name')} ({r.data.get('html_url')})", r.status)


def issue_list(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    org = _org(call, env)
    path = f"/orgs/{quote(org, safe='')}/issues" if org else "/issues"
    names = ("filter", "state", "labels", "sort", "direction", "since")
    items, status = client(env).paginate(path, _list_params(call, names), _limit(call))
    return _ok(
        items,
        _table(
            items,
            [
                (
                    "ISSUE",
                    lambda i: (
                        f"{(i.get('repository') or {}).get('full_name', '')}#{i.get('number')}"
                    ),
                ),
                ("STATE", lambda i: i.get("state")),
                ("TITLE", lambda i: i.get("title")),
            ],
        ),
        status,
    )


def file_put(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    owner, name = _split_repo(call.positionals["OWNER/REPO"])
    path = "/".join(quote(part, safe="") for part in call.positionals["PATH"].strip("/").split("/"))
    if not path:
        raise StepError("PATH is empty", hint="name the file inside the repository")
    branch = call.option("branch")
    http = client(env)
    route = f"/repos/{owner}/{name}/contents/{path}"
    current = http.request(
        "GET", route, params={"ref": branch} if branch else None, ok_statuses=(404,)
    )
    body: dict[str, Any] = {
        "message": call.option("message") or "",
        "content": base64.b64encode((call.option("content") or "").encode("utf-8")).decode("ascii"),
    }
    if branch:
        body["branch"] = branch
    existed = current.status == 200 and isinstance(current.data, dict) and "sha" in current.data
    if existed:
        body["sha"] = current.data["sha"]
    r = http.request("PUT", route, body=body)
    verb = "updated" if existed else "created"
    commit = (r.data or {}).get("commit", {}).get("sha", "") if isinstance(r.data, dict) else ""
    return _ok(
        r.data,
        f"{verb} {call.positionals['PATH']} in {call.positionals['OWNER/REPO']} (commit {commit[:12]})",
        r.status,
    )


def api(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    method = call.positionals["METHOD"].upper()
    if method not in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
        raise StepError(
            f"'{method}' is not an HTTP method", hint="use GET, POST, PUT, PATCH or DELETE"
        )
    path = call.positionals["PATH"]
    if path.startswith(("http://", "https://")):
        raise StepError(
            "PATH must be a route such as /repos/OWNER/REPO, not a URL",
            hint="the host comes from the context or GITHUB_API_URL",
        )
    http = client(env)
    if method in ("GET", "HEAD", "DELETE"):
        r = http.request(method, path, params=list(call.options) or None)
    else:
        r = http.request(method, path, body=build_body(list(call.options)))
    text = dumps(r.data) if r.data is not None else f"{r.status}"
    return _ok(r.data, text, r.status)


# -- GraphQL ----------------------------------------------------------------------------------


def repo_summary(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    owner, name = call.positionals["OWNER/REPO"].partition("/")[::2]
    if not owner or not name:
        raise StepError(f"'{call.positionals['OWNER/REPO']}' is not OWNER/REPO")
    r = client(env).graphql(REPO_SUMMARY_QUERY, {"owner": owner, "name": name})
    repo = (r.data.get("data") or {}).get("repository")
    if repo is None:
        raise StepError(f"repository {owner}/{name} not found", http_status=r.status)
    summary = {
        "repository": repo.get("nameWithOwner"),
        "description": repo.get("description"),
        "visibility": repo.get("visibility"),
        "default_branch": (repo.get("defaultBranchRef") or {}).get("name"),
        "stars": repo.get("stargazerCount"),
        "forks": repo.get("forkCount"),
        "open_issues": (repo.get("issues") or {}).get("totalCount"),
        "open_pull_requests": (repo.get("pullRequests") or {}).get("totalCount"),
        "latest_release": (repo.get("latestRelease") or {}).get("tagName"),
        "language": (repo.get("primaryLanguage") or {}).get("name"),
    }
    return _ok(summary, _summary(summary, list(summary)), r.status)


def graphql(call: BoundCall, env: StepEnvironment) -> StepOutcome:
    variables = build_body(list(call.options))
    r = client(env).graphql(call.positionals["QUERY"], variables)
    data = r.data.get("data") if isinstance(r.data, dict) else r.data
    return _ok(data, dumps(data), r.status)


HANDLERS: dict[str, Callable[[BoundCall, StepEnvironment], StepOutcome]] = {
    "user get": user_get,
    "org list": org_list,
    "notification list": notification_list,
    "team list": team_list,
    "repo list": repo_list,
    "repo view": repo_view,
    "repo create": repo_create,
    "issue list": issue_list,
    "file put": file_put,
    "api": api,
    "repo summary": repo_summary,
    "graphql": graphql,
}


def execute(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    if operation.transport == "cli":
        from providers.github.gh import run_gh

        endpoints = run_endpoints(env.environ, env.run)
        return run_gh(operation, call, env, endpoints)
    return HANDLERS[operation.name](call, env)


def inspect(operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
    """Hosts, credential host and where implicit values come from. No network, no writes."""
    inspection = Inspection()
    try:
        endpoints = run_endpoints(run.environ, run)
    except StepError as exc:
        inspection.decision = Decision(False, "github endpoints", exc.message)
        return inspection
    inspection.credential_host = endpoints.host
    inspection.hosts = endpoints.network_hosts
    inspection.notes.append(f"host {endpoints.host} ({endpoints.host_source})")
    _inspect_routes(operation, call, inspection)
    if operation.name in ("repo list", "issue list") and not call.positionals.get("ORG"):
        name, _, org = context_values(run)
        if org:
            inspection.notes.append(f"ORG = {org} (from context '{name}')")
        else:
            target = "/user/repos" if operation.name == "repo list" else "/issues"
            inspection.notes.append(f"no ORG and no context organization: GET {target}")
    return inspection


# The args each REST operation puts into its route, and how (routes.value_problems).
ROUTE_ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    "team list": (("ORG", "org"),),
    "repo list": (("ORG", "org"),),
    "issue list": (("ORG", "org"),),
    "repo view": (("OWNER/REPO", "owner/repo"),),
    "file put": (("OWNER/REPO", "owner/repo"), ("PATH", "path")),
}


def _inspect_routes(operation: Operation, call: BoundCall, inspection: Inspection) -> None:
    """Input values that would change a REST route, and the documented route of ``api``."""
    from providers.github import routes

    if operation.name == "api":
        problems, route, note = routes.check_api(call)
        inspection.problems.extend(problems)
        if route is not None:
            method = call.positionals["METHOD"].upper()
            inspection.route = ApiRoute(method, route.path, route.operation_id)
            inspection.notes.append(f"route: {method} {route.path} ({route.operation_id})")
        if note is not None:
            inspection.notes.append(note)
        return
    for name, kind in ROUTE_ARGS.get(operation.name, ()):
        index = call.binding.positionals.get(name, -1) if call.binding else -1
        inspection.problems.extend(routes.value_problems(index, call.pieces_of(name), kind))
    if operation.name == "repo create":
        index = next((i for k, i in call.binding.options if k == "org"), -1) if call.binding else -1
        inspection.problems.extend(routes.value_problems(index, call.option_pieces("org"), "org"))


def check_token(environ: Any, run: RunContext, host: str, token: str) -> dict[str, Any]:
    """GET /user with ``token`` on ``host``: login and granted scopes (X-OAuth-Scopes)."""
    endpoints = ep.resolve(environ, host, "--host")
    http = GitHubHTTP(endpoints, token, environ)
    try:
        r = http.request("GET", "/user")
    finally:
        http.close()
    raw = r.headers.get("x-oauth-scopes")
    scopes = [s.strip() for s in raw.split(",") if s.strip()] if raw is not None else None
    login = r.data.get("login") if isinstance(r.data, dict) else None
    return {"login": login, "scopes": scopes}


def ping(environ: Any, run: RunContext, host: str, timeout: float, max_bytes: int) -> int:
    """Read-only and bounded: GET the REST root of the host that serves ``host``; its status."""
    import httpx

    from providers.github.client import ssl_context

    endpoints = endpoints_for(environ, run)
    url = endpoints.api + "/" if host in endpoints.network_hosts else f"https://{host}/"
    try:
        with (
            httpx.Client(timeout=timeout, verify=ssl_context(environ), trust_env=False) as http,
            http.stream("GET", url) as response,
        ):
            read = 0
            for chunk in response.iter_bytes():
                read += len(chunk)
                if read >= max_bytes:
                    break
            return response.status_code
    except httpx.HTTPError as exc:
        raise StepError(f"{host} did not answer ({type(exc).__name__})") from None
