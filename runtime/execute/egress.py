"""The host-filtering proxy a confined step reaches the network through.

A binary step runs in a network namespace of its own: nothing but its own
loopback. When the step may reach hosts (its program's profile, the policy's
``binary_hosts``, narrowed by the capability's ``requires.network``), runtime
serves this proxy on a unix socket that is bound into the sandbox, and the
code inside (:mod:`runtime.execute.inside`) carries the program's
connections to it. The proxy speaks the two forms programs send through
``HTTPS_PROXY``/``HTTP_PROXY`` (git's libcurl, gh's Go client):

* ``CONNECT host:port`` (HTTPS): the tunnel opens only to a host and port
  the step may reach, and carries bytes both ways; TLS stays end to end;
* ``GET http://host/path`` (plain HTTP): forwarded to an allowed host with
  ``Connection: close``, so one connection is one request.

Anything else gets ``403`` with the reason, and the refusal is kept so the
step's error can name the host (:attr:`EgressProxy.refused`). The proxy
resolves names itself, so the sandbox needs no DNS. The anchor is Anthropic's
sandbox-runtime, which filters hosts the same way (a proxy outside, reached
through a socket bound into a bubblewrap sandbox).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

# A request head longer than this is refused (no client sends one).
MAX_HEAD = 16 * 1024
# Seconds to open a connection to an allowed host.
CONNECT_TIMEOUT = 10.0
# Ports a host named without one may be reached on.
WEB_PORTS = (80, 443)


@dataclass(frozen=True)
class Allowed:
    """A host (a glob) and the port it may be reached on (None: 80 and 443)."""

    host: str
    port: int | None = None

    @staticmethod
    def parse(entry: str) -> Allowed:
        text = entry.strip().lower().rstrip(".")
        if text.startswith("["):
            inside, _, rest = text[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ""
            return Allowed(inside, int(port) if port.isdigit() else None)
        name, colon, port = text.rpartition(":")
        if colon and port.isdigit() and ":" not in name:
            return Allowed(name, int(port))
        return Allowed(text)

    def admits(self, host: str, port: int) -> bool:
        if self.port is None and port not in WEB_PORTS:
            return False
        if self.port is not None and port != self.port:
            return False
        return fnmatch.fnmatchcase(host, self.host)

    def __str__(self) -> str:
        if self.port is None:
            return self.host
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """A service on this machine's loopback (``localhost:8443``, ``127.0.0.1:9000``):
        clients never send those through a proxy, so the sandbox listens on its address."""
        return self.port is not None and (
            self.host in ("localhost", "::1") or self.host.startswith("127.")
        )


class EgressProxy:
    """One step's proxy: a unix socket in a private folder, served by daemon threads."""

    def __init__(
        self, allowed: Sequence[Allowed], check: Callable[[str], str | None] | None = None
    ) -> None:
        self.allowed = tuple(allowed)
        self._check = check  # a further rule (requires.network): why a host is refused
        self.refused: list[str] = []
        self._folder = tempfile.mkdtemp(prefix="runtime-egress-")
        self.path = os.path.join(self._folder, "proxy.sock")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(64)
        self._closed = False
        threading.Thread(target=self._accept, name="runtime-egress", daemon=True).start()

    def decide(self, host: str, port: int) -> str | None:
        """Why ``host:port`` is refused, or None when the step may reach it."""
        name = host.lower().rstrip(".")
        if not any(a.admits(name, port) for a in self.allowed):
            shown = ", ".join(map(str, self.allowed)) or "none"
            return f"{name}:{port} is not a host this step may reach (allowed: {shown})"
        return self._check(name) if self._check is not None else None

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self._folder)

    # -- serving -----------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            head, rest = _read_head(client)
            if head is None:
                return
            line, _, headers = head.partition(b"\r\n")
            parts = line.decode("latin-1").split(" ")
            if len(parts) != 3:
                _answer(client, 400, "not an HTTP proxy request")
                return
            method, target, version = parts
            if method.upper() == "CONNECT":
                self._tunnel(client, target, rest)
            elif target.lower().startswith("http://"):
                self._forward(client, method, target, version, headers, rest)
            else:
                _answer(client, 400, f"{method} {target}: only CONNECT and http:// URLs")
        except OSError:
            pass
        finally:
            client.close()

    def _refuse(self, client: socket.socket, why: str) -> None:
        self.refused.append(why)
        _answer(client, 403, why)

    def _open(self, client: socket.socket, authority: str, default: int) -> socket.socket | None:
        """A connection to ``host[:port]`` if the step may reach it; else the client gets
        the refusal (or why it cannot be reached) and None comes back."""
        host, port = _split(authority, default)
        if port is None:
            _answer(client, 400, f"{authority}: not a port")
            return None
        why = self.decide(host, port)
        if why is not None:
            self._refuse(client, why)
            return None
        try:
            upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            _answer(client, 502, f"cannot reach {host}:{port}: {exc.strerror or exc}")
            return None
        upstream.settimeout(None)
        return upstream

    def _tunnel(self, client: socket.socket, target: str, rest: bytes) -> None:
        upstream = self._open(client, target, 443)
        if upstream is None:
            return
        with upstream:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            _splice(client, upstream)

    def _forward(
        self,
        client: socket.socket,
        method: str,
        url: str,
        version: str,
        headers: bytes,
        rest: bytes,
    ) -> None:
        authority, _, path = url[len("http://") :].partition("/")
        kept = [
            h
            for h in headers.split(b"\r\n")
            if h
            and h.split(b":", 1)[0].strip().lower() not in (b"connection", b"proxy-connection")
            and not h.lower().startswith(b"proxy-authorization")
        ]
        request = f"{method} /{path} {version}\r\n".encode("latin-1")
        request += b"".join(h + b"\r\n" for h in kept) + b"Connection: close\r\n\r\n" + rest
        upstream = self._open(client, authority, 80)
        if upstream is None:
            return
        with upstream:
            upstream.sendall(request)
            _splice(client, upstream)


def _read_head(client: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            _answer(client, 431, "request head too large")
            return None, b""
        chunk = client.recv(4096)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _split(authority: str, default: int) -> tuple[str, int | None]:
    """(host, port) of ``host[:port]`` or ``[v6][:port]``; port None when it is not a number."""
    text = authority.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, colon, port = text.rpartition(":")
        if not colon:
            host, port = text, ""
    if not port:
        return host, default
    return host, int(port) if port.isdigit() and 0 < int(port) < 65536 else None


def _answer(client: socket.socket, status: int, why: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 431: "Too Large", 502: "Bad Gateway"}
    body = f"runtime: {why}\n".encode()
    head = (
        f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        client.sendall(head.encode() + body)


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Carry bytes both ways until both sides are done."""

    def pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join()


@contextlib.contextmanager
def serving(
    allowed: Sequence[Allowed], check: Callable[[str], str | None] | None = None
) -> Iterator[EgressProxy]:
    proxy = EgressProxy(allowed, check)
    try:
        yield proxy
    finally:
        proxy.close()
