"""The REST and GraphQL transport: one connection pool per host per run, keep-alive.

What it guarantees:

- Non-2xx responses fail the step with the status, GitHub's message and
  documentation URL, never the token.
- Rate limits (403/429 with ``Retry-After`` or ``X-RateLimit-Remaining: 0``):
  an idempotent request (GET, HEAD) waits as told, up to a bounded total,
  and retries; a non-idempotent one is never retried and fails with the
  reset time. 502/503/504 on an idempotent request are retried twice.
- Redirects are followed by hand (at most 5): the token goes only to the
  origin it belongs to; a write is never redirected to another host.
- Network errors, timeouts, truncated, malformed and undecodable bodies are
  clear step failures.

The exchanges themselves go through :mod:`providers.github.wire` (httpcore's
connection pool, with httpx's behaviour on the wire).
"""

from __future__ import annotations

import json
import re
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from providers.github import wire
from providers.github.endpoints import Endpoints
from providers.github.wire import Headers, Reply
from runtime import __version__
from runtime.execution import StepError
from runtime.network import split_url

IDEMPOTENT = frozenset({"GET", "HEAD"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
DEFAULT_MAX_WAIT = 60.0
LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


@dataclass
class Response:
    status: int
    headers: Headers
    data: Any
    url: str


def ssl_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """runtime's certificate setup, as a step failure when the certificates cannot load."""
    from runtime.tls import CertificateSetupError
    from runtime.tls import ssl_context as shared

    try:
        return shared(environ)
    except CertificateSetupError as exc:
        raise StepError(
            str(exc), hint="point SSL_CERT_FILE at a PEM file of trusted CA certificates"
        ) from None


@lru_cache(maxsize=256)  # a run asks for the same few URLs at every request
def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port; a URL that cannot be read has none (it is no token's home)."""
    try:
        parts = split_url(url)
    except ValueError:
        return "", "", None
    return parts.scheme, (parts.hostname or "").lower(), parts.port


@lru_cache(maxsize=1024)  # steps of a run often repeat a route
def _dot_segment(path: str) -> str | None:
    """The first segment of the route in ``path`` that reads as '.' or '..', if any."""
    route = path.split("?", 1)[0]
    for segment in route.split("/")[1:] if route.startswith("/") else route.split("/"):
        if unquote(segment) in (".", ".."):
            return segment
    return None


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
        self._homes = (_origin(endpoints.api), _origin(endpoints.graphql))
        self.check_host = check_host  # the capability's network rule, before every connection
        self._token = token
        self.sleep = sleep
        self.clock = clock
        self.max_wait = float(environ.get("RUNTIME_GITHUB_MAX_WAIT", DEFAULT_MAX_WAIT))
        timeout = float(environ.get("RUNTIME_GITHUB_TIMEOUT", "30"))
        # a whole response (however it trickles in) must arrive within three read timeouts,
        # and never less than 10 s (a loaded machine or a slow server is not a trickle)
        self.total_timeout = max(3 * timeout, 10.0)
        self.requests = 0
        # no proxy from the environment, no cookies, redirects followed by hand (below)
        self.wire = wire.Wire(
            ssl_context(environ),
            timeout,
            {
                "Accept": "application/vnd.github+json",
                "User-Agent": f"runtime/{__version__}",
                "X-GitHub-Api-Version": "2022-11-28",
            },
        )

    def close(self) -> None:
        self.wire.close()

    # -- one request, with redirects and bounded retries -----------------------------
    def url_for(self, path: str) -> str:
        if path.startswith(("https://", "http://")):
            return path
        segment = _dot_segment(path)
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
    ) -> Response:
        method = method.upper()
        url = self.url_for(path)
        shown = f"{method} {_route(url)}"
        waited = 0.0
        server_retries = 0
        rate_retries = 0
        while True:
            response = self._send_following(method, url, params, body, shown)
            status = response.status_code
            if 200 <= status < 300 or status in ok_statuses:
                return Response(
                    status, response.headers, self._decode(response, shown), str(response.url)
                )
            wait = self._rate_limit_wait(response)
            if wait is not None:
                if method in IDEMPOTENT and waited + wait <= self.max_wait and rate_retries < 5:
                    self.sleep(wait)
                    waited += wait
                    rate_retries += 1
                    continue
                raise self._rate_limit_error(response, shown, method in IDEMPOTENT)
            if status in (502, 503, 504) and method in IDEMPOTENT and server_retries < 2:
                server_retries += 1
                self.sleep(0.5 * server_retries)
                continue
            raise self._error(response, shown)

    def _send_following(self, method: str, url: str, params: Any, body: Any, shown: str) -> Reply:
        homes = self._homes
        if params:  # merged, so that a query string already in the path is kept
            url = wire.with_params(url, params)
        encoded = wire.json_body(body) if body is not None else None
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
            if _origin(url) in homes:
                headers["Authorization"] = f"Bearer {self._token}"
            try:
                self.requests += 1
                response = self.wire.exchange(
                    method, url, headers, encoded, time.monotonic() + self.total_timeout
                )
            except wire.TIMEOUTS:
                raise StepError(
                    f"timed out waiting for {host}: {shown}",
                    hint="check the network, or raise RUNTIME_GITHUB_TIMEOUT (seconds)",
                ) from None
            except wire.InvalidURL as exc:
                raise StepError(
                    f"not a URL that can be requested: {shown} ({_short(str(exc))})",
                    hint="check the path, and GITHUB_API_URL / GITHUB_GRAPHQL_URL if set",
                ) from None
            except wire.DecodingError as exc:
                raise StepError(
                    f"{host} sent a body that is not valid {exc.coding}: {shown}",
                    hint="retry later; if it persists the server or a proxy is corrupting responses",
                ) from None
            except wire.FAILURES as exc:
                raise StepError(
                    f"cannot reach {host}: {shown} ({type(exc).__name__}: {_short(str(exc))})",
                    hint="check the host, the network and the certificates (SSL_CERT_FILE for a private CA)",
                ) from None
            if response.status_code not in REDIRECTS:
                return response
            location = response.headers.get("location")
            if not location:
                return response
            target = _join(response.url, location, f"{response.status_code} redirect of {shown}")
            if _origin(target) not in homes and method not in IDEMPOTENT:
                raise StepError(
                    f"{response.status_code} redirect of {shown} to another host ({_origin(target)[1] or target}) refused",
                    hint="a write is never sent to a host other than the one configured",
                )
            if response.status_code == 303:
                method, encoded = "GET", None
            url = target
        raise StepError(f"too many redirects: {shown}", hint="check the host configuration")

    # -- decoding and errors ----------------------------------------------------------
    def _decode(self, response: Reply, shown: str) -> Any:
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except (ValueError, UnicodeDecodeError):
            ctype = response.headers.get("content-type", "")
            if "json" not in ctype:
                return response.text
            raise StepError(
                f"GitHub returned malformed JSON for {shown} ({len(response.content)} bytes)",
                hint="retry later; if it persists the server or a proxy is corrupting responses",
            ) from None

    def _rate_limit_wait(self, response: Reply) -> float | None:
        if response.status_code not in (403, 429):
            return None
        retry_after = response.headers.get("retry-after")
        if retry_after is not None:
            try:
                # at least a second: "Retry-After: 0" must not turn into a busy loop
                return max(1.0, float(retry_after))
            except ValueError:
                return None
        if response.headers.get("x-ratelimit-remaining") == "0":
            reset = response.headers.get("x-ratelimit-reset")
            try:
                return max(1.0, float(reset) - self.clock()) if reset else None
            except ValueError:
                return None
        return None

    def _rate_limit_error(self, response: Reply, shown: str, idempotent: bool) -> StepError:
        reset = response.headers.get("x-ratelimit-reset")
        retry_after = response.headers.get("retry-after")
        when = ""
        if reset and reset.isdigit():
            at = datetime.fromtimestamp(int(reset), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            when = f"; the limit resets at {at}"
        elif retry_after:
            when = f"; retry after {retry_after} s"
        why = (
            f"waiting would exceed {self.max_wait:g} s"
            if idempotent
            else "a write is never retried automatically"
        )
        return StepError(
            f"{response.status_code} rate limited: {shown}{when} ({why})",
            hint="run the step again after the reset",
            http_status=response.status_code,
        )

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
            text += f": {_short(message, 300)}"
        hint = f"see {docs}" if docs else None
        if response.status_code == 401:
            hint = "the token was rejected: check it with `runtime auth status --live`"
        return StepError(
            text,
            hint=hint,
            http_status=response.status_code,
            data={"status": response.status_code, "message": message, "documentation_url": docs},
        )

    # -- lists and GraphQL --------------------------------------------------------------
    def paginate(
        self, path: str, params: dict[str, Any], limit: int | None
    ) -> tuple[list[Any], int]:
        """Every page (Link rel="next"), or up to ``limit`` items. Returns (items, last status)."""
        params = dict(params)
        params.setdefault("per_page", "100")
        items: list[Any] = []
        url: str | None = self.url_for(path)
        status = 200
        first = True
        while url is not None:
            response = self.request("GET", url, params=params if first else None)
            first = False
            status = response.status
            page = response.data
            if isinstance(page, dict):  # e.g. {"total_count": n, "repositories": [...]}
                page = next((v for v in page.values() if isinstance(v, list)), [])
            if not isinstance(page, list):
                raise StepError(
                    f"expected a list from GET {_route(url)}, got {type(page).__name__}"
                )
            items.extend(page)
            if limit is not None and len(items) >= limit:
                return items[:limit], status
            match = LINK_NEXT.search(response.headers.get("link", ""))
            url = (
                _join(response.url, match.group(1), f"the next page of GET {_route(path)}")
                if match
                else None
            )
        return items, status

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> Response:
        response = self.request(
            "POST",
            self.endpoints.graphql,
            body={"query": query, "variables": dict(variables or {})},
        )
        data = response.data
        if isinstance(data, dict) and data.get("errors"):
            errors = data["errors"]
            messages = "; ".join(
                str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors[:3]
            )
            raise StepError(
                f"GraphQL error: {_short(messages, 400)}", http_status=response.status, data=data
            )
        return response


def _route(url: str) -> str:
    """The path of ``url``, for messages (the text itself if it cannot be read)."""
    try:
        return urlsplit(url).path
    except ValueError:
        return _short(url, 80)


def _join(base: str, reference: str, what: str) -> str:
    """``reference`` (a Location or a Link target from the server) read against ``base``."""
    try:
        return urljoin(base, reference)
    except ValueError as exc:
        raise StepError(
            f"{what} points to {_short(reference, 80)!r}, which is not a valid URL ({exc})",
            hint="the server sent a malformed link; retry later, or report it to the server's owner",
        ) from None


def _error_detail(error: Any) -> str:
    """One entry of GitHub's `errors` list: "Label.color invalid", or its message."""
    if not isinstance(error, dict):
        return str(error)
    if error.get("message"):
        return str(error["message"])
    where = ".".join(str(error[k]) for k in ("resource", "field") if error.get(k))
    return f"{where} {error.get('code', '')}".strip() or str(error)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def typed(value: str) -> Any:
    """``true``/``false``/``null`` and integers become JSON values; the rest stays text."""
    if value == "true":
        return True
    if value == "false":
        return False
    if value == "null":
        return None
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", value):
        return int(value)
    return value


def build_body(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """``key=v``, ``key[]=v`` (array) and ``a[b]=v`` (nested object) into a JSON body."""
    body: dict[str, Any] = {}
    for key, raw in pairs:
        value = typed(raw)
        parts = re.findall(r"[^\[\]]+|\[\]", key)
        if not parts:
            continue
        target: dict[str, Any] = body
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            nxt = parts[i + 1] if not last else None
            if part == "[]":
                continue
            if last:
                target[part] = value
            elif nxt == "[]":
                existing = target.setdefault(part, [])
                if not isinstance(existing, list):
                    raise StepError(f"'{key}' mixes an array and a value for '{part}'")
                if i + 2 == len(parts):
                    existing.append(value)
                    break
                obj: dict[str, Any] = {}
                existing.append(obj)
                target = obj
            else:
                child = target.setdefault(part, {})
                if not isinstance(child, dict):
                    raise StepError(f"'{key}' mixes an object and a value for '{part}'")
                target = child
    return body


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False)
