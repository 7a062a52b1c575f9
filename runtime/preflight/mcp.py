"""A small, bounded, read-only MCP discovery client over Streamable HTTP.

``runtime capability preflight --live`` uses it to check declared ``mcpServer``,
``mcpTool`` and ``mcpResource`` requirements. It speaks just enough of MCP's
Streamable HTTP transport (JSON-RPC 2.0 over POST) to ask a server who it is and
what it lists:

1. ``initialize`` (protocol revision :data:`PROTOCOL_VERSION`), keeping the
   ``Mcp-Session-Id`` the server hands out and the protocol version it chose;
2. the ``notifications/initialized`` notification;
3. for ``kind="tools"`` / ``"resources"``: ``tools/list`` / ``resources/list``,
   following ``nextCursor`` for at most ``max_pages`` pages.

A response is either ``application/json`` or ``text/event-stream`` (SSE whose
``data:`` lines carry JSON-RPC messages; the server's own notifications and
requests on that stream are skipped until the answer arrives).

Bounds: ``timeout`` is one deadline for the whole discovery (connects, sends,
slow or dripping bodies), each response body is read as a stream and never
buffered past ``max_bytes``, and compressed bodies are refused (the client asks
for ``identity``) so that a small body cannot inflate past the cap.

Read-only: the client never sends ``tools/call``, ``resources/read``, nor the
DELETE that ends a session. Redirects are not followed, and proxy variables,
``.netrc`` and other environment settings are ignored.

A :class:`Discovery` ``reason`` is meant for a report: it names the server only
as :func:`sanitize_url` shows it (credentials, query and fragment removed) and
never carries text the server sent (error messages, bodies, names).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import json
import re
import socket
import ssl
from collections.abc import AsyncGenerator, Callable, Coroutine
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from runtime import __version__

if TYPE_CHECKING:
    import httpx

__all__ = ["PROTOCOL_VERSION", "Discovery", "discover", "sanitize_url"]

PROTOCOL_VERSION = "2025-11-25"
"""The protocol revision offered in ``initialize`` (the newest with that handshake)."""

MAX_SERVER_NAME = 100
ACCEPT = "application/json, text/event-stream"
# Session ids and protocol versions go back into request headers: visible ASCII only.
_HEADER_TOKEN = re.compile(r"[\x21-\x7e]{1,1024}")
_EOL = re.compile(rb"\r\n|\r|\n")
_DIGITS = re.compile(r"[0-9]{1,20}")
_LISTS = {
    "tools": ("tools/list", "tools", "name"),
    "resources": ("resources/list", "resources", "uri"),
}

T = TypeVar("T")


@dataclass
class Discovery:
    ok: bool  # the server answered initialize (and the list calls when asked)
    reason: str  # short, for a report: no remote text, no URL credentials, query or fragment
    server_name: str | None = None  # serverInfo.name from initialize, at most 100 characters
    names: list[str] = field(default_factory=list)  # tool names or resource URIs seen
    pages: int = 0  # list pages read
    cut_off: bool = False  # stopped at max_pages with more pages available


class _Failure(Exception):
    """Ends a discovery with ``ok=False``; ``reason`` is safe to show."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def sanitize_url(url: str) -> str:
    """Scheme, host, port and path only: no credentials, query or fragment."""
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

    Never raises for anything the server or the network does; the answer is a
    :class:`Discovery`. With ``find``, listing stops after the page that names it.
    """
    if kind not in ("server", "tools", "resources"):
        raise ValueError(f"unknown discovery kind {kind!r}")
    if not timeout > 0 or max_pages < 1 or max_bytes < 1:
        raise ValueError("timeout, max_pages and max_bytes must be positive")
    shown = sanitize_url(url)
    target = _split_target(url)
    if target is None:
        return Discovery(False, f"{shown or 'the MCP server URL'} is not a valid http(s) URL")
    if importlib.util.find_spec("httpx") is None:  # an optional dependency of the engine
        return Discovery(False, "live MCP checks need the httpx package, which is not installed")
    endpoint, auth = target
    result = Discovery(False, "")
    run = _Run(endpoint, auth, shown, result, timeout, max_pages, max_bytes, verify, find)
    _run_coroutine(lambda: run.main(kind))
    return result


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


def _run_coroutine(factory: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``factory()`` on a private event loop (in a worker thread when one already runs here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        _run_on_new_loop(factory())
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: _run_on_new_loop(factory())).result()


def _run_on_new_loop(coro: Coroutine[Any, Any, T]) -> T:
    # Not asyncio.run(): its close waits for the default executor, where a DNS lookup
    # abandoned at the deadline may still be running; loop.close() does not wait.
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
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


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


class _Run:
    """One discovery: the HTTP client, the session state and the result being filled in."""

    def __init__(
        self,
        endpoint: str,
        auth: tuple[str, str] | None,
        shown: str,
        result: Discovery,
        timeout: float,
        max_pages: int,
        max_bytes: int,
        verify: ssl.SSLContext | bool,
        find: str | None,
    ) -> None:
        self.endpoint = endpoint
        self.auth = auth
        self.shown = shown
        self.result = result
        self.timeout = timeout
        self.max_pages = max_pages
        self.max_bytes = max_bytes
        self.verify = verify
        self.find = find
        self.method = "initialize"  # the exchange under way, for reasons
        self.next_id = 0
        self.session_id: str | None = None
        self.protocol: str | None = None

    async def main(self, kind: str) -> None:
        import httpx

        try:
            async with asyncio.timeout(self.timeout):
                async with httpx.AsyncClient(
                    auth=None if self.auth is None else httpx.BasicAuth(*self.auth),
                    # Plain http never uses TLS: skip building a context (tens of ms).
                    verify=self.verify if self.endpoint.startswith("https:") else False,
                    timeout=httpx.Timeout(self.timeout),
                    follow_redirects=False,
                    trust_env=False,
                    headers={"User-Agent": f"runtime/{__version__} (MCP discovery)"},
                ) as client:
                    await self.exchange(client, kind)
        except _Failure as failure:
            self.fail(failure.reason)
        except (httpx.InvalidURL, UnicodeError):  # a host name IDNA refuses, for one
            self.fail(f"{self.shown} is not a valid http(s) URL")
        except (TimeoutError, httpx.TimeoutException):
            self.fail(f"{self.shown} did not answer within {self.timeout:g} s")
        except httpx.ConnectError as exc:
            if _caused_by(exc, ssl.SSLError):
                self.fail(f"{self.shown} failed the TLS handshake")
            elif _caused_by(exc, socket.gaierror):
                self.fail(f"{self.shown} did not answer (the host name does not resolve)")
            else:
                self.fail(f"{self.shown} did not answer")
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            self.fail(f"{self.shown} broke off the connection during {self.method}")
        except (httpx.HTTPError, OSError) as exc:
            if _caused_by(exc, ssl.SSLError):
                self.fail(f"{self.shown} failed the TLS handshake")
            else:
                self.fail(f"{self.shown} did not answer {self.method}")

    def fail(self, reason: str) -> None:
        self.result.ok = False
        self.result.reason = reason

    async def exchange(self, client: httpx.AsyncClient, kind: str) -> None:
        init = await self.request(
            client,
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "runtime", "version": __version__},
            },
        )
        self.take_initialize(init)
        await self.notify(client, "notifications/initialized")
        if kind == "server":
            self.result.ok = True
            self.result.reason = f"{self.shown} answered initialize"
            return
        method, key, name_field = _LISTS[kind]
        result = self.result
        cursor: str | None = None
        found = False
        while True:
            page = await self.request(
                client, method, None if cursor is None else {"cursor": cursor}
            )
            result.pages += 1
            items = page.get(key)
            if not isinstance(items, list):
                raise self.malformed()
            for item in items:
                name = item.get(name_field) if isinstance(item, dict) else None
                if isinstance(name, str):
                    result.names.append(name)
                    found = found or name == self.find
            next_cursor = page.get("nextCursor")
            if next_cursor is not None and not isinstance(next_cursor, str):
                raise self.malformed()
            if found or not next_cursor:
                break
            if result.pages >= self.max_pages:
                result.cut_off = True
                break
            cursor = next_cursor
        result.ok = True
        noun = kind if len(result.names) != 1 else kind[:-1]
        pages = "page" if result.pages == 1 else "pages"
        result.reason = f"{self.shown} listed {len(result.names)} {noun} on {result.pages} {pages}"
        if result.cut_off:
            result.reason += f"; more pages were left unread (at most {self.max_pages} are read)"

    def take_initialize(self, init: dict[str, Any]) -> None:
        version = init.get("protocolVersion")
        if not isinstance(version, str) or not _HEADER_TOKEN.fullmatch(version):
            raise self.malformed()
        self.protocol = version
        info = init.get("serverInfo")
        name = info.get("name") if isinstance(info, dict) else None
        if isinstance(name, str):
            self.result.server_name = name[:MAX_SERVER_NAME]

    def headers(self) -> dict[str, str]:
        headers = {
            "Accept": ACCEPT,
            "Content-Type": "application/json",
            "Accept-Encoding": "identity",
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol is not None:
            headers["MCP-Protocol-Version"] = self.protocol
        return headers

    def malformed(self) -> _Failure:
        return _Failure(f"malformed response from {self.shown} to {self.method}")

    def too_big(self) -> _Failure:
        return _Failure(
            f"the response from {self.shown} to {self.method} exceeded {_size(self.max_bytes)}"
        )

    def check_status(self, response: httpx.Response) -> None:
        if not 200 <= response.status_code < 300:
            raise _Failure(f"{self.shown} answered HTTP {response.status_code} to {self.method}")

    async def notify(self, client: httpx.AsyncClient, method: str) -> None:
        self.method = method
        body = json.dumps({"jsonrpc": "2.0", "method": method}).encode()
        async with client.stream(
            "POST", self.endpoint, content=body, headers=self.headers()
        ) as response:
            self.check_status(response)
            # Nothing to read (the answer is 202 Accepted); leaving closes the response.

    async def request(
        self, client: httpx.AsyncClient, method: str, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Send one JSON-RPC request; its ``result`` object, or a :class:`_Failure`."""
        self.method = method
        self.next_id += 1
        request_id = self.next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        body = json.dumps(message).encode()
        async with client.stream(
            "POST", self.endpoint, content=body, headers=self.headers()
        ) as response:
            self.check_status(response)
            if method == "initialize":
                session_id = response.headers.get("mcp-session-id")
                if session_id is not None:
                    if not _HEADER_TOKEN.fullmatch(session_id):
                        raise self.malformed()
                    self.session_id = session_id
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise _Failure(
                    f"{self.shown} sent a compressed response to {method}, which is refused"
                )
            declared = response.headers.get("content-length")
            if (
                declared is not None
                and _DIGITS.fullmatch(declared.strip())
                and int(declared) > self.max_bytes
            ):
                raise self.too_big()
            media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if media == "application/json":
                answer = await self.read_json(response, request_id)
            elif media == "text/event-stream":
                answer = await self.read_sse(response, request_id)
            else:
                raise self.malformed()
        return self.result_of(answer)

    async def body(self, response: httpx.Response) -> AsyncGenerator[bytes, None]:
        """The raw body, chunk by chunk, failing once it passes ``max_bytes``."""
        total = 0
        async for chunk in response.aiter_raw():
            total += len(chunk)
            if total > self.max_bytes:
                raise self.too_big()
            yield chunk

    async def read_json(self, response: httpx.Response, request_id: int) -> dict[str, Any]:
        buffer = bytearray()
        async with aclosing(self.body(response)) as chunks:
            async for chunk in chunks:
                buffer += chunk
        answer = self.find_answer(self.parse(buffer), request_id)
        if answer is None:
            raise self.malformed()
        return answer

    async def read_sse(self, response: httpx.Response, request_id: int) -> dict[str, Any]:
        parser = _SseParser()
        async with aclosing(self.body(response)) as chunks:
            async for chunk in chunks:
                for data in parser.feed(chunk):
                    answer = self.find_answer(self.parse(data), request_id)
                    if answer is not None:
                        return answer  # the stream may stay open: stop reading here
        for data in parser.finish():
            answer = self.find_answer(self.parse(data), request_id)
            if answer is not None:
                return answer
        raise self.malformed()  # the stream ended without the answer

    def parse(self, data: bytearray | str) -> Any:
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            raise self.malformed() from None

    def find_answer(self, message: Any, request_id: int) -> dict[str, Any] | None:
        """The response to ``request_id`` in a message (or batch); None for anything else."""
        if isinstance(message, list):
            for item in message:
                answer = self.find_answer(item, request_id)
                if answer is not None:
                    return answer
            return None
        if not isinstance(message, dict):
            raise self.malformed()
        if "method" in message:
            return None  # a notification or request from the server: not ours to answer
        answer_id = message.get("id")
        if type(answer_id) is not int or answer_id != request_id:
            return None
        return message

    def result_of(self, answer: dict[str, Any]) -> dict[str, Any]:
        if "error" in answer:
            error = answer["error"]
            code = error.get("code") if isinstance(error, dict) else None
            shown_code = f" (code {code})" if type(code) is int else ""
            raise _Failure(
                f"{self.shown}: server returned a JSON-RPC error to {self.method}{shown_code}"
            )
        result = answer.get("result")
        if not isinstance(result, dict):
            raise self.malformed()
        return result


