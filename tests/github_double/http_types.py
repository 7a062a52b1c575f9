"""Small request/response value types shared by the double's front ends."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import parse_qs

__all__ = ["DOCS", "ApiError", "RecordedRequest", "Request", "Response", "error_body"]

#: Generic documentation URL GitHub uses in error bodies.
DOCS = "https://docs.github.com/rest"


class RecordedRequest(NamedTuple):
    """One request as received: ``(method, path, headers, body)``.

    ``path`` is the raw request target including the query string;
    ``headers`` maps lower-cased header names to values; ``body`` is the
    request body as it arrived (de-chunked).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""


@dataclass
class Request:
    method: str
    #: Path with the ``/api/v3`` prefix and the query string removed.
    path: str
    #: Request target exactly as received.
    raw_path: str
    headers: dict[str, str]
    body: bytes
    #: REST root the client used, e.g. ``http://127.0.0.1:5000/api/v3``.
    api_root: str
    #: Web root, e.g. ``http://127.0.0.1:5000``.
    web_root: str
    viewer: str
    query_string: str = ""
    query: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parsed = parse_qs(self.query_string, keep_blank_values=True)
        self.query = {key: values[-1] for key, values in parsed.items()}

    def json(self) -> Any:
        """Decode the body; raises :class:`ApiError` 400 like GitHub on bad JSON."""
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise ApiError(400, "Problems parsing JSON") from exc


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
        body = b"" if payload is None else json.dumps(payload, indent=None).encode()
        merged = {"Content-Type": "application/json; charset=utf-8"}
        merged.update(headers or {})
        return cls(status, body, merged)


class ApiError(Exception):
    """Raised by route handlers to answer with a GitHub JSON error body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        documentation_url: str = DOCS,
        errors: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.documentation_url = documentation_url
        self.errors = errors
        self.headers = headers or {}

    def response(self) -> Response:
        return Response.json(
            self.status,
            error_body(self.status, self.message, self.documentation_url, self.errors),
            self.headers,
        )


def error_body(
    status: int,
    message: str,
    documentation_url: str = DOCS,
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message}
    if errors:
        body["errors"] = errors
    body["documentation_url"] = documentation_url
    body["status"] = str(status)
    return body
