"""MCP servers on loopback for the tests of ``runtime capability preflight --live``.

:func:`real_mcp_server` runs the official ``mcp`` SDK's FastMCP server (named
``MCPServer`` from mcp 2 on) with the Streamable HTTP transport under uvicorn,
in a thread, on 127.0.0.1 and a free port.

:func:`serve` runs a stdlib :mod:`http.server` double that speaks just enough
JSON-RPC for one :class:`Scenario`: pagination, oversized or dripping bodies, a
server that never answers, SSE framing, JSON-RPC errors, HTTP errors, malformed
answers; over TLS when given a certificate. Every request it receives is recorded.

Both are context managers: the server stops, and its thread ends, on exit.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MiB = 1024 * 1024
SECRET = "s3cr3t-remote-text-do-not-show"
SESSION_ID = "session-0123456789abcdef"

# ---------------------------------------------------------------------------
# The real server (the official SDK)


@dataclass
class RealServer:
    url: str
    calls: list[str]  # tool calls and resource reads that reached the server (must stay empty)


@contextmanager
def real_mcp_server(*, json_response: bool = False) -> Iterator[RealServer]:
    """FastMCP over Streamable HTTP with the tools ``echo`` and ``add`` and one resource."""
    import uvicorn

    calls: list[str] = []
    try:  # mcp >= 2 renamed FastMCP to MCPServer and moved the HTTP options to the app
        from mcp.server.mcpserver import MCPServer

        server: Any = MCPServer("runtime-test-server", log_level="WARNING")
        make_app = lambda: server.streamable_http_app(json_response=json_response)  # noqa: E731
    except ImportError:
        from mcp.server.fastmcp import FastMCP

        server = FastMCP("runtime-test-server", log_level="WARNING", json_response=json_response)
        make_app = server.streamable_http_app

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        calls.append("echo")
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        calls.append("add")
        return a + b

    @server.resource("resource://greeting")
    def greeting() -> str:
        """A greeting."""
        calls.append("greeting")
        return "hello"

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        make_app(), log_level="warning", lifespan="on", timeout_graceful_shutdown=2
    )
    runner = uvicorn.Server(config)
    thread = threading.Thread(
        target=runner.run, kwargs={"sockets": [sock]}, name="real-mcp-server", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while not runner.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.01)
        yield RealServer(f"http://127.0.0.1:{port}/mcp", calls)
    finally:
        runner.should_exit = True
        thread.join(10)
        sock.close()


# ---------------------------------------------------------------------------
# The stdlib double


@dataclass
class Seen:
    verb: str  # the HTTP method
    path: str  # path and query
    headers: dict[str, str]  # lower-case names
    message: Any  # the JSON-RPC message (None when the body was no JSON)


class Scenario:
    """A well-behaved server: overrides change one thing each."""

    tools: tuple[str, ...] = ("alpha", "beta")
    resources: tuple[str, ...] = ("file:///notes/today.md",)
    sse = False  # answer requests as text/event-stream

    def handle(self, h: Handler, message: Any) -> None:
        if not isinstance(message, dict) or "id" not in message:
            h.send_body(202, b"")
            return
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}, "resources": {}},
                "serverInfo": {"name": self.server_name(), "version": "1.0"},
            }
            self.answer(h, message["id"], result, {"Mcp-Session-Id": SESSION_ID})
        elif method in ("tools/list", "resources/list"):
            self.answer(h, message["id"], self.page(method, params.get("cursor")))
        else:
            self.error(h, message["id"], -32601, f"no such method {method} {SECRET}")

    def server_name(self) -> str:
        return "double"

    def page(self, method: str, cursor: str | None) -> dict[str, Any]:
        if method == "tools/list":
            return {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in self.tools]}
        return {"resources": [{"uri": u, "name": u.rsplit("/", 1)[-1]} for u in self.resources]}

    def answer(
        self, h: Handler, id_: Any, result: Any, headers: dict[str, str] | None = None
    ) -> None:
        self.reply(h, {"jsonrpc": "2.0", "id": id_, "result": result}, headers)

    def error(self, h: Handler, id_: Any, code: int, text: str) -> None:
        self.reply(h, {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": text}})

    def reply(self, h: Handler, message: Any, headers: dict[str, str] | None = None) -> None:
        if self.sse:
            h.send_sse([json.dumps(message)], headers)
        else:
            h.send_json(message, headers=headers)


class Paged(Scenario):
    """``count`` pages of one tool (``tool-N``) or resource (``file:///r/N``) each."""

    def __init__(self, count: int = 25) -> None:
        self.count = count

    def page(self, method: str, cursor: str | None) -> dict[str, Any]:
        n = 0 if cursor is None else int(cursor.removeprefix("cursor-"))
        if method == "tools/list":
            page: dict[str, Any] = {
                "tools": [{"name": f"tool-{n}", "inputSchema": {"type": "object"}}]
            }
        else:
            page = {"resources": [{"uri": f"file:///r/{n}", "name": f"r{n}"}]}
        if n + 1 < self.count:
            page["nextCursor"] = f"cursor-{n + 1}"
        return page


class SseFraming(Scenario):
    """SSE with a priming event, a comment, a server notification and request, CRLF
    line ends, a two-line ``data`` field and writes split in the middle of lines; the
    stream stays open after the answer."""

    sse = True

    def reply(self, h: Handler, message: Any, headers: dict[str, str] | None = None) -> None:
        text = json.dumps(message, indent=1)  # several lines: several data: fields
        data = "".join(f"data: {line}\r\n" for line in text.splitlines())
        stream = (
            "id: prime-1\r\ndata:\r\n\r\n"  # a priming event, no data
            ": keep-alive comment\r\n\r\n"
            "event: message\r\n"
            'data: {"jsonrpc":"2.0","method":"notifications/message",'
            '"params":{"level":"info","data":"working"}}\r\n\r\n'
            'data: {"jsonrpc":"2.0","id":"srv-1","method":"ping"}\r\n\r\n'
            f"id: ev-2\r\n{data}\r\n"
        ).encode()
        pieces = [stream[i : i + 7] for i in range(0, len(stream), 7)]
        h.send_chunked(200, "text/event-stream", pieces, headers, keep_open=True)


class RpcError(Scenario):
    """``tools/list`` answered by a JSON-RPC error whose message holds a secret."""

    def handle(self, h: Handler, message: Any) -> None:
        if isinstance(message, dict) and message.get("method") == "tools/list":
            self.error(h, message["id"], -32603, f"internal failure: {SECRET}")
        else:
            super().handle(h, message)


class HttpError(Scenario):
    def __init__(self, status: int = 500) -> None:
        self.status = status

    def handle(self, h: Handler, message: Any) -> None:
        h.send_body(self.status, f"error: {SECRET}".encode(), "text/plain")


class Oversized(Scenario):
    """``tools/list`` answered by ``size`` bytes: with a Content-Length (``declared``),
    close-delimited JSON (``json``) or a chunked event stream (``sse``)."""

    chunk = b"x" * 65536

    def __init__(self, mode: str, size: int = 2 * MiB) -> None:
        self.mode = mode
        self.size = size

    def handle(self, h: Handler, message: Any) -> None:
        if not (isinstance(message, dict) and message.get("method") == "tools/list"):
            super().handle(h, message)
            return
        count = self.size // len(self.chunk)
        if self.mode == "sse":
            pieces = [b'data: {"jsonrpc":"2.0","id":2,"result":{"tools":["', *[self.chunk] * count]
            h.send_chunked(200, "text/event-stream", pieces)
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if self.mode == "declared":
            h.send_header("Content-Length", str(count * len(self.chunk)))
        else:
            h.send_header("Connection", "close")
            h.close_connection = True
        h.end_headers()
        with suppress(OSError):
            for _ in range(count):
                h.wfile.write(self.chunk)
                h.wfile.flush()


class Hang(Scenario):
    """Accepts the connection and reads the request, then never answers."""

    def handle(self, h: Handler, message: Any) -> None:
        h.server.stopping.wait(30)


class Drip(Scenario):
    """Answers ``initialize`` with headers, then one byte of body now and then, forever."""

    def handle(self, h: Handler, message: Any) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "100000")
        h.end_headers()
        with suppress(OSError):
            while not h.server.stopping.wait(0.1):
                h.wfile.write(b" ")
                h.wfile.flush()


