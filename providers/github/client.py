"""The REST and GraphQL transport: one ``httpx.Client`` per host per run, keep-alive.

What it guarantees:

- Non-2xx responses fail the step with the status, GitHub's message and
  documentation URL, never the token.
- Rate limits (403/429 with ``Retry-After``, in seconds or as an HTTP date, or
  ``X-RateLimit-Remaining: 0``): an idempotent request (GET, HEAD) waits as
  told, up to a bounded total, and retries; a non-idempotent one is never
  retried and fails with the reset time. 502/503/504 on an idempotent request
  are retried twice.
- Redirects are followed by hand (at most 5): the token goes only to the
  origin it belongs to; a write is never redirected to another host.
- Time: every request must be complete (connected, sent, headers and body
  read, however slowly they trickle in) within ``RUNTIME_GITHUB_TIMEOUT``
  seconds (default 30), and a step's requests, retries and waits all end by
  the step's own time limit (``--timeout``, the policy's ``timeout_seconds``).
- Size: a response body is read up to 32 MiB once decoded (gzip, deflate),
  checked while it is read and decoded, so a compression bomb stops early; a
  list follows at most 100 pages (``RUNTIME_GITHUB_MAX_PAGES``) and never a
  page it has already read.
- Network errors, timeouts, truncated, malformed, undecodable and oversized
  bodies are clear step failures.

This module holds the client (:class:`GitHubHTTP`): requests, redirects and
the reading of responses. Beside it: :mod:`providers.github.settings` (the
settings above, from the environment, and the TLS context),
:mod:`providers.github.retries` (rate limits and retries),
:mod:`providers.github.pagination` (lists), :mod:`providers.github.urls` (what
the server links to, and URLs in messages).

httpx is imported when the first client is made (a run that sends no request
never imports it); :mod:`providers.github.transport` holds the one addition
to it, the deadline over a whole exchange.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from providers.github.endpoints import Endpoints
from providers.github.replies import Reply, Response
from providers.github.retries import log_retry, rate_limit_error, rate_limit_wait
from providers.github.settings import (
    DEFAULT_MAX_PAGES,
    DEFAULT_MAX_WAIT,
    DEFAULT_TIMEOUT,
    MAX_BODY_BYTES,
    count_setting,
    number_setting,
    ssl_context,
)
from providers.github.urls import dot_segment, join_url, origin, route_of, shorten
from runtime import __version__
from runtime.provider import StepError
from runtime.provider.log import DEBUG, get_logger

if TYPE_CHECKING:
    import httpx

IDEMPOTENT = frozenset({"GET", "HEAD"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
# diagnostic events (--log-level debug): each request's method, route (the path, never the
# query), status and attempt; retries and rate-limit waits as warnings
_log = get_logger("providers.github")


class _BadLocation(Exception):
    """A redirect whose Location httpx cannot read (it reads it even when not following)."""

    def __init__(self, status: int, location: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.location = location
        self.reason = reason


def _check_location(response: httpx.Response) -> None:
    """A response hook: a redirect's Location must be a URL, or the step fails naming it."""
    if response.has_redirect_location:
        import httpx

        location = response.headers["location"]
        try:
            httpx.URL(location)
        except httpx.InvalidURL as exc:
            raise _BadLocation(response.status_code, location, str(exc)) from None


class TokenRejected(StepError):
    """A 401 to a request that carried the token, from the host it belongs to: the host
    refused the token (not a page it was redirected to without one)."""


