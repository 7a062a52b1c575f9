"""The GitHub client's ``httpx.Client``, with one deadline over a whole exchange.

httpx's timeouts bound each network operation: a read that waits longer than
the read timeout fails, but a server that trickles its headers or its body a
byte a second never lets one read wait that long, and holds a request for as
long as it likes (issue 18: a step still running at 40 s with a 2 s read
timeout and a 5 s step limit). A total deadline needs a bound on the time
*left*, checked at every read and write, headers included; httpx has no such
option and its response stream is read inside httpx before the caller sees
the headers. So the pool under the client is httpcore's ``ConnectionPool``,
as httpx builds it, with a network backend (httpcore's documented extension
point) whose streams give each operation at most the time left before
:attr:`Deadline.at`, and fail with httpcore's own timeout errors when none is
left; httpx maps them to ``httpx.TimeoutException`` as for any timeout.
"""

from __future__ import annotations

import time
import typing
from collections.abc import Iterable
from http.cookiejar import CookieJar

import httpcore
import httpx

_PIECE = 64 * 1024  # a write is split so that the deadline is checked between pieces


class Deadline:
    """When the exchange under way must be done (``time.monotonic()``), or None.

    The client sets :attr:`at` before it sends a request and clears it when the
    response has been read; one client serves one thread at a time.
    """

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None

    def bound(self, timeout: float | None, error: type[Exception]) -> float | None:
        """``timeout`` shortened to the time left; ``error`` if no time is left."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise error("the deadline for the whole request passed")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.bound(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for start in range(0, len(buffer), _PIECE):
            piece = buffer[start : start + _PIECE]
            self._inner.write(piece, self._deadline.bound(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: typing.Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        # CPython bounds a whole TLS handshake by the socket's timeout, not each read of it
        bound = self._deadline.bound(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, bound), self._deadline)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, deadline: Deadline) -> None:
        self._inner = httpcore.SyncBackend()
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        bound = self._deadline.bound(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, bound, local_address, socket_options)
        return _Stream(stream, self._deadline)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:  # pragma: no cover - the client never uses a Unix socket
        raise httpcore.UnsupportedProtocol("Unix sockets are not used by the GitHub client")

    def sleep(self, seconds: float) -> None:  # pragma: no cover - used for connect retries
        self._inner.sleep(seconds)


class _Transport(httpx.HTTPTransport):
    """httpx's own transport (request and response models, error mapping), on a pool
    whose network backend keeps the deadline."""

    def __init__(self, context: typing.Any, deadline: Deadline, limits: httpx.Limits) -> None:
        super().__init__(verify=context, trust_env=False, limits=limits)
        # the pool httpx built, as it built it, plus the backend (httpx has no option for it)
        self._pool = httpcore.ConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(deadline),
        )


def client(
    context: typing.Any, deadline: Deadline, timeout: float, headers: dict[str, str]
) -> httpx.Client:
    """One keep-alive client: no proxy or netrc from the environment, no cookies kept,
    no credentials taken from a URL, redirects left to the caller; ``timeout`` bounds
    each network operation (connect at most 10 s), ``deadline`` the whole exchange."""
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
    return httpx.Client(
        transport=_Transport(context, deadline, limits),
        headers=headers,
        timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
        follow_redirects=False,
        trust_env=False,
        auth=httpx.Auth(),  # no Basic credentials from a Location's user:password@
        cookies=_NoCookies(),
    )


class _NoCookies(CookieJar):
    """A cookie jar that keeps none and reads no ``Set-Cookie``.

    httpx hands every response to its client's jar. A jar whose policy refuses every
    domain would still parse each response's cookie headers (with their dates), text
    from a server that is not trusted, before refusing them; this one does not look.
    """

    def extract_cookies(self, response: typing.Any, request: typing.Any) -> None:
        return None
