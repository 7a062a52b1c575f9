"""Fault injection rules for the GitHub double."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Fault", "FaultKind", "FaultRegistry"]

FaultKind = Literal[
    "status",  # answer with ``status`` and a GitHub JSON error body
    "rate_limit",  # primary rate limit: 403, X-RateLimit-Remaining: 0, X-RateLimit-Reset
    "secondary_rate_limit",  # 429 (or 403) with Retry-After
    "delay",  # sleep ``delay`` seconds, then answer normally
    "drop",  # close the connection without sending any response
    "truncate",  # send Content-Length larger than the body, send part of it, close
    "cut_json",  # valid HTTP framing, but the JSON body is cut in half
    "malformed_json",  # JSON content type with a syntactically invalid body
    "redirect",  # 301/302/307/308 with a Location header
    "bad_encoding",  # Content-Encoding: gzip on a body that is not gzip
    "trickle_headers",  # the whole response (status line on) one byte every ``interval`` s
    "trickle_body",  # the headers at once, then the body one byte every ``interval`` s
    "gzip_bomb",  # 200, Content-Encoding: gzip, a body that decodes to ``size`` zero bytes
    "next_link",  # the normal response with Link rel="next": ``location``, else page + 1
]

#: Kinds that replace the normal response before routing.
PRE_ROUTE_KINDS = frozenset(
    {"status", "rate_limit", "secondary_rate_limit", "drop", "redirect", "gzip_bomb"}
)
#: Kinds that mangle the normal response after routing.
POST_ROUTE_KINDS = frozenset(
    {
        "truncate",
        "cut_json",
        "malformed_json",
        "bad_encoding",
        "trickle_headers",
        "trickle_body",
        "next_link",
    }
)
#: How long a trickle goes on at most (the client is expected to give up long before).
TRICKLE_LIMIT = 120.0


@dataclass
class Fault:
    """One injection rule.  ``remaining=None`` means it never runs out."""

    pattern: re.Pattern[str]
    kind: FaultKind = "status"
    status: int = 500
    remaining: int | None = 1
    method: str | None = None
    delay: float = 0.0
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    retry_after: int | None = None
    #: Send ``Retry-After`` as an HTTP date ``retry_after`` seconds ahead, not as seconds.
    retry_after_date: bool = False
    reset_in: int = 60
    location: str | None = None
    reset_connection: bool = False
    #: Seconds between the bytes of a trickle.
    interval: float = 1.0
    #: Decoded size of a gzip bomb, in bytes.
    size: int = 2 * 1024**3
    #: How many requests this rule has been applied to.
    hits: int = 0

    def matches(self, method: str, paths: tuple[str, ...]) -> bool:
        if self.remaining is not None and self.remaining <= 0:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return any(self.pattern.search(path) for path in paths)

    @property
    def exhausted(self) -> bool:
        return self.remaining is not None and self.remaining <= 0


class FaultRegistry:
    """Thread-safe, ordered list of :class:`Fault` rules (first match wins)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(
        self,
        path_regex: str,
        *,
        kind: FaultKind = "status",
        status: int | None = None,
        count: int | None = 1,
        method: str | None = None,
        delay: float = 0.0,
        body: bytes | str | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        retry_after: int | None = None,
        retry_after_date: bool = False,
        reset_in: int = 60,
        location: str | None = None,
        reset_connection: bool = False,
        interval: float = 1.0,
        size: int = 2 * 1024**3,
    ) -> Fault:
        if kind not in PRE_ROUTE_KINDS | POST_ROUTE_KINDS | {"delay"}:
            raise ValueError(f"unknown fault kind {kind!r}")
        if kind == "redirect" and not location:
            raise ValueError("a redirect fault needs a location")
        if count is not None and count < 1:
            raise ValueError("count must be >= 1 or None (unlimited)")
        encoded: bytes | None
        if body is None:
            encoded = None
        elif isinstance(body, bytes):
            encoded = body
        elif isinstance(body, str):
            encoded = body.encode()
        else:
            encoded = json.dumps(dict(body)).encode()
        fault = Fault(
            pattern=re.compile(path_regex),
            kind=kind,
            status=status if status is not None else _default_status(kind),
            remaining=count,
            method=method,
            delay=delay,
            body=encoded,
            headers=dict(headers or {}),
            retry_after=retry_after,
            retry_after_date=retry_after_date,
            reset_in=reset_in,
            location=location,
            reset_connection=reset_connection,
            interval=interval,
            size=size,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, method: str, paths: tuple[str, ...]) -> Fault | None:
        """Return (and consume one use of) the first matching rule."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, paths):
                    if fault.remaining is not None:
                        fault.remaining -= 1
                    fault.hits += 1
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def snapshot(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)


def _default_status(kind: FaultKind) -> int:
    return {
        "rate_limit": 403,
        "secondary_rate_limit": 429,
        "redirect": 302,
        "delay": 200,
        "truncate": 200,
        "cut_json": 200,
        "malformed_json": 200,
        "trickle_headers": 200,
        "trickle_body": 200,
        "gzip_bomb": 200,
        "next_link": 200,
    }.get(kind, 500)