class GitHubHTTP:
    def __init__(
        self,
        endpoints: Endpoints,
        token: str,
        environ: Mapping[str, str],
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        check_host: Callable[[str], None] | None = None,
    ) -> None:
        self.endpoints = endpoints
        # where the token may go: the API's origin and the GraphQL endpoint's
        self._homes = (origin(endpoints.api), origin(endpoints.graphql))
        self.check_host = check_host  # the capability's network rule, before every connection
        self._token = token
        self.sleep = sleep
        self.clock = clock
        self.max_wait = number_setting(
            environ, "RUNTIME_GITHUB_MAX_WAIT", DEFAULT_MAX_WAIT, zero=True
        )
        self.timeout = number_setting(environ, "RUNTIME_GITHUB_TIMEOUT", DEFAULT_TIMEOUT)
        self.max_pages = count_setting(environ, "RUNTIME_GITHUB_MAX_PAGES", DEFAULT_MAX_PAGES)
        self.max_body = MAX_BODY_BYTES
        # the step under way: when its time limit runs out (time.monotonic()), and that limit
        self.step_deadline: float | None = None
        self.step_seconds = 0.0
        from providers.github import transport

        self._deadline = transport.Deadline()
        # no proxy from the environment, no cookies, redirects followed by hand (below)
        self.http = transport.client(
            ssl_context(environ),
            self._deadline,
            self.timeout,
            {
                "Accept": "application/vnd.github+json",
                # what httpx decodes without optional packages (it offers br and zstd too
                # when they are installed)
                "Accept-Encoding": "gzip, deflate",
                "User-Agent": f"runtime/{__version__}",
                "X-GitHub-Api-Version": "2022-11-28",
            },
        )
        self.http.event_hooks["response"] = [_check_location]

    def close(self) -> None:
        self.http.close()

    def limit_step(self, deadline: float, seconds: float) -> None:
        """The step now running must be done by ``deadline`` (``time.monotonic()``), its
        time limit of ``seconds``: requests, retries and waits included."""
        self.step_deadline = deadline
        self.step_seconds = seconds

    # -- one request, with redirects and bounded retries -----------------------------
    def url_for(self, path: str) -> str:
        if path.startswith(("https://", "http://")):
            return path
        segment = dot_segment(path)
        if segment is not None:
            # an input value must never move a call to another route: ".." would be
            # normalised away on the wire (repo view ../user is GET /user)
            raise StepError(
                f"'{segment}' is not allowed as a part of a route ({path})",
                hint="check the owner, repository, organization and path arguments",
            )
        return self.endpoints.api + "/" + path.lstrip("/")

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | list[tuple[str, str]] | None = None,
        body: Any = None,
        ok_statuses: tuple[int, ...] = (),
        read_only: bool = False,
    ) -> Response:
        """``read_only``: a POST that changes nothing (a GraphQL query), retried as a GET is."""
        method = method.upper()
        retried = method in IDEMPOTENT or read_only
        url = self.url_for(path)
        shown = f"{method} {route_of(url)}"
        waited = 0.0
        server_retries = 0
        rate_retries = 0
        while True:
            attempt = 1 + server_retries + rate_retries
            started = time.perf_counter()
            try:
                response = self._send_following(method, url, params, body, shown)
            except StepError as exc:
                _log.warning(
                    "http.failed",
                    method=method,
                    route=route_of(url),
                    attempt=attempt,
                    error=exc.message,
                )
                raise
            status = response.status_code
            if _log.enabled(DEBUG):
                _log.debug(
                    "http.request",
                    method=method,
                    route=route_of(url),
                    status=status,
                    attempt=attempt,
                    ms=round((time.perf_counter() - started) * 1000, 3),
                )
            if 200 <= status < 300 or status in ok_statuses:
                data, is_json = self._decode(response, shown)
                return Response(
                    status, response.headers, data, str(response.url), response.content, is_json
                )
            wait = rate_limit_wait(response, self.clock)
            if wait is not None:
                if retried and waited + wait <= self.max_wait and rate_retries < 5:
                    if not self._can_wait(wait):
                        why = f"waiting would pass the step's time limit of {self.step_seconds:g} s"
                        raise rate_limit_error(response, shown, why)
                    log_retry(method, url, status, attempt, wait, "rate limited")
                    self.sleep(wait)
                    waited += wait
                    rate_retries += 1
                    continue
                if not retried:
                    why = "a write is never retried automatically"
                elif rate_retries >= 5:
                    why = f"still limited after {rate_retries} retries"
                else:
                    why = f"waiting would exceed {self.max_wait:g} s"
                raise rate_limit_error(response, shown, why)
            if (
                status in (502, 503, 504)
                and retried
                and server_retries < 2
                and self._can_wait(0.5 * (server_retries + 1))
            ):
                server_retries += 1
                log_retry(method, url, status, attempt, 0.5 * server_retries, "server error")
                self.sleep(0.5 * server_retries)
                continue
            raise self._error(response, shown)

    def _can_wait(self, seconds: float) -> bool:
        """Whether waiting ``seconds`` leaves the step time to send its request."""
        return self.step_deadline is None or time.monotonic() + seconds < self.step_deadline

    def _send_following(self, method: str, url: str, params: Any, body: Any, shown: str) -> Reply:
        homes = self._homes
        if params:  # merged, so that a query string already in the path is kept
            import httpx

            try:
                url = str(httpx.URL(url).copy_merge_params(params))
            except httpx.InvalidURL as exc:
                raise StepError(
                    f"not a URL that can be requested: {shown} ({shorten(str(exc))})",
                    hint="check the path, and GITHUB_API_URL / GITHUB_GRAPHQL_URL if set",
                ) from None
        for _ in range(MAX_REDIRECTS + 1):
            try:
                host = urlsplit(url).hostname or ""
            except ValueError as exc:  # e.g. an unclosed IPv6 bracket
                raise StepError(
                    f"not a URL that can be requested: {shown} ({exc})",
                    hint="check the path, and GITHUB_API_URL / GITHUB_GRAPHQL_URL if set",
                ) from None
            if self.check_host is not None:
                self.check_host(host)
            headers = {}
            if origin(url) in homes:
                headers["Authorization"] = f"Bearer {self._token}"
            response = self._exchange(method, url, headers, body, host, shown)
            if response.status_code not in REDIRECTS:
                return response
            location = response.headers.get("location")
            if not location:
                return response
            target = join_url(response.url, location, f"{response.status_code} redirect of {shown}")
            if origin(target) not in homes and method not in IDEMPOTENT:
                raise StepError(
                    f"{response.status_code} redirect of {shown} to another host ({origin(target)[1] or target}) refused",
                    hint="a write is never sent to a host other than the one configured",
                )
            if response.status_code == 303:
                method, body = "GET", None
            url = target
        raise StepError(f"too many redirects: {shown}", hint="check the host configuration")

    def _exchange(
        self, method: str, url: str, headers: dict[str, str], body: Any, host: str, shown: str
    ) -> Reply:
        """One request and its whole response, within the request's and the step's time."""
        import httpx

        now = time.monotonic()
        deadline, by_step = now + self.timeout, False
        if self.step_deadline is not None and self.step_deadline <= deadline:
            if self.step_deadline <= now:
                raise StepError(
                    f"the step's time limit of {self.step_seconds:g} s ran out before {shown}",
                    hint="raise the limit with --timeout SECONDS or timeout_seconds in a user policy",
                )
            deadline, by_step = self.step_deadline, True
        self._deadline.at = deadline
        try:
            request = self.http.build_request(method, url, headers=headers, json=body)
            response = self.http.send(request, stream=True)
            try:
                return Reply(response, self._read(response, host, shown))
            finally:
                response.close()
        except _BadLocation as bad:
            raise StepError(
                f"{bad.status} redirect of {shown} points to {shorten(bad.location, 80)!r}, "
                f"which is not a valid URL ({bad.reason})",
                hint="the server sent a malformed link; retry later, or report it to the server's owner",
            ) from None
        except httpx.TimeoutException:
            if by_step:
                raise StepError(
                    f"timed out waiting for {host}: {shown} "
                    f"(the step's time limit of {self.step_seconds:g} s ran out)",
                    hint="raise the limit with --timeout SECONDS or timeout_seconds in a user policy",
                ) from None
            raise StepError(
                f"timed out waiting for {host}: {shown} "
                f"(no complete response within {self.timeout:g} s)",
                hint="check the network, or raise RUNTIME_GITHUB_TIMEOUT "
                "(seconds for one whole request)",
            ) from None
        except httpx.InvalidURL as exc:
            raise StepError(
                f"not a URL that can be requested: {shown} ({shorten(str(exc))})",
                hint="check the path, and GITHUB_API_URL / GITHUB_GRAPHQL_URL if set",
            ) from None
        except httpx.TransportError as exc:
            raise StepError(
                f"cannot reach {host}: {shown} ({type(exc).__name__}: {shorten(str(exc))})",
                hint="check the host, the network and the certificates (SSL_CERT_FILE for a private CA)",
            ) from None
        finally:
            self._deadline.at = None

    def _read(self, response: httpx.Response, host: str, shown: str) -> bytes:
        """The decoded body, read chunk by chunk and refused once over :attr:`max_body`."""
        import httpx

        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_body:
                    raise StepError(
                        f"the response to {shown} is over the "
                        f"{self.max_body // (1024 * 1024)} MiB limit for a response body "
                        "(decoded); reading stopped",
                        hint="the github provider does not read responses this large; "
                        "a list can take fewer items with limit=N",
                    )
                chunks.append(chunk)
        except httpx.DecodingError:
            coding = response.headers.get("content-encoding", "its Content-Encoding")
            raise StepError(
                f"{host} sent a body that is not valid {coding}: {shown}",
                hint="retry later; if it persists the server or a proxy is corrupting responses",
            ) from None
        return b"".join(chunks)

    # -- decoding and errors ----------------------------------------------------------
    def _decode(self, response: Reply, shown: str) -> tuple[Any, bool]:
        """The body's value, and whether it is JSON: what a Content-Type naming JSON says
        is JSON (or fails the step as malformed), as is a body without a Content-Type
        that reads as JSON; any other body is its text, or None when it is not text (an
        archive, an image: the bytes are in the response's ``content``)."""
        if response.status_code == 204 or not response.content:
            return None, True
        ctype = response.headers.get("content-type", "").lower()
        if not ctype or "json" in ctype:
            try:
                return response.json(), True
            except (ValueError, UnicodeDecodeError, RecursionError):  # nested past any record
                if ctype:
                    raise StepError(
                        f"GitHub returned malformed JSON for {shown} "
                        f"({len(response.content)} bytes)",
                        hint="retry later; if it persists the server or a proxy is "
                        "corrupting responses",
                    ) from None
        return response.text, False

    def _error(self, response: Reply, shown: str) -> StepError:
        message, docs = "", ""
        try:
            body = response.json()
            if isinstance(body, dict):
                message = str(body.get("message") or "")
                docs = str(body.get("documentation_url") or "")
                errors = body.get("errors")
                if isinstance(errors, list) and errors:
                    details = [_error_detail(e) for e in errors[:3]]
                    message += " (" + "; ".join(details) + ")"
        except (ValueError, UnicodeDecodeError):
            pass
        text = f"{response.status_code} {response.reason_phrase or ''}".strip() + f": {shown}"
        if message:
            text += f": {shorten(message, 300)}"
        hint = f"see {docs}" if docs else None
        kind = StepError
        if response.status_code == 401 and origin(str(response.url)) in self._homes:
            hint, kind = (
                "the token was rejected: check it with `runtime auth status --live`",
                TokenRejected,
            )
        elif response.status_code == 401:
            hint = (
                f"the answer came from {origin(str(response.url))[1]}, which a redirect led "
                "to and which runtime sends no token to"
            )
        return kind(
            text,
            hint=hint,
            http_status=response.status_code,
            data={"status": response.status_code, "message": message, "documentation_url": docs},
        )

    # -- lists and GraphQL --------------------------------------------------------------
    def paginate(
        self,
        path: str,
        params: dict[str, Any],
        limit: int | None,
        keep: Callable[[Any], bool] | None = None,
    ) -> tuple[list[Any], int]:
        """Every page, or up to ``limit`` items (those ``keep`` keeps):
        :func:`providers.github.pagination.paginate`."""
        from providers.github.pagination import paginate

        return paginate(self, path, params, limit, keep)

    def graphql(
        self, query: str, variables: Mapping[str, Any] | None = None, *, read_only: bool = False
    ) -> Response:
        """``read_only``: the document is a query (retried as a GET is), not a mutation."""
        response = self.request(
            "POST",
            self.endpoints.graphql,
            body={"query": query, "variables": dict(variables or {})},
            read_only=read_only,
        )
        data = response.data
        if isinstance(data, dict) and data.get("errors"):
            errors = data["errors"]
            messages = "; ".join(
                str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors[:3]
            )
            raise StepError(
                f"GraphQL error: {shorten(messages, 400)}", http_status=response.status, data=data
            )
        return response


def _error_detail(error: Any) -> str:
    """One entry of GitHub's `errors` list: "Label.color invalid", or its message."""
    if not isinstance(error, dict):
        return str(error)
    if error.get("message"):
        return str(error["message"])
    where = ".".join(str(error[k]) for k in ("resource", "field") if error.get(k))
    return f"{where} {error.get('code', '')}".strip() or str(error)
