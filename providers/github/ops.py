"""The github operations: REST and GraphQL over :mod:`providers.github.client`, CLI over gh.

Every handler is named by its operation's declaration (``handler=``) and called as
``handler(operation, call, env)``; what a handler needs to know of its operation (the
routes it sends, the arguments that fill them, its GraphQL document, the columns text
mode shows) it reads from that declaration. A list operation whose items need no
rendering of their own declares :func:`rest_list` and needs no code here.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote as _quote

from providers.github import endpoints as ep
from providers.github.arguments import build_body
from providers.github.client import GitHubHTTP, TokenRejected
from providers.github.payload import dumps
from providers.github.replies import Response
from providers.github.settings import check_settings
from runtime.provider import (
    BoundCall,
    Inspection,
    Operation,
    RunContext,
    StepEnvironment,
    StepError,
    StepOutcome,
)
from runtime.provider.operations import BindingProblem
from runtime.provider.run import context_defaults
from runtime.provider.text import shorten, table

# Routes `preflight --live` reads (besides GET /user): does the host answer at all.
PROBE_ROUTES: tuple[tuple[str, str], ...] = (("GET", "/"),)


# -- shared plumbing ------------------------------------------------------------------------


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
# name GitHub allows. Such a value skips quote(), which is most of a route's cost.
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


def _query(call: BoundCall, *, skip: tuple[str, ...] = ("limit", "json")) -> dict[str, str]:
    """The options that are query parameters: every declared one but ``skip`` (what the
    provider reads itself: how many items, which fields to print)."""
    return {k: v for k, v in call.options if k not in skip}


def _values(operation: Operation, call: BoundCall, run: RunContext) -> dict[str, str]:
    """The arguments that fill routes, by name: as given (the first of an option), else
    the context default the declaration names (ORG: the context's organization)."""
    values = {k: v for k, v in reversed(call.options)}
    values.update(call.positionals)
    for name, setting in context_defaults(operation, call, run).items():
        if setting is not None and setting.value:
            values[name] = setting.value
    return values


_PARAM = re.compile(r"\{([^}]+)\}")


def _route_params(operation: Operation, values: dict[str, str]) -> dict[str, str]:
    """Route parameter -> its encoded value, from the arguments that declare ``in_route``."""
    params: dict[str, str] = {}
    for arg in operation.arguments:
        value = values.get(arg.name)
        if arg.in_route is None or value is None:
            continue
        # one of several (OWNER/REPO or ORG): the one whose form the value has
        in_route = next(
            (a for a in arg.in_route.split("|") if ("/" in a) == ("/" in value)), arg.in_route
        )
        names = _PARAM.findall(in_route)
        if len(names) == 2:  # {owner}/{repo}
            params.update(zip(names, _split_repo(value), strict=True))
        elif names == ["path"]:  # one or more segments
            path = "/".join(quote(part, safe="") for part in value.strip("/").split("/"))
            if not path:
                raise StepError(f"{arg.name} is empty", hint="name the file inside the repository")
            params["path"] = path
        elif value:  # one segment; empty: as if not given (a route without it)
            params[names[0]] = quote(value, safe="")
    return params


def route(operation: Operation, method: str, values: dict[str, str]) -> str:
    """The first declared ``method`` route whose parameters the values fill, filled in."""
    params = _route_params(operation, values)
    for declared, template in operation.rest_routes:
        if declared == method and all(n in params for n in _PARAM.findall(template)):
            return _PARAM.sub(lambda m: params[m.group(1)], template)
    raise StepError(f"'{operation.name}' declares no {method} route for these arguments")


# -- rendering ------------------------------------------------------------------------------


def _table(
    items: list[dict[str, Any]], columns: list[tuple[str, Callable[[dict[str, Any]], Any]]]
) -> str:
    # a list's cells are kept short, the cut shown (the JSON output has the whole values)
    rows = [
        [shorten(" ".join(("" if f(i) is None else str(f(i))).split()), 70) for _, f in columns]
        for i in items
    ]
    lines = table(rows, [h for h, _ in columns])
    lines.append(f"({len(items)} item{'s' if len(items) != 1 else ''})")
    return "\n".join(lines)


def _summary(item: dict[str, Any], keys: list[str]) -> str:
    lines = []
    for key in keys:
        value = item.get(key)
        if value is not None and value != "":
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def _field(path: str) -> Callable[[dict[str, Any]], Any]:
    """A getter of a dotted field (``repository.full_name``) of an item."""

    def get(item: dict[str, Any]) -> Any:
        value: Any = item
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    return get


def _columns(operation: Operation) -> list[tuple[str, Callable[[dict[str, Any]], Any]]]:
    return [(header, _field(path)) for header, path in operation.columns]


def _ok(data: Any, text: str, status: int) -> StepOutcome:
    return StepOutcome(ok=True, data=data, output=text, http_status=status)


# -- REST operations ------------------------------------------------------------------------


def _as_json(operation: Operation, call: BoundCall, data: Any, status: int) -> StepOutcome | None:
    """With ``--json FIELDS`` (``json=``), the answer as gh's ``--json`` gives it: those
    fields of each item, printed as JSON, and the step's data; None without it."""
    names = call.option("json")
    if names is None:
        return None
    from providers.github.fields import select

    selected = select(operation.name, data, names)
    return _ok(selected, dumps(selected), status)


def rest_get(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    """GET the operation's route: one object, summarised by the declared columns."""
    r = client(env).request("GET", route(operation, "GET", _values(operation, call, env.run)))
    if (selected := _as_json(operation, call, r.data, r.status)) is not None:
        return selected
    lines = [
        f"{header}: {value}"
        for header, get in _columns(operation)
        if (value := get(r.data) if isinstance(r.data, dict) else None) not in (None, "")
    ]
    return _ok(r.data, "\n".join(lines), r.status)


def rest_list(
    operation: Operation,
    call: BoundCall,
    env: StepEnvironment,
    columns: list[tuple[str, Callable[[dict[str, Any]], Any]]] | None = None,
    *,
    query: dict[str, str] | None = None,
    keep: Callable[[Any], bool] | None = None,
) -> StepOutcome:
    """GET the operation's route, every page (or up to ``limit=``): a table of the
    declared columns, or the ``--json`` fields. The options but ``limit`` and ``json``
    are the query (unless ``query`` is given); ``keep`` says which items count."""
    path = route(operation, "GET", _values(operation, call, env.run))
    items, status = client(env).paginate(
        path, _query(call) if query is None else query, _limit(call), keep=keep
    )
    if (selected := _as_json(operation, call, items, status)) is not None:
        return selected
    return _ok(items, _table(items, columns or _columns(operation)), status)


def repo_list(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    def visibility(item: dict[str, Any]) -> Any:
        return item.get("visibility") or ("private" if item.get("private") else "public")

    columns = [
        ("REPOSITORY", _field("full_name")),
        ("VISIBILITY", visibility),
        ("DESCRIPTION", _field("description")),
    ]
    return rest_list(operation, call, env, columns)


def issue_list(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    """A repository's issues, an organization's or your own, as gh's ``issue list`` means
    issues: never a pull request (GitHub's issues routes answer those too, marked by their
    ``pull_request`` key), open unless ``state=`` says otherwise. Of an organization, all
    the issues of its repositories you can see as a member (``filter=all``), not only
    those assigned to you, which is GitHub's default for that route."""
    from providers.github.fields import full_name

    def issue(item: dict[str, Any]) -> str:
        return f"{full_name(item) or ''}#{item.get('number')}"

    query = _query(call)
    path = route(operation, "GET", _values(operation, call, env.run))
    if path.startswith("/orgs/"):
        query.setdefault("filter", "all")
    people = [key for key in ("assignee", "creator", "mentioned") if query.get(key) == "@me"]
    if people:
        # gh's @me is the authenticated user, which the route knows only by login
        me = client(env).request("GET", "/user")
        login = me.data.get("login") if isinstance(me.data, dict) else None
        if not isinstance(login, str) or not login:
            raise StepError(
                "GET /user answered with no user in it, so @me is not known",
                hint="name the login instead of @me",
                http_status=me.status,
            )
        query.update((key, login) for key in people)
    columns = [("ISSUE", issue), ("STATE", _field("state")), ("TITLE", _field("title"))]
    return rest_list(
        operation, call, env, columns, query=query, keep=lambda i: "pull_request" not in i
    )


def repo_create(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    org = call.option("org")
    pairs = [(k, v) for k, v in call.options if k != "org"]
    if not org:
        # POST /user/repos has no `visibility`: GitHub would ignore it and create a public
        # repository, so it is translated to `private` (internal exists only in organizations:
        # refused at validation and plan time, routes.check_repo_create; refused here too,
        # should a call ever come without a plan).
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
    path = route(operation, "POST", _values(operation, call, env.run))
    r = client(env).request("POST", path, body=body)
    name = r.data.get("full_name") if isinstance(r.data, dict) else None
    if r.status != 201 or not isinstance(name, str) or not name:
        # GitHub answers 201 with the repository: anything else (a redirect followed to
        # another page, an empty object) does not say one was created
        raise StepError(
            f"POST {path} answered {r.status} without the repository it would have created; "
            "it may or may not exist",
            hint="look for it (`runtime github repo view OWNER/NAME`) before creating it again",
            http_status=r.status,
        )
    return _ok(r.data, f"created {name} ({r.data.get('html_url')})", r.status)


def file_put(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    values = _values(operation, call, env.run)
    branch = call.option("branch")
    http = client(env)
    current = http.request(
        "GET",
        route(operation, "GET", values),
        params={"ref": branch} if branch else None,
        ok_statuses=(404,),
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
    r = http.request("PUT", route(operation, "PUT", values), body=body)
    verb = "updated" if existed else "created"
    commit = (r.data or {}).get("commit", {}).get("sha", "") if isinstance(r.data, dict) else ""
    return _ok(
        r.data,
        f"{verb} {call.positionals['PATH']} in {call.positionals['OWNER/REPO']} (commit {commit[:12]})",
        r.status,
    )


def api(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
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
    if r.content and not r.is_json:
        return _body(r)
    text = dumps(r.data) if r.data is not None else f"{r.status}"
    return _ok(r.data, text, r.status)


def _body(r: Response) -> StepOutcome:
    """An answer that is not JSON (a tarball, a job's log, GET /zen), kept whole: its bytes
    for ``--output raw``; in the data, its text, or its bytes in base64 when it is not text
    (JSON holds no bytes); and in text mode the text, or a line saying what it is, since
    bytes shown on a terminal are neither readable nor harmless."""
    content_type = r.headers.get("content-type")
    data: dict[str, Any] = {"content_type": content_type, "bytes": len(r.content)}
    if isinstance(r.data, str):
        data["text"] = shown = r.data
    else:
        data["base64"] = base64.b64encode(r.content).decode("ascii")
        shown = (
            f"(not shown: a binary body, {len(r.content)} bytes of "
            f"{content_type or 'no Content-Type'}; --output raw writes it as received, "
            "e.g. to a file with > FILE)"
        )
    outcome = _ok(data, shown, r.status)
    outcome.raw = r.content
    return outcome


# -- GraphQL ----------------------------------------------------------------------------------


def repo_summary(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    owner, name = call.positionals["OWNER/REPO"].partition("/")[::2]
    if not owner or not name:
        raise StepError(f"'{call.positionals['OWNER/REPO']}' is not OWNER/REPO")
    assert operation.document is not None, "repo summary declares its document"
    variables = {"owner": owner, "name": name}
    r = client(env).graphql(operation.document, variables, read_only=operation.effect == "read")
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


def graphql(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    variables = build_body(list(call.options))
    read_only = operation.effect_of(call) == "read"  # a query, not a mutation
    r = client(env).graphql(call.positionals["QUERY"], variables, read_only=read_only)
    data = r.data.get("data") if isinstance(r.data, dict) else r.data
    return _ok(data, dumps(data), r.status)


def gh_call(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    """An operation that runs gh (transport "cli")."""
    from providers.github.gh import run_gh

    return run_gh(operation, call, env, run_endpoints(env.environ, env.run))


def execute(operation: Operation, call: BoundCall, env: StepEnvironment) -> StepOutcome:
    try:
        return operation.implementation(operation, call, env)  # type: ignore[no-any-return]
    except TokenRejected as exc:
        # the host refused the token: a credential failure (exit 4), as at login, whatever
        # the step was doing with it
        host = run_endpoints(env.environ, env.run).host
        return StepOutcome(
            ok=False,
            error=exc.message,
            hint=ep.rejected_hint(env.run.default_host("github"), host),
            http_status=exc.http_status,
            data=exc.data,
            credential_rejected=True,
        )
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        # the handlers read what the server answered: an answer of another shape than
        # GitHub's (a list for an object, a null for a field, errors as an object) stops
        # here, said as that, not as a bug of runtime's (RUNTIME_DEBUG=1: where it was)
        if env.environ.get("RUNTIME_DEBUG") == "1":
            raise
        raise StepError(
            f"the answer to {operation.name} is not shaped as GitHub's ({type(exc).__name__})",
            hint="check that the API URL is GitHub's (a proxy or another server may answer "
            "instead); if it is, this is a bug: rerun with RUNTIME_DEBUG=1 and report it",
        ) from None


def inspect(operation: Operation, call: BoundCall, run: RunContext) -> Inspection:
    """Hosts, credential host and where implicit values come from. No network, no writes."""
    inspection = Inspection()
    try:
        # the environment's settings (GITHUB_API_URL, RUNTIME_GITHUB_TIMEOUT...): one that
        # is not a value they take is invalid usage, said before any step has run (no
        # policy decided it)
        endpoints = run_endpoints(run.environ, run)
        if operation.transport in ("rest", "graphql"):
            check_settings(run.environ)
    except StepError as exc:
        hint = exc.hint or "fix or unset the variable"
        inspection.problems.append(BindingProblem(-1, exc.message, hint, code="invalid-setting"))
        return inspection
    inspection.credential_host = endpoints.host
    inspection.hosts = endpoints.network_hosts
    inspection.notes.append(f"host {endpoints.host} ({endpoints.host_source})")
    # a variable set for another host is ignored: said where a person reads it too
    inspection.warnings.extend(endpoints.ignored)
    _inspect_routes(operation, call, inspection)
    if operation.actions_from is not None and not operation.effect_inputs(call):
        # a document decided without its mutations: why (the plan shows each mutation)
        from providers.github.mutations import analyse

        unreadable = analyse(call.positionals.get("QUERY", "")).unreadable
        if unreadable:
            inspection.notes.append(unreadable)
    for name, setting in context_defaults(operation, call, run).items():
        if setting is not None and setting.value:
            inspection.notes.append(f"{name} = {setting.value} (from {setting.origin})")
            continue
        key = next(p.context_default for p in operation.positionals if p.name == name)
        try:
            fallback = route(operation, "GET", {})
        except StepError:
            # no route without it (team list): refused before anything runs
            inspection.problems.append(
                BindingProblem(
                    -1,
                    f"'{operation.name}' needs {name}: none is given and the context sets no {key}",
                    f"give {name} (`{operation.form()}`), or set a default: "
                    f"runtime context set NAME {key}={name}",
                    code="missing-argument",
                )
            )
            continue
        inspection.notes.append(f"no {name} and no context {key}: GET {fallback}")
    return inspection


def _inspect_routes(operation: Operation, call: BoundCall, inspection: Inspection) -> None:
    """Input values that would change a REST route, the documented route of ``api``, and
    an internal repository asked of the route that cannot make one (``repo create``)."""
    from providers.github import routes
    from providers.github.routes import Route

    if operation.name == "api":
        problems, route, note = routes.check_api(call)
        inspection.problems.extend(problems)
        if route is not None:
            method = call.positionals["METHOD"].upper()
            # the documented API operation it is sent to: the plan's and execute's
            # ``route``, the audit record's ``route_operation``
            inspection.record["route"] = Route(method, route.path, route.operation_id).to_json()
            inspection.audit["route_operation"] = route.operation_id
            inspection.notes.append(f"route: {method} {route.path} ({route.operation_id})")
        if note is not None:
            inspection.notes.append(note)
        return
    binding = call.binding
    for positional in operation.positionals:
        if positional.in_route is not None:
            index = binding.positionals.get(positional.name, -1) if binding else -1
            kind = routes.VALUE_KINDS[positional.in_route]
            inspection.problems.extend(
                routes.value_problems(index, call.pieces_of(positional.name), kind)
            )
    for option in operation.options or ():
        if option.in_route is not None:
            index = next((i for k, i in binding.options if k == option.name), -1) if binding else -1
            kind = routes.VALUE_KINDS[option.in_route]
            inspection.problems.extend(
                routes.value_problems(index, call.option_pieces(option.name), kind)
            )
    if operation.name == "repo create":
        inspection.problems.extend(routes.check_repo_create(call))
    if operation.name == "issue list":
        inspection.problems.extend(routes.check_issue_list(call))


def check_token(environ: Any, run: RunContext, host: str, token: str) -> dict[str, Any]:
    """GET /user with ``token`` on ``host``: login and granted scopes (X-OAuth-Scopes)."""
    endpoints = ep.resolve(environ, host, "--host")
    http = GitHubHTTP(endpoints, token, environ)
    try:
        r = http.request("GET", "/user")
    finally:
        http.close()
    login = r.data.get("login") if isinstance(r.data, dict) else None
    if not isinstance(login, str) or not login:
        # a sign-in page, a proxy's or a captive portal's answer: it says nothing of the
        # token, so the token is neither valid nor refused
        raise StepError(
            f"{endpoints.host} answered GET /user with no user in it (not GitHub's API?)",
            hint=f"check that {endpoints.api} is GitHub's REST API, with no sign-in page or "
            "proxy in the way",
        )
    raw = r.headers.get("x-oauth-scopes")
    scopes = [s.strip() for s in raw.split(",") if s.strip()] if raw is not None else None
    return {"login": login, "scopes": scopes}


def ping(environ: Any, run: RunContext, host: str, timeout: float, max_bytes: int) -> int:
    """Read-only and bounded: GET the REST root of the host that serves ``host``; its status."""
    import httpx

    from providers.github.settings import ssl_context

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
