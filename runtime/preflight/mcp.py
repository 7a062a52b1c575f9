"""Bounded, read-only MCP discovery through the official ``mcp`` SDK.

``runtime capability preflight --live`` uses it to check declared ``mcpServer``,
``mcpTool`` and ``mcpResource`` requirements. The SDK is the optional extra
``runtime-engine[mcp]``: this module imports it at the top, and only
:func:`runtime.preflight.network.check_mcp` imports this module, on the
``--live`` path (an ``ImportError`` there becomes an Unknown check that says
how to install it).

The SDK's Streamable HTTP client and :class:`mcp.ClientSession` do the
protocol: ``initialize`` (and ``notifications/initialized``), then for
``kind="tools"`` / ``"resources"`` ``tools/list`` / ``resources/list``. Nothing
else is asked for: no ``tools/call``, no ``resources/read``, no ``DELETE`` that
ends the session (``terminate_on_close=False``). The SDK also opens its
``GET`` stream for server messages; that only listens.

The bounds are runtime's, enforced around the SDK:

* pages: the cursor loop is ours and stops after ``max_pages`` list calls;
* bytes: the SDK's ``httpx2.AsyncClient`` sends through :class:`_Capped`, a
  transport that refuses a ``Content-Length`` over ``max_bytes`` before reading
  and counts every body as it is read, ending the discovery when one passes
  ``max_bytes``; compressed bodies are refused (the client asks for
  ``identity``) so that what is counted is what gets parsed;
* time: one ``anyio.fail_after(timeout)`` over the whole discovery (connects,
  handshake, every page, slow or dripping bodies), with the same timeout on
  each HTTP operation.

TLS uses the ``ssl.SSLContext`` the caller passes (``runtime.tls.ssl_context``:
``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` for a private CA); proxy variables and
``.netrc`` are ignored (``trust_env=False``). Credentials in the URL are sent as
Basic authentication, never as part of the URL.

A :class:`Discovery` ``reason`` is meant for a report: it names the server only
as :func:`sanitize_url` shows it (no credentials, query or fragment) and never
carries text the server sent (error messages, bodies, names) nor the SDK's
messages, which quote it. The SDK's loggers get a ``NullHandler`` so that its
warnings (which quote server text) never reach stderr by Python's last-resort
handler.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import anyio
import httpx2
import mcp_types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from runtime import __version__

__all__ = ["Discovery", "discover", "sanitize_url"]

_MEDIA = ("application/json", "text/event-stream")

# The client side's loggers: their records quote server text and the URL with its query.
for _name in ("mcp.client", "mcp.shared", "client", "httpx2", "httpcore2"):
    _logger = logging.getLogger(_name)
    _logger.addHandler(logging.NullHandler())
    _logger.propagate = False


@dataclass
class Discovery:
    ok: bool  # the server answered initialize (and the list calls when asked)
    reason: str  # short, for a report: no remote text, no URL credentials, query or fragment
    names: list[str] = field(default_factory=list)  # tool names or resource URIs seen
    pages: int = 0  # list pages read
    cut_off: bool = False  # stopped at max_pages with more pages available


def sanitize_url(url: str) -> str:
    """Scheme, host, port and path only: no credentials, query or fragment (never raises)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def discover(
    url: str,
    kind: Literal["server", "tools", "resources"],
    *,
    timeout: float = 10.0,
    max_pages: int = 20,
    max_bytes: int = 1024 * 1024,
    verify: ssl.SSLContext | bool = True,
    find: str | None = None,
) -> Discovery:
    """Ask the MCP server at ``url`` who it is and, for ``tools``/``resources``, what it lists.

    Never raises for anything the server, the network or the SDK does; the answer
    is a :class:`Discovery`. With ``find``, listing stops after the page that names it.
    """
    if kind not in ("server", "tools", "resources"):
        raise ValueError(f"unknown discovery kind {kind!r}")
    if not timeout > 0 or max_pages < 1 or max_bytes < 1:
        raise ValueError("timeout, max_pages and max_bytes must be positive")
    shown = sanitize_url(url)
    target = _split_target(url)
    if target is None:
        return Discovery(False, f"{shown or 'the MCP server URL'} is not a valid http(s) URL")
    run = _Run(*target, shown, timeout, max_pages, max_bytes, verify, find)
    _run_on_new_loop(run.main(kind))
    return run.result