class Malformed(Scenario):
    """``initialize`` answered with broken JSON (``json``), a broken event (``sse``), an
    unexpected media type (``html``), an event stream that ends without the answer
    (``sse-empty``) or an answer to another request id (``wrong-id``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def handle(self, h: Handler, message: Any) -> None:
        if self.mode == "json":
            h.send_body(200, b'{"jsonrpc": "2.0", "id": 1, "result": {', "application/json")
        elif self.mode == "sse":
            h.send_chunked(200, "text/event-stream", [b"data: {not json\n\n"])
        elif self.mode == "html":
            h.send_body(200, f"<html>{SECRET}</html>".encode(), "text/html")
        elif self.mode == "sse-empty":
            h.send_chunked(200, "text/event-stream", [b": nothing here\n\n"])
        else:
            h.send_json({"jsonrpc": "2.0", "id": 41, "result": {}})


class BadServerInfo(Scenario):
    """A server whose name is long and whose tool list has entries that are not tools."""

    def server_name(self) -> str:
        return "n" * 500

    def page(self, method: str, cursor: str | None) -> dict[str, Any]:
        page = super().page(method, cursor)
        page["tools"] = [*page.get("tools", []), {"noname": True}, "junk", {"name": 7}]
        return page


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart
    server: DoubleServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        self.record(message)
        self.server.scenario.handle(self, message)

    def do_GET(self) -> None:
        self.record(None)
        self.send_body(405, b"")

    do_DELETE = do_GET

    def record(self, message: Any) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.server.lock:
            self.server.seen.append(Seen(self.command, self.path, headers, message))

    def send_body(self, status: int, body: bytes, media: str = "application/json") -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with suppress(OSError):
            self.wfile.write(body)

    def send_json(self, message: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(message).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def send_sse(self, payloads: list[str], headers: dict[str, str] | None = None) -> None:
        events = [f"data: {p}\n\n".encode() for p in payloads]
        self.send_chunked(200, "text/event-stream", events, headers)

    def send_chunked(
        self,
        status: int,
        media: str,
        pieces: list[bytes],
        headers: dict[str, str] | None = None,
        *,
        keep_open: bool = False,
    ) -> None:
        """A chunked body, one chunk a piece, flushed each; ``keep_open`` leaves the
        stream open afterwards (as an SSE stream may be) until the client leaves."""
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for piece in pieces:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            if keep_open:
                self.close_connection = True
                # Wait until the client hangs up (its read returns b"") or the test ends.
                self.connection.settimeout(0.1)
                while not self.server.stopping.is_set():
                    try:
                        if not self.connection.recv(1):
                            break
                    except TimeoutError:
                        continue
                return
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


class DoubleServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, scenario: Scenario, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.scenario = scenario
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-answer (as the tests make it do) is no error

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self, path: str = "/mcp", *, userinfo: str = "", rest: str = "") -> str:
        at = f"{userinfo}@" if userinfo else ""
        return f"{self.scheme}://{at}127.0.0.1:{self.port}{path}{rest}"

    def methods(self) -> list[str]:
        with self.lock:
            return [
                str(s.message.get("method")) if isinstance(s.message, dict) else s.verb
                for s in self.seen
            ]


@contextmanager
def serve(
    scenario: Scenario | None = None, *, tls: ssl.SSLContext | None = None
) -> Iterator[DoubleServer]:
    """Run a :class:`DoubleServer` for ``scenario`` until the block ends (HTTPS with ``tls``)."""
    server = DoubleServer(scenario or Scenario(), tls)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def free_port() -> int:
    """A loopback port with nobody listening (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
