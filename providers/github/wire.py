"""HTTP/1.1 exchanges for the GitHub client, on httpcore's connection pool.

httpx's ``Client`` serves every use: for each request it merges cookie jars,
runs an auth flow and event hooks, builds a second request model for its
transport and wraps the response in decoders. About a quarter of a request's
CPU time went there (bench/, figure 7d). The GitHub client uses none of it: it
follows redirects itself, sets its own ``Authorization`` header and keeps no
cookies. So it speaks to httpcore, the transport layer httpx itself sends
through (installed with it), and keeps httpx's behaviour wherever it shows:

- URLs reach the wire as :class:`httpx.URL` would send them: a URL of the
  plain shape almost every request has is taken as it is (tested equal to
  httpx's reading), any other is read by httpx itself;
- the default headers are httpx's (``Accept-Encoding: gzip, deflate``,
  ``Connection: keep-alive``), with ``Host`` and, for a write without a
  body, ``Content-Length: 0``; a JSON body is encoded as httpx encodes it;
- a ``Content-Encoding`` of gzip or deflate (zlib or raw) is decoded, codings
  listed in the order they were applied, an unknown coding left as it is;
- the connect, read, write and pool timeouts and the pool's limits are those
  of ``httpx.Client``.
"""

from __future__ import annotations

import json
import re
import ssl
import time
import zlib
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpcore

ACCEPT_ENCODING = "gzip, deflate"
MAX_URL_LENGTH = 65536  # httpx refuses longer URLs

# Errors raised while exchanging a request: the caller turns each into a step failure.
TIMEOUTS: tuple[type[Exception], ...] = (httpcore.TimeoutException,)
FAILURES: tuple[type[Exception], ...] = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
    httpcore.ProxyError,
)


class InvalidURL(Exception):
    """A URL that cannot be sent (httpx's own reason as the message)."""


class DecodingError(Exception):
    """A body that its ``Content-Encoding`` does not describe."""

    def __init__(self, coding: str, reason: str) -> None:
        super().__init__(f"{coding}: {reason}")
        self.coding = coding