def _split_target(url: str) -> tuple[str, tuple[str, str] | None] | None:
    """(URL to request, Basic credentials) or None when it is no http(s) URL.

    The request URL keeps the query (it may be how the server authenticates) but
    loses the userinfo (sent as an ``Authorization`` header instead) and the fragment.
    """
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    userinfo, at, hostport = parts.netloc.rpartition("@")
    auth = None
    if at:
        user, _, password = userinfo.partition(":")
        auth = (unquote(user), unquote(password))
    endpoint = urlunsplit((parts.scheme.lower(), hostport, parts.path or "/", parts.query, ""))
    return endpoint, auth


def _run_on_new_loop(coro: Coroutine[Any, Any, None]) -> None:
    """Run ``coro`` on a private event loop (the CLI has none running).

    Not asyncio.run() nor anyio.run(): their close waits for the default executor, where
    a DNS lookup abandoned at the deadline may still be running; loop.close() does not wait.
    """
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(coro)
    finally:
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _size(n: int) -> str:
    if n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    if n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups: task groups wrap the SDK's failures."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


class _Stop(Exception):
    """Raised where a bound is broken; the reason is already in :attr:`_Run.failure`."""


class _Run:
    """One discovery: the bounds, the exchange under way and the result being filled in."""

    def __init__(
        self,
        endpoint: str,
        auth: tuple[str, str] | None,
        shown: str,
        timeout: float,
        max_pages: int,
        max_bytes: int,
        verify: ssl.SSLContext | bool,
        find: str | None,
    ) -> None:
        self.endpoint = endpoint
        self.auth = auth
        self.shown = shown
        self.timeout = timeout
        self.max_pages = max_pages
        self.max_bytes = max_bytes
        self.verify = verify
        self.find = find
        self.result = Discovery(False, "")
        self.method = "initialize"  # the exchange under way, for reasons
        self.status: int | None = None  # HTTP status of the last POST answered
        self.failure: str | None = None  # a broken bound, decided by the transport
        self.scope: anyio.CancelScope | None = None

    def stop(self, reason: str) -> _Stop:
        """Record why, end the whole discovery now (not after the SDK's retries)."""
        if self.failure is None:
            self.failure = reason
        if self.scope is not None:
            self.scope.cancel()
        return _Stop(reason)

    def too_big(self, request: httpx2.Request) -> _Stop:
        size = _size(self.max_bytes)
        if request.method == "GET":  # the SDK's stream for server messages
            return self.stop(f"the event stream from {self.shown} exceeded {size}")
        return self.stop(f"the response from {self.shown} to {self.method} exceeded {size}")

    async def main(self, kind: str) -> None:
        try:
            with anyio.fail_after(self.timeout), anyio.CancelScope() as self.scope:
                await self.exchange(kind)
        except Exception as exc:  # the SDK fails in many shapes; none may escape as a traceback
            self.result.ok = False
            self.result.reason = self.failure or self.explain(exc)
            return
        if self.failure is not None:  # cancelled by a broken bound
            self.result.ok = False
            self.result.reason = self.failure

    async def exchange(self, kind: str) -> None:
        client = httpx2.AsyncClient(
            auth=None if self.auth is None else httpx2.BasicAuth(*self.auth),
            timeout=httpx2.Timeout(self.timeout),
            follow_redirects=False,
            trust_env=False,
            headers={
                "User-Agent": f"runtime/{__version__} (MCP discovery)",
                "Accept-Encoding": "identity",
            },
            transport=_Capped(self, httpx2.AsyncHTTPTransport(verify=self.verify, trust_env=False)),
        )
        info = mcp_types.Implementation(name="runtime", version=__version__)
        async with (
            client,
            streamable_http_client(
                self.endpoint,
                http_client=client,
                terminate_on_close=False,
                max_sse_event_size=self.max_bytes,
            ) as (read, write),
            ClientSession(read, write, client_info=info) as session,
        ):
            await session.initialize()
            if kind == "server":
                self.result.ok = True
                self.result.reason = f"{self.shown} answered initialize"
                return
            await self.list_pages(session, kind)

    async def list_pages(self, session: ClientSession, kind: str) -> None:
        result = self.result
        self.method = f"{kind}/list"
        cursor: str | None = None
        while True:
            params = None if cursor is None else mcp_types.PaginatedRequestParams(cursor=cursor)
            names: list[str]
            if kind == "tools":
                tools = await session.list_tools(params=params)
                names, cursor = [t.name for t in tools.tools], tools.next_cursor
            else:
                resources = await session.list_resources(params=params)
                names, cursor = [str(r.uri) for r in resources.resources], resources.next_cursor
            result.pages += 1
            result.names += names
            if not cursor or self.find in names:
                break
            if result.pages >= self.max_pages:
                result.cut_off = True
                break
        result.ok = True
        noun = kind if len(result.names) != 1 else kind[:-1]
        pages = "page" if result.pages == 1 else "pages"
        result.reason = f"{self.shown} listed {len(result.names)} {noun} on {result.pages} {pages}"
        if result.cut_off:
            result.reason += f"; more pages were left unread (at most {self.max_pages} are read)"

    def explain(self, exc: BaseException) -> str:
        """A reason for what ended the discovery, from its type and code only."""
        shown, method = self.shown, self.method
        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, (TimeoutError, httpx2.TimeoutException)):
                return f"{shown} did not answer within {self.timeout:g} s"
        if self.status is not None and not 200 <= self.status < 300:
            return f"{shown} answered HTTP {self.status} to {method}"
        for leaf in leaves:
            if isinstance(leaf, (httpx2.InvalidURL, httpx2.UnsupportedProtocol, UnicodeError)):
                return f"{shown} is not a valid http(s) URL"
            if isinstance(leaf, httpx2.ConnectError):
                if _caused_by(leaf, ssl.SSLError):
                    return f"{shown} failed the TLS handshake"
                if _caused_by(leaf, socket.gaierror):
                    return f"{shown} did not answer (the host name does not resolve)"
                return f"{shown} did not answer"
            if isinstance(leaf, (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)):
                return f"{shown} broke off the connection during {method}"
            if isinstance(leaf, (httpx2.HTTPError, OSError)):
                if _caused_by(leaf, ssl.SSLError):
                    return f"{shown} failed the TLS handshake"
                return f"{shown} did not answer {method}"
            if isinstance(leaf, ValidationError):  # a result that is not what MCP defines
                return f"malformed response from {shown} to {method}"
            if isinstance(leaf, MCPError):
                # The SDK reports its own parse failures as PARSE_ERROR and a stream that
                # ended unanswered as CONNECTION_CLOSED; any other code is the server's.
                if leaf.code == mcp_types.PARSE_ERROR:
                    return f"malformed response from {shown} to {method}"
                if leaf.code == mcp_types.CONNECTION_CLOSED:
                    return f"{shown} broke off its answer to {method}"
                return f"{shown}: server returned a JSON-RPC error to {method} (code {leaf.code})"
        kinds = sorted({type(leaf).__name__ for leaf in leaves})
        return f"MCP discovery with {shown} failed during {method} ({', '.join(kinds)})"


