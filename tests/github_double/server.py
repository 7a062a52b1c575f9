"""HTTP(S) plumbing of the GitHub double: server, handler, auth and faults."""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import secrets
import socket
import ssl
import struct
import threading
import time
import traceback
import zlib
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from .faults import POST_ROUTE_KINDS, TRICKLE_LIMIT, Fault
from .http_types import DOCS, ApiError, RecordedRequest, Request, Response, error_body

if TYPE_CHECKING:
    from .double import GitHubDouble

__all__ = ["DoubleServer"]

_RATE_LIMIT_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
_SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {request_id}."
)


class DoubleServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` that counts connections and can speak TLS."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, double: GitHubDouble, ssl_context: ssl.SSLContext | None) -> None:
        self.double = double
        self.ssl_context = ssl_context
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        #: Set when the double stops: a trickle in progress ends.
        self.stopping = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's
        # algorithm plus delayed ACKs would add ~40 ms to every keep-alive response.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.double._count_connection()
        with self._open_lock:
            self._open.add(sock)
        return sock, address

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.ssl_context is None:
            super().finish_request(request, client_address)
            return
        # The TLS handshake runs here, in the per-connection thread, so a slow
        # or silent client never blocks the accept loop.
        request.settimeout(_Handler.timeout)
        try:
            tls_socket = self.ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        with self._open_lock:
            self._open.discard(request)
            self._open.add(tls_socket)
        try:
            super().finish_request(tls_socket, client_address)
        finally:
            with self._open_lock:
                self._open.discard(tls_socket)
            with contextlib.suppress(OSError):
                tls_socket.close()

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_open_connections(self) -> None:
        self.stopping.set()
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up mid-response are expected in fault tests.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "GitHub.com"
    sys_version = ""
    #: Idle keep-alive connections are closed after this many seconds.
    timeout = 30
    server: DoubleServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    # ------------------------------------------------------------ input
    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size_line = self.rfile.readline()
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # ---------------------------------------------------------- output
    def _write(self, response: Response, *, declared_length: int | None = None) -> None:
        self.send_response(response.status)
        mode = self._compression(response)
        if mode is not None:
            coding = "deflate" if mode == "deflate-raw" else mode
            response = Response(
                response.status,
                _compress(response.body, mode),
                {**response.headers, "Content-Encoding": coding},
            )
        for name, value in response.headers.items():
            self.send_header(name, value)
        body = b"" if self.command == "HEAD" else response.body
        self.send_header(
            "Content-Length",
            str(declared_length if declared_length is not None else len(response.body)),
        )
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if body:
            self.wfile.write(body)
        self.wfile.flush()

    def _compression(self, response: Response) -> str | None:
        """How to compress ``response`` (the double's ``compress``, if the client accepts it)."""
        wanted = self.server.double.compress
        if wanted is None or not response.body or "Content-Encoding" in response.headers:
            return None
        name = "deflate" if wanted == "deflate-raw" else wanted
        listed = self.headers.get("Accept-Encoding", "").split(",")
        accepted = {c.split(";")[0].strip().lower() for c in listed}
        return wanted if name in accepted else None

    # --------------------------------------------------------- dispatch
    def _dispatch(self) -> None:
        double = self.server.double
        body = self._read_body()
        headers = {name.lower(): value for name, value in self.headers.items()}
        double._record(RecordedRequest(self.command, self.path, headers, body))
        split = urlsplit(self.path)
        route_path, api_prefix = _strip_prefix(split.path)
        fault = double._faults.take(self.command, (route_path, split.path, self.path))
        request_id = f"{secrets.token_hex(2).upper()}:{secrets.token_hex(3).upper()}:{secrets.token_hex(4).upper()}"
        if fault is not None and fault.delay:
            time.sleep(fault.delay)
        if fault is not None and fault.kind == "drop":
            self._drop(fault)
            return
        if fault is not None and fault.kind == "gzip_bomb":
            headers = {
                "Content-Type": "application/json; charset=utf-8",
                "Content-Encoding": "gzip",
                "X-GitHub-Request-Id": request_id,
            }
            self._write(Response(200, _gzip_bomb(fault.size), headers))
            return
        if fault is not None and fault.kind in (
            "status",
            "rate_limit",
            "secondary_rate_limit",
            "redirect",
        ):
            self._write(self._fault_response(fault, request_id))
            return
        response = self._respond(route_path, api_prefix, split.query, headers, body, request_id)
        if fault is not None and fault.kind in POST_ROUTE_KINDS:
            self._write_mangled(response, fault)
            return
        self._write(response)

    def _respond(
        self,
        route_path: str,
        api_prefix: str,
        query: str,
        headers: dict[str, str],
        body: bytes,
        request_id: str,
    ) -> Response:
        double = self.server.double
        is_graphql = route_path == "/graphql"
        resource = "graphql" if is_graphql else "core"
        common = {
            "X-GitHub-Request-Id": request_id,
            "X-GitHub-Media-Type": "github.v3; format=json",
        }
        login = double._authenticate(headers.get("authorization"))
        if login is None:
            response = ApiError(401, "Bad credentials").response()
            response.headers.update(common)
            response.headers.update(double._rate_headers(resource, consume=False) or {})
            return response
        rate = double._rate_headers(resource, consume=True)
        if rate is None:
            response = self._primary_limit_response(resource, request_id)
            response.headers.update(common)
            return response
        web_root = double._web_root_for(headers.get("host"))
        try:
            if is_graphql:
                if self.command != "POST":
                    raise ApiError(
                        404, "Not Found", documentation_url="https://docs.github.com/graphql"
                    )
                rest_root = web_root + ("/api/v3" if api_prefix else "")
                status, payload = double._graphql.execute(
                    body, double._graphql_context(login, rest_root)
                )
                response = Response.json(status, payload)
            else:
                request = Request(
                    method=self.command,
                    path=route_path,
                    raw_path=self.path,
                    headers=headers,
                    body=body,
                    api_root=web_root + api_prefix,
                    web_root=web_root,
                    viewer=login,
                    query_string=query,
                )
                response = double._rest.handle(request)
        except ApiError as error:
            response = error.response()
        except Exception as error:  # a bug in the double: answer 500 and keep the traceback
            trace = traceback.format_exc()
            double._record_error(trace)
            response = Response.json(
                500,
                {
                    "message": f"GitHubDouble internal error: {error!r}",
                    "traceback": trace,
                    "documentation_url": DOCS,
                },
            )
        response.headers.update(common)
        response.headers.update(rate)
        response.headers["X-OAuth-Scopes"] = ", ".join(double.scopes)
        response.headers.setdefault("X-Accepted-OAuth-Scopes", "repo" if not is_graphql else "")
        return response

    # ----------------------------------------------------------- faults
    def _primary_limit_response(self, resource: str, request_id: str) -> Response:
        double = self.server.double
        limit, _, reset = double._rate_numbers(resource)
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Used": str(limit),
            "X-RateLimit-Reset": str(reset),
            "X-RateLimit-Resource": resource,
        }
        return Response.json(
            403,
            error_body(
                403, f"API rate limit exceeded for user ID {double.viewer_id}.", _RATE_LIMIT_DOCS
            ),
            headers,
        )

    def _fault_response(self, fault: Fault, request_id: str) -> Response:
        """The canned answer of a pre-route fault (status, rate limits, redirect)."""
        double = self.server.double
        headers = {
            "X-GitHub-Request-Id": request_id,
            "Content-Type": "application/json; charset=utf-8",
        }
        payload: dict[str, Any]
        if fault.kind == "rate_limit":
            limit = double.rate_limit
            headers.update(
                {
                    "X-RateLimit-Limit": str(limit),
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Used": str(limit),
                    "X-RateLimit-Reset": str(int(time.time()) + fault.reset_in),
                    "X-RateLimit-Resource": "core",
                }
            )
            message = f"API rate limit exceeded for user ID {double.viewer_id}."
            payload = error_body(fault.status, message, _RATE_LIMIT_DOCS)
        elif fault.kind == "secondary_rate_limit":
            headers["Retry-After"] = _retry_after(fault, 60)
            message = _SECONDARY_MESSAGE.format(request_id=request_id)
            payload = error_body(
                fault.status, message, f"{_RATE_LIMIT_DOCS}#about-secondary-rate-limits"
            )
        elif fault.kind == "redirect":
            assert fault.location is not None
            location = fault.location
            if urlsplit(location).path in ("", "/"):  # a bare origin: keep the path and query
                location = location.rstrip("/") + self.path
            headers["Location"] = location
            payload = {"message": "Moved Permanently", "url": location, "documentation_url": DOCS}
        else:
            payload = error_body(fault.status, _phrase(fault.status))
        if fault.retry_after is not None:
            headers["Retry-After"] = _retry_after(fault, fault.retry_after)
        headers.update(fault.headers)
        body = fault.body if fault.body is not None else json.dumps(payload).encode()
        return Response(fault.status, body, headers)

    def _drop(self, fault: Fault) -> None:
        self.close_connection = True
        if fault.reset_connection:
            with contextlib.suppress(OSError):
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _write_mangled(self, response: Response, fault: Fault) -> None:
        if fault.kind in ("trickle_headers", "trickle_body"):
            self._trickle(response, fault)
            return
        if fault.kind == "next_link":
            target = fault.location or self._next_page()
            headers = {**response.headers, "Link": f'<{target}>; rel="next"'}
            self._write(Response(response.status, response.body, headers))
            return
        body = response.body or b'{"message": "ok"}'
        if fault.kind == "truncate":
            # Promise more bytes than we send, then hang up.
            self.close_connection = True
            cut = body[: max(len(body) // 2, 1)]
            self._write(Response(response.status, cut, response.headers), declared_length=len(body))
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault.kind == "bad_encoding":
            headers = {**response.headers, "Content-Encoding": "gzip"}
            self._write(Response(response.status, b"not gzip at all" + body, headers))
            return
        if fault.kind == "cut_json":
            mangled = body[: max(len(body) // 2, 1)]
        else:
            mangled = (
                fault.body if fault.body is not None else b'{"message": "ok", "items": [1, 2,, }'
            )
        headers = dict(response.headers)
        headers["Content-Type"] = "application/json; charset=utf-8"
        self._write(Response(response.status, mangled, headers))

    def _next_page(self) -> str:
        """This request's URL with ``page`` one higher (1 when it has none)."""
        split = urlsplit(self.path)
        query = parse_qsl(split.query, keep_blank_values=True)
        page = next((int(v) for k, v in query if k == "page" and v.isdigit()), 1)
        query = [(k, v) for k, v in query if k != "page"] + [("page", str(page + 1))]
        root = self.server.double._web_root_for(self.headers.get("Host"))
        return f"{root}{split.path}?{urlencode(query)}"

    def _trickle(self, response: Response, fault: Fault) -> None:
        """``response`` one byte every ``fault.interval`` seconds (the headers too, for
        ``trickle_headers``), until it is sent, the client hangs up, or TRICKLE_LIMIT."""
        self.close_connection = True
        fields = [f"HTTP/1.1 {response.status} {_phrase(response.status)}"]
        fields += [f"{name}: {value}" for name, value in response.headers.items()]
        fields += [f"Content-Length: {len(response.body)}", "Connection: close"]
        head = ("\r\n".join(fields) + "\r\n\r\n").encode("latin-1")
        slow = head + response.body
        if fault.kind == "trickle_body":
            slow = response.body
            self.wfile.write(head)
            self.wfile.flush()
        end = time.monotonic() + TRICKLE_LIMIT
        try:
            for byte in slow:
                if time.monotonic() > end or self.server.stopping.is_set():
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(fault.interval)
        except OSError:  # the client hung up: what a trickle is waiting for
            pass
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


@functools.lru_cache(maxsize=2)
def _gzip_bomb(size: int) -> bytes:
    """One gzip member that decodes to ``size`` zero bytes (about size / 1000 bytes).

    A MiB of zeros, deflated and followed by a full flush, is a block that stands
    alone; repeating it costs nothing, where deflating 2 GiB would take seconds.
    """
    mib = 1024 * 1024
    chunk = bytes(mib)
    whole, rest = divmod(size, mib)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    tail = deflate.compress(bytes(rest)) + deflate.flush()
    crc = 0
    for _ in range(whole):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(bytes(rest), crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip, deflate, no name, no time
    trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
    return header + block * whole + tail + trailer


def _compress(body: bytes, mode: str) -> bytes:
    if mode == "gzip":
        return gzip.compress(body, mtime=0)
    if mode == "deflate-raw":
        raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return raw.compress(body) + raw.flush()
    return zlib.compress(body)


def _retry_after(fault: Fault, default: int) -> str:
    """The ``Retry-After`` value of ``fault``: its seconds, or the HTTP date that many
    seconds from now (RFC 9110 allows either)."""
    seconds = fault.retry_after if fault.retry_after is not None else default
    if fault.retry_after_date:
        return formatdate(time.time() + seconds, usegmt=True)
    return str(seconds)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _strip_prefix(path: str) -> tuple[str, str]:
    """Map ``/api/v3/x`` -> ``/x`` and ``/api/graphql`` -> ``/graphql``."""
    if path == "/api/graphql" or path == "/api/graphql/":
        return "/graphql", "/api"
    if path == "/graphql/":
        return "/graphql", ""
    if path == "/api/v3" or path.startswith("/api/v3/"):
        return path[len("/api/v3") :] or "/", "/api/v3"
    return path or "/", ""