class Headers(Mapping[str, str]):
    """Response headers by case-insensitive name; a repeated field reads as its
    values joined with ``", "`` (as :class:`httpx.Headers` reads it)."""

    __slots__ = ("_fields",)

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        fields: dict[str, str] = {}
        for name, value in raw:
            key = name.decode("latin-1").lower()
            text = _text(value)
            fields[key] = f"{fields[key]}, {text}" if key in fields else text
        self._fields = fields

    def __getitem__(self, name: str) -> str:
        return self._fields[name.lower()]

    def get(self, name: str, default: Any = None) -> Any:
        return self._fields.get(name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:  # names only: a header may carry a secret
        return f"Headers({sorted(self._fields)})"


def _text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


class Target:
    """Where a URL sends a request: httpcore's URL and the ``Host`` header."""

    __slots__ = ("host_header", "url")

    def __init__(self, url: httpcore.URL, host_header: bytes) -> None:
        self.url = url
        self.host_header = host_header


# The plain shape: http(s), a lower-case DNS name or an IPv4 address, an explicit
# non-default port or none, a path and query of characters httpx sends as they are,
# valid %-escapes. httpx changes nothing in such a URL; what it would change or
# refuse ('.' and '..' segments, a default or out-of-range port, an IPv4-like name
# that is not an address) the checks below leave to httpx itself
# (tests/unit/test_github_wire.py).
_PLAIN = re.compile(
    r"(https?)://([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)"
    r"(?::([1-9][0-9]{0,4}))?"
    r"(/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*(?:%[0-9A-Fa-f]{2}[A-Za-z0-9\-._~!$&'()*+,;=:@/]*)*)?"
    r"(\?[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*(?:%[0-9A-Fa-f]{2}[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*)*)?"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|$)")
_IPV4_STYLE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")  # what httpx checks as an address


def _plain_host(host: str) -> bool:
    if _IPV4_STYLE.fullmatch(host) is None:
        return True
    return all(part == str(int(part)) and int(part) <= 255 for part in host.split("."))


def target(url: str) -> Target:
    """The request target for ``url``, as httpx would send it."""
    found = _PLAIN.fullmatch(url) if len(url) <= MAX_URL_LENGTH else None
    if found is not None:
        scheme, host, port, path, query = found.groups()
        number = int(port) if port else None
        if (
            (number is None or (number <= 65535 and number != _DEFAULT_PORTS[scheme]))
            and not (path and _DOT_SEGMENT.search(path))
            and _plain_host(host)
        ):
            raw = (path or "/") + (query or "")
            return Target(
                httpcore.URL(
                    scheme=scheme.encode(), host=host.encode(), port=number, target=raw.encode()
                ),
                f"{host}:{port}".encode() if port else host.encode(),
            )
    return _target_by_httpx(url)


def _target_by_httpx(url: str) -> Target:
    import httpx

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InvalidURL(str(exc)) from None
    if not parsed.raw_host:
        raise InvalidURL(f"no host in {url!r}")
    return Target(
        httpcore.URL(
            scheme=parsed.raw_scheme, host=parsed.raw_host, port=parsed.port, target=parsed.raw_path
        ),
        parsed.netloc,
    )


def with_params(url: str, params: Mapping[str, Any] | list[tuple[str, Any]]) -> str:
    """``url`` with ``params`` merged into its query, as ``httpx.URL.copy_merge_params``.

    A name in ``params`` replaces that name's values in the query (in place);
    new names follow. ``True``/``False``/``None`` read as ``true``/``false``/
    empty, as in httpx. The result is normalised on the way out by :func:`target`.
    """
    base, hashmark, fragment = url.partition("#")
    head, _, query = base.partition("?")
    merged: dict[str, list[str]] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        merged.setdefault(name, []).append(value)
    added: dict[str, list[str]] = {}
    if isinstance(params, Mapping):
        for name, value in params.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            added[str(name)] = [_primitive(v) for v in values]
    else:
        for name, value in params:
            added.setdefault(str(name), []).append(_primitive(value))
    merged.update(added)
    encoded = urlencode([(name, value) for name, values in merged.items() for value in values])
    # httpx leaves the query out only when no name is left ({"a": []} keeps a bare "?")
    return head + ("?" + encoded if merged else "") + hashmark + fragment


def _primitive(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


def json_body(value: Any) -> bytes:
    """``value`` as the JSON body httpx sends for ``json=value``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


def decode(content: bytes, headers: Headers) -> bytes:
    """``content`` with its ``Content-Encoding`` undone (gzip and deflate; others kept)."""
    declared = headers.get("content-encoding")
    if declared is None or not content:
        return content
    codings = [c.strip().lower() for c in declared.split(",")]
    for coding in reversed(codings):  # listed in the order they were applied
        if coding == "gzip":
            content = _inflate(coding, content, zlib.MAX_WBITS | 16)
        elif coding == "deflate":
            try:  # zlib-wrapped, as the standard says; some servers send it raw
                content = _inflate(coding, content, zlib.MAX_WBITS)
            except DecodingError:
                content = _inflate(coding, content, -zlib.MAX_WBITS)
    return content


def _inflate(coding: str, data: bytes, wbits: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    try:
        return inflater.decompress(data) + inflater.flush()
    except zlib.error as exc:
        raise DecodingError(coding, str(exc)) from None


class Reply:
    """A response read in full within the deadline: status, headers, decoded body.

    ``headers`` are as received: ``content-encoding`` and ``content-length``
    describe the wire form, not :attr:`content`.
    """

    __slots__ = ("content", "headers", "reason_phrase", "status_code", "url")

    def __init__(
        self, status: int, reason: str, headers: Headers, url: str, content: bytes
    ) -> None:
        self.status_code = status
        self.reason_phrase = reason
        self.headers = headers
        self.url = url
        self.content = content

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str:
        found = _CHARSET.search(self.headers.get("content-type", ""))
        try:
            return self.content.decode(found.group(1) if found else "utf-8", errors="replace")
        except LookupError:  # an unknown charset
            return self.content.decode("utf-8", errors="replace")


_CHARSET = re.compile(r"charset=[\"']?([\w.:-]+)", re.IGNORECASE)


class Wire:
    """One connection pool (keep-alive) and the headers every request carries."""

    def __init__(self, context: ssl.SSLContext, timeout: float, headers: Mapping[str, str]) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
        )
        self._extensions = {
            "timeout": {
                "connect": min(10.0, timeout),
                "read": timeout,
                "write": timeout,
                "pool": timeout,
            }
        }
        defaults = {
            "Accept": "*/*",
            "Accept-Encoding": ACCEPT_ENCODING,
            "Connection": "keep-alive",
        }
        defaults.update(headers)
        self._headers = [(k.encode("ascii"), v.encode("ascii")) for k, v in defaults.items()]

    def close(self) -> None:
        self._pool.close()

    def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float,
    ) -> Reply:
        """Send one request; read its whole response by ``deadline`` (``time.monotonic``).

        httpcore's timeouts bound each read; a server that trickles a byte at a time
        would never trip them, so the body is read against one deadline.
        """
        where = target(url)
        fields = [(b"Host", where.host_header)]
        if body is None and method in ("POST", "PUT", "PATCH"):
            fields.append((b"Content-Length", b"0"))
        fields += self._headers
        fields += [(k.encode("ascii"), v.encode("ascii")) for k, v in headers.items()]
        if body is not None:
            fields.append((b"Content-Length", str(len(body)).encode()))
            fields.append((b"Content-Type", b"application/json"))
        request = httpcore.Request(
            method.encode("ascii"),
            where.url,
            headers=fields,
            content=body,
            extensions=self._extensions,
        )
        response = self._pool.handle_request(request)
        try:
            chunks = []
            for chunk in response.stream:  # type: ignore[union-attr]
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise httpcore.ReadTimeout("the response did not complete in time")
        finally:
            response.close()
        received = Headers(response.headers)
        reason = response.extensions.get("reason_phrase", b"").decode("ascii", errors="ignore")
        return Reply(response.status, reason, received, url, decode(b"".join(chunks), received))