class _Capped(httpx2.AsyncBaseTransport):
    """The SDK client's transport: each response body bounded, the POST status and media noted."""

    def __init__(self, run: _Run, inner: httpx2.AsyncBaseTransport) -> None:
        self.run = run
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        run = self.run
        response = await self.inner.handle_async_request(request)
        try:
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise run.stop(
                    f"{run.shown} sent a compressed response to {run.method}, which is refused"
                )
            declared = response.headers.get("content-length", "").strip()
            if declared.isdigit() and int(declared) > run.max_bytes:
                raise run.too_big(request)
            if request.method == "POST":
                run.status = response.status_code
                media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
                if (
                    200 <= response.status_code < 300
                    and response.status_code != 202
                    and media not in _MEDIA
                    and _is_request(request)
                ):
                    raise run.stop(f"malformed response from {run.shown} to {run.method}")
        except _Stop:
            await response.aclose()
            raise
        response.stream = _CappedStream(run, request, response.stream)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _is_request(request: httpx2.Request) -> bool:
    """A JSON-RPC request (which needs an answer), not a notification or a response."""
    try:
        message = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return False
    return isinstance(message, dict) and "method" in message and "id" in message


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that ends the discovery once it passes ``max_bytes``."""

    def __init__(self, run: _Run, request: httpx2.Request, inner: Any) -> None:
        self.run = run
        self.request = request
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self.inner:
            total += len(chunk)
            if total > self.run.max_bytes:
                raise self.run.too_big(self.request)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
