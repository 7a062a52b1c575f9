"""The :class:`GitHubDouble` facade: lifecycle, seeding, faults, counters."""

from __future__ import annotations

import hmac
import os
import shutil
import ssl
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from graphql import GraphQLSchema

from .faults import Fault, FaultKind, FaultRegistry
from .graphql_api import GraphQLApi, GraphQLContext, rate_limit_node
from .http_types import RecordedRequest
from .rest import RestApi
from .schema import load_schema
from .server import DoubleServer
from .state import (
    Issue,
    Notification,
    Org,
    PullRequest,
    Release,
    Repo,
    Run,
    State,
    Team,
    User,
    Workflow,
)
from .tls import CertificateFiles, create_certificates

__all__ = ["DEFAULT_SCOPES", "GitHubDouble"]

DEFAULT_SCOPES: tuple[str, ...] = ("repo", "read:org", "workflow")


class GitHubDouble:
    """A loopback HTTP(S) server that imitates GitHub's REST and GraphQL APIs.

    See the package docstring (``tests/github_double/__init__.py``) for usage
    and the recipe for pointing the real ``gh`` CLI at it.
    """

    def __init__(
        self,
        token: str = "ghp_test_token",
        *,
        tls: bool = False,
        login: str = "octocat",
        scopes: Sequence[str] = DEFAULT_SCOPES,
        extra_tokens: Mapping[str, str] | None = None,
        rate_limit: int = 5000,
        preload_schema: bool = False,
    ) -> None:
        self.token = token
        self.tls = tls
        self.login = login
        #: OAuth scopes reported in ``X-OAuth-Scopes`` and enforced by writes.
        self.scopes: list[str] = list(scopes)
        #: Additional ``token -> login`` pairs accepted by the server.
        self.extra_tokens: dict[str, str] = dict(extra_tokens or {})
        self.state = State(viewer=login)
        self.rate_limit = rate_limit
        #: Compress response bodies with this coding ("gzip", "deflate", or "deflate-raw":
        #: raw deflate sent as "deflate", as some servers do) when the request's
        #: Accept-Encoding lists it, as GitHub does; None sends bodies as they are.
        self.compress: str | None = None
        self._preload_schema = preload_schema
        self._faults = FaultRegistry()
        self._rest = RestApi(self.state, lambda: self.scopes, self._rate_resources)
        self._graphql = GraphQLApi(self.state, load_schema)
        self._counter_lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._connections = 0
        self._errors: list[str] = []
        self._remaining: dict[str, int] = {}
        self._reset_at = 0
        self._server: DoubleServer | None = None
        self._thread: threading.Thread | None = None
        self._tempdir: Path | None = None
        self._certs: CertificateFiles | None = None
        self.set_rate_limit()

    # ------------------------------------------------------------ lifecycle
    def start(self) -> GitHubDouble:
        """Start serving on an ephemeral port of 127.0.0.1 (idempotent)."""
        if self._server is not None:
            return self
        if self._preload_schema:
            load_schema()
        self._tempdir = Path(tempfile.mkdtemp(prefix="github-double-"))
        context: ssl.SSLContext | None = None
        if self.tls:
            self._certs = create_certificates(self._tempdir / "tls")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self._certs.cert_file, self._certs.key_file)
            context.set_alpn_protocols(["http/1.1"])
        self._server = DoubleServer(self, context)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="github-double",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the server, close open keep-alive connections, remove temp files."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.close_open_connections()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None
            self._certs = None

    def __enter__(self) -> GitHubDouble:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ----------------------------------------------------------------- URLs
    def _require_server(self) -> DoubleServer:
        if self._server is None:
            raise RuntimeError(
                "GitHubDouble is not running; use it as a context manager or call start()"
            )
        return self._server

    @property
    def port(self) -> int:
        return int(self._require_server().server_address[1])

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT``."""
        return f"127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https://`` with ``tls=True``)."""
        return f"{'https' if self.tls else 'http'}://{self.host}"

    @property
    def api_url(self) -> str:
        """REST base URL.  REST is served at ``/`` and also at ``/api/v3/``."""
        return self.base_url

    @property
    def enterprise_api_url(self) -> str:
        """REST base as GitHub Enterprise (and ``gh``) spell it: ``.../api/v3``."""
        return f"{self.base_url}/api/v3"

    @property
    def graphql_url(self) -> str:
        """``.../graphql`` (``.../api/graphql`` works too)."""
        return f"{self.base_url}/graphql"

    @property
    def ca_file(self) -> str:
        """PEM file of the throwaway CA that signed the server certificate (``tls=True`` only)."""
        self._require_server()
        if self._certs is None:
            raise RuntimeError("ca_file is only available with GitHubDouble(tls=True)")
        return str(self._certs.ca_file)

    def runtime_env(self) -> dict[str, str]:
        """Environment variables that point ``runtime`` at this double, with its token."""
        return {
            "GITHUB_API_URL": self.api_url,
            "GITHUB_GRAPHQL_URL": self.graphql_url,
            "RUNTIME_GITHUB_TOKEN": self.token,
        }

    def gh_env(self, config_dir: str | os.PathLike[str] | None = None) -> dict[str, str]:
        """Environment variables that point the ``gh`` CLI at this double.

        Merge them over ``os.environ`` when running ``gh``; see the package
        docstring for what each one does.  Requires ``tls=True`` because
        ``gh`` only talks HTTPS to GitHub Enterprise hosts.
        """
        if not self.tls:
            raise RuntimeError("gh needs HTTPS: start the double with tls=True")
        self._require_server()
        assert self._tempdir is not None
        directory = Path(config_dir) if config_dir is not None else self._tempdir / "gh-config"
        directory.mkdir(parents=True, exist_ok=True)
        return {
            "GH_HOST": f"localhost:{self.port}",
            "GH_ENTERPRISE_TOKEN": self.token,
            "GITHUB_ENTERPRISE_TOKEN": self.token,
            "GH_TOKEN": "",
            "GITHUB_TOKEN": "",
            "SSL_CERT_FILE": self.ca_file,
            "GH_CONFIG_DIR": str(directory),
            "GH_NO_UPDATE_NOTIFIER": "1",
            "GH_PROMPT_DISABLED": "1",
            "GH_PAGER": "cat",
            "NO_COLOR": "1",
        }

    # --------------------------------------------------------------- seeding
    @property
    def viewer(self) -> User:
        user = self.state.user(self.login)
        assert user is not None
        return user

    @property
    def viewer_id(self) -> int:
        return self.viewer.id

    def add_user(self, login: str, **fields: Any) -> User:
        """Add (or update) a user; fields: name, email, type, site_admin, bio, company, created_at."""
        return self.state.add_user(login, **fields)

    def add_org(
        self,
        login: str,
        *,
        members: Iterable[str] = (),
        admins: Iterable[str] = (),
        viewer_role: str | None = "admin",
        **fields: Any,
    ) -> Org:
        """Add an organization.  The viewer joins it with ``viewer_role`` (None: not a member)."""
        return self.state.add_org(
            login, members=members, admins=admins, viewer_role=viewer_role, **fields
        )

    def add_team(
        self,
        org: str,
        slug: str,
        *,
        name: str | None = None,
        members: Iterable[str] = (),
        repos: Iterable[str] = (),
        **fields: Any,
    ) -> Team:
        """Add a team; ``repos`` are full names, fields: description, privacy, permission."""
        return self.state.add_team(org, slug, name=name, members=members, repos=repos, **fields)

    def add_repo(self, owner: str, name: str, **fields: Any) -> Repo:
        """Add a repository.

        Fields: private, visibility, description, homepage, default_branch,
        stargazers_count, watchers_count, forks_count, language, topics,
        license (SPDX id), archived, fork, is_template, has_issues, has_wiki,
        has_projects, has_discussions, size, created_at, updated_at,
        pushed_at, collaborators ({login: permission}).  Unknown owners are
        created as users.
        """
        return self.state.add_repo(owner, name, **fields)

    def repo(self, owner: str, name: str) -> Repo | None:
        return self.state.repo(owner, name)

    def add_branch(
        self, owner: str, repo: str, branch: str, *, from_branch: str | None = None
    ) -> None:
        self.state.add_branch(owner, repo, branch, from_branch=from_branch)

    def add_file(
        self, owner: str, repo: str, path: str, content: bytes | str, *, branch: str | None = None
    ) -> str:
        """Store a file (default branch unless ``branch``); returns its git blob sha."""
        return self.state.add_file(owner, repo, path, content, branch=branch)

    def add_issue(self, owner: str, repo: str, title: str, **fields: Any) -> Issue:
        """Fields: number, body, state, state_reason, user, labels, assignees, comments, created_at..."""
        return self.state.add_issue(owner, repo, title, **fields)

    def add_pull(self, owner: str, repo: str, title: str, **fields: Any) -> PullRequest:
        """Fields: issue fields plus head, base, head_sha, head_owner, draft, merged, mergeable,
        additions, deletions, changed_files, commits, review_decision, requested_reviewers."""
        return self.state.add_pull(owner, repo, title, **fields)

    def add_release(self, owner: str, repo: str, tag_name: str, **fields: Any) -> Release:
        """Fields: name, body, draft, prerelease, author, target_commitish, created_at, published_at."""
        return self.state.add_release(owner, repo, tag_name, **fields)

    def add_workflow(
        self,
        owner: str,
        repo: str,
        name: str,
        *,
        path: str | None = None,
        content: bytes | str | None = None,
        **fields: Any,
    ) -> Workflow:
        """Add a workflow and its YAML file (default: push + workflow_dispatch triggers)."""
        return self.state.add_workflow(owner, repo, name, path=path, content=content, **fields)

    def add_run(self, owner: str, repo: str, workflow: int | str | Workflow, **fields: Any) -> Run:
        """Add a workflow run; ``workflow`` is a Workflow, id, file name, path or name.

        Fields: status, conclusion, event, head_branch, head_sha, actor, run_number,
        display_title, run_attempt, created_at, updated_at.
        """
        return self.state.add_run(owner, repo, workflow, **fields)

    def add_notification(self, owner: str, repo: str, title: str, **fields: Any) -> Notification:
        """Fields: type ("Issue", "PullRequest", "Release"...), reason, unread, subject_number, updated_at."""
        return self.state.add_notification(owner, repo, title, **fields)

    @property
    def rest_routes(self) -> list[tuple[str, str]]:
        """Every REST route served, as ``(method, template)``, e.g. ``("GET", "/repos/{owner}/{repo}")``."""
        return list(self._rest.templates)

    # ---------------------------------------------------------------- faults
    def inject(
        self,
        path_regex: str,
        status: int | None = 500,
        count: int | None = 1,
        *,
        kind: FaultKind = "status",
        method: str | None = None,
        delay: float = 0.0,
        body: bytes | str | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        retry_after: int | None = None,
        retry_after_date: bool = False,
        reset_in: int = 60,
        location: str | None = None,
        reset_connection: bool = False,
        interval: float = 1.0,
        size: int = 2 * 1024**3,
    ) -> Fault:
        """Add a fault rule for requests whose path matches ``path_regex``.

        The regex is searched in the route path (``/api/v3`` stripped), the
        raw path and the raw path with query.  ``count`` uses (None: forever);
        ``status`` is ignored by kinds that keep the routed status
        (``delay``, ``truncate``, ``cut_json``, ``malformed_json``).
        """
        if (
            kind
            in (
                "delay",
                "truncate",
                "cut_json",
                "malformed_json",
                "bad_encoding",
                "drop",
                "trickle_headers",
                "trickle_body",
                "gzip_bomb",
                "next_link",
            )
            and status == 500
        ):
            status = None
        return self._faults.add(
            path_regex,
            kind=kind,
            status=status,
            count=count,
            method=method,
            delay=delay,
            body=body,
            headers=headers,
            retry_after=retry_after,
            retry_after_date=retry_after_date,
            reset_in=reset_in,
            location=location,
            reset_connection=reset_connection,
            interval=interval,
            size=size,
        )

    def inject_trickle(
        self,
        path_regex: str,
        count: int | None = 1,
        *,
        part: Literal["headers", "body"] = "headers",
        interval: float = 1.0,
        method: str | None = None,
    ) -> Fault:
        """Send the response one byte every ``interval`` seconds: all of it, from the
        status line on (``part="headers"``), or only its body after the headers. No
        single read waits long; only a bound on the whole exchange ends it (the double
        gives up after ``faults.TRICKLE_LIMIT`` seconds, or when the client hangs up)."""
        kind: FaultKind = "trickle_headers" if part == "headers" else "trickle_body"
        return self.inject(path_regex, None, count, kind=kind, interval=interval, method=method)

    def inject_gzip_bomb(
        self,
        path_regex: str,
        count: int | None = 1,
        *,
        size: int = 2 * 1024**3,
        method: str | None = None,
    ) -> Fault:
        """Answer 200 with ``Content-Encoding: gzip`` and a body (about ``size / 1000``
        bytes on the wire) that decodes to ``size`` zero bytes: 2 GiB from 2 MB."""
        return self.inject(path_regex, None, count, kind="gzip_bomb", size=size, method=method)

    def inject_next_link(
        self,
        path_regex: str,
        count: int | None = None,
        *,
        location: str | None = None,
        method: str | None = None,
    ) -> Fault:
        """Answer normally, with ``Link: <...>; rel="next"``: to ``location`` (the same page
        over and over), or else to the same path with ``page`` one higher (pages without end)."""
        return self.inject(
            path_regex, None, count, kind="next_link", location=location, method=method
        )

    def inject_rate_limit(
        self, path_regex: str = ".*", count: int | None = 1, *, reset_in: int = 60
    ) -> Fault:
        """Primary rate limit: 403, ``X-RateLimit-Remaining: 0``, reset ``reset_in`` seconds ahead."""
        return self.inject(path_regex, 403, count, kind="rate_limit", reset_in=reset_in)

    def inject_secondary_rate_limit(
        self,
        path_regex: str = ".*",
        count: int | None = 1,
        *,
        retry_after: int = 1,
        status: int = 429,
        as_date: bool = False,
    ) -> Fault:
        """Secondary rate limit: 429 (or 403) with ``Retry-After``: ``retry_after`` seconds,
        or (``as_date``) the HTTP date that many seconds ahead, as RFC 9110 allows."""
        return self.inject(
            path_regex,
            status,
            count,
            kind="secondary_rate_limit",
            retry_after=retry_after,
            retry_after_date=as_date,
        )

    def inject_delay(self, path_regex: str, seconds: float, count: int | None = 1) -> Fault:
        """Sleep ``seconds`` before answering normally."""
        return self.inject(path_regex, None, count, kind="delay", delay=seconds)

    def inject_drop(self, path_regex: str, count: int | None = 1, *, reset: bool = False) -> Fault:
        """Close the connection without a response (``reset=True`` sends a TCP RST)."""
        return self.inject(path_regex, None, count, kind="drop", reset_connection=reset)

    def inject_truncated(
        self,
        path_regex: str,
        count: int | None = 1,
        *,
        mode: Literal["short_body", "cut_json"] = "short_body",
    ) -> Fault:
        """``short_body``: Content-Length exceeds the bytes sent, then the socket closes.
        ``cut_json``: correct framing but the JSON document is cut in half."""
        return self.inject(
            path_regex, None, count, kind="truncate" if mode == "short_body" else "cut_json"
        )

    def inject_malformed_json(
        self, path_regex: str, count: int | None = 1, *, body: bytes | str | None = None
    ) -> Fault:
        """Answer with a JSON content type and a syntactically invalid body."""
        return self.inject(path_regex, None, count, kind="malformed_json", body=body)

    def inject_bad_encoding(self, path_regex: str, count: int | None = 1) -> Fault:
        """Declare ``Content-Encoding: gzip`` on a body that is not gzip."""
        return self.inject(path_regex, None, count, kind="bad_encoding")

    def inject_redirect(
        self, path_regex: str, target: str, count: int | None = 1, *, status: int = 302
    ) -> Fault:
        """Redirect with ``status`` to ``target``.

        A bare origin (``http://127.0.0.1:OTHER``) gets the original path and
        query appended; a URL with a path is used verbatim.
        """
        return self.inject(path_regex, status, count, kind="redirect", location=target)

    def clear_faults(self) -> None:
        self._faults.clear()

    @property
    def faults(self) -> list[Fault]:
        return self._faults.snapshot()

    # -------------------------------------------------------------- counters
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, as ``(method, path, headers, body)`` tuples."""
        with self._counter_lock:
            return list(self._requests)

    @property
    def connections(self) -> int:
        """Number of TCP connections accepted."""
        with self._counter_lock:
            return self._connections

    @property
    def graphql_queries(self) -> list[dict[str, Any]]:
        """Every GraphQL payload received: ``{"query", "variables", "operationName"}``."""
        with self._counter_lock:
            return list(self._graphql.log)

    def reset_counters(self) -> None:
        with self._counter_lock:
            self._requests.clear()
            self._connections = 0
            self._graphql.log.clear()

    def _record(self, request: RecordedRequest) -> None:
        with self._counter_lock:
            self._requests.append(request)

    @property
    def errors(self) -> list[str]:
        """Tracebacks of unexpected exceptions raised inside the double (should stay empty)."""
        with self._counter_lock:
            return list(self._errors)

    def _record_error(self, trace: str) -> None:
        with self._counter_lock:
            self._errors.append(trace)

    def _count_connection(self) -> None:
        with self._counter_lock:
            self._connections += 1

    # ------------------------------------------------------------ rate limit
    def set_rate_limit(
        self, remaining: int | None = None, *, reset_in: int = 3600, resource: str | None = None
    ) -> None:
        """Set the remaining budget (default: full) of ``resource`` (default: core and graphql)."""
        with self._counter_lock:
            self._reset_at = int(time.time()) + reset_in
            for name in (resource,) if resource else ("core", "graphql", "search"):
                self._remaining[name] = self.rate_limit if remaining is None else remaining

    def _rate_numbers(self, resource: str) -> tuple[int, int, int]:
        with self._counter_lock:
            if time.time() >= self._reset_at:
                self._reset_at = int(time.time()) + 3600
                self._remaining = {name: self.rate_limit for name in self._remaining}
            return (
                self.rate_limit,
                self._remaining.setdefault(resource, self.rate_limit),
                self._reset_at,
            )

    def _rate_headers(self, resource: str, *, consume: bool) -> dict[str, str] | None:
        limit, remaining, reset = self._rate_numbers(resource)
        if consume:
            if remaining <= 0:
                return None
            with self._counter_lock:
                self._remaining[resource] = remaining = remaining - 1
        return {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": str(reset),
            "X-RateLimit-Used": str(limit - remaining),
            "X-RateLimit-Resource": resource,
        }

    def _rate_resources(self) -> dict[str, Any]:
        resources = {}
        for name in ("core", "graphql", "search"):
            limit, remaining, reset = self._rate_numbers(name)
            resources[name] = {
                "limit": limit,
                "remaining": remaining,
                "reset": reset,
                "used": limit - remaining,
            }
        return resources

    # ---------------------------------------------------------------- auth
    def _authenticate(self, header: str | None) -> str | None:
        if not header:
            return None
        scheme, _, credential = header.strip().partition(" ")
        if scheme.lower() not in ("token", "bearer"):
            return None
        credential = credential.strip()
        if hmac.compare_digest(credential.encode(), self.token.encode()):
            return self.login
        return self.extra_tokens.get(credential)

    def _web_root_for(self, host_header: str | None) -> str:
        """The web root as the client addressed us (``localhost`` or ``127.0.0.1``)."""
        scheme = "https" if self.tls else "http"
        if host_header and host_header.lower() in (
            f"localhost:{self.port}",
            f"127.0.0.1:{self.port}",
        ):
            return f"{scheme}://{host_header.lower()}"
        return self.base_url

    def _graphql_context(self, login: str, api_root: str) -> GraphQLContext:
        def rate() -> dict[str, Any]:
            limit, remaining, reset = self._rate_numbers("graphql")
            return rate_limit_node(limit, remaining, reset)

        web_root = api_root.removesuffix("/api/v3")
        return GraphQLContext(
            state=self.state, viewer=login, web_root=web_root, api_root=api_root, rate_limit=rate
        )

    def load_graphql_schema(self) -> GraphQLSchema:
        """Build (or fetch the cached) GitHub GraphQL schema now, e.g. in a fixture."""
        return load_schema()