class _SseParser:
    """Incremental ``text/event-stream`` parsing: the data of each ``message`` event.

    Only the unfinished line is kept between chunks, in one growing buffer, so the
    memory held stays near the bytes read (which ``max_bytes`` bounds).
    """

    def __init__(self) -> None:
        self.pending = bytearray()  # the current line, not yet ended
        self.after_cr = False  # the last chunk ended in CR: a LF opening the next one is its pair
        self.first_line = True
        self.data: list[str] = []
        self.event = ""

    def feed(self, chunk: bytes) -> list[str]:
        events: list[str] = []
        start = 1 if self.after_cr and chunk.startswith(b"\n") else 0
        self.after_cr = False
        for match in _EOL.finditer(chunk, start):
            self.pending += chunk[start : match.start()]
            start = match.end()
            if match.group() == b"\r" and start == len(chunk):
                self.after_cr = True
            event = self.line()
            if event is not None:
                events.append(event)
        self.pending += chunk[start:]
        return events

    def finish(self) -> list[str]:
        """At the end of the stream: a last event that lacks its blank line still counts."""
        events = self.feed(b"\n") if self.pending else []
        event = self.line()
        if event is not None:
            events.append(event)
        return events

    def line(self) -> str | None:
        """Take the pending line; the data of an event when it is the blank line ending one."""
        text = self.pending.decode("utf-8", errors="replace")
        self.pending.clear()
        if self.first_line:
            self.first_line = False
            text = text.removeprefix("\ufeff")
        if not text:
            data, event = "\n".join(self.data), self.event
            self.data, self.event = [], ""
            return data if data and event in ("", "message") else None
        if text.startswith(":"):
            return None
        name, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self.data.append(value)
        elif name == "event":
            self.event = value
        return None
