"""The egress proxy on its own: what it lets through, what it refuses, and how it says so.

A real unix socket and a real loopback server; the CLI tests (test_kernel_layers)
show the same proxy serving confined programs.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from runtime.execute.egress import Allowed, serving


@pytest.fixture
def upstream() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback server that records the first bytes of each connection and answers."""
    server = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                seen.append(conn.recv(65536))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield server.getsockname()[1], seen
    finally:
        server.close()


def ask(path: str, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(5)
        client.connect(path)
        client.sendall(request)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
            if b"Connection established" in answer:
                break
        return answer


def test_allowed_entries_parse_hosts_ports_and_loopback() -> None:
    assert Allowed.parse("GitHub.com.") == Allowed("github.com")
    assert Allowed.parse("localhost:8443") == Allowed("localhost", 8443)
    assert Allowed.parse("[::1]:9000") == Allowed("::1", 9000)
    assert Allowed.parse("*.example.com").admits("api.example.com", 443)
    assert not Allowed.parse("example.com").admits("example.com", 22)  # 80 and 443 only
    assert Allowed.parse("localhost:8443").loopback
    assert not Allowed.parse("github.com").loopback


def test_a_host_not_allowed_is_refused_by_name(upstream: tuple[int, list[bytes]]) -> None:
    port, seen = upstream
    with serving([Allowed("github.com")]) as proxy:
        answer = ask(proxy.path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 403")
        assert f"127.0.0.1:{port} is not a host this step may reach".encode() in answer
        assert proxy.refused == [
            f"127.0.0.1:{port} is not a host this step may reach (allowed: github.com)"
        ]
    assert seen == []


def test_a_tunnel_to_an_allowed_host_carries_bytes(upstream: tuple[int, list[bytes]]) -> None:
    port, seen = upstream
    with serving([Allowed("127.0.0.1", port)]) as proxy, socket.socket(socket.AF_UNIX) as client:
        client.settimeout(5)
        client.connect(proxy.path)
        client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert client.recv(4096).startswith(b"HTTP/1.1 200")
        client.sendall(b"through the tunnel")
        assert client.recv(4096).endswith(b"hi")
    assert seen == [b"through the tunnel"]


def test_plain_http_is_forwarded_one_request_without_proxy_credentials(
    upstream: tuple[int, list[bytes]],
) -> None:
    port, seen = upstream
    request = (
        f"GET http://127.0.0.1:{port}/x?y HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Proxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive\r\n\r\n"
    ).encode()
    with serving([Allowed("127.0.0.1", port)]) as proxy:
        assert ask(proxy.path, request).endswith(b"hi")
    (sent,) = seen
    assert sent.startswith(b"GET /x?y HTTP/1.1\r\n")
    assert b"Proxy-Authorization" not in sent and b"keep-alive" not in sent
    assert b"Connection: close\r\n\r\n" in sent


def test_a_further_rule_refuses_with_its_own_reason(upstream: tuple[int, list[bytes]]) -> None:
    port, seen = upstream
    with serving([Allowed("127.0.0.1", port)], lambda host: "network: none forbids it") as proxy:
        answer = ask(proxy.path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert b"403" in answer.split(b"\r\n")[0] and b"network: none forbids it" in answer
    assert seen == []


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"HELLO\r\n\r\n",
        b"GET /relative HTTP/1.1\r\n\r\n",
        b"CONNECT host:notaport HTTP/1.1\r\n\r\n",
    ],
)
def test_what_is_no_proxy_request_gets_400(request_bytes: bytes) -> None:
    with serving([Allowed("host")]) as proxy:
        assert ask(proxy.path, request_bytes).startswith(b"HTTP/1.1 400")
