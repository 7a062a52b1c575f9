"""What the GitHub client answers with: a response read in full (:class:`Reply`) and what
a call gives back (:class:`Response`). Apart from the client, so that its retries and
pagination modules can name them without importing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from providers.github.payload import loads

if TYPE_CHECKING:
    import httpx


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]  # by case-insensitive name (httpx.Headers)
    # the body's JSON value; for a body that is not JSON (a text, an archive) its text,
    # or None when it is not text (:meth:`Reply.text`)
    data: Any
    url: str
    content: bytes = b""  # the body as received (decoded from gzip or deflate)
    is_json: bool = True  # whether ``data`` was read from the body as JSON


class Reply:
    """A response read in full, within the deadline and the size limit.

    ``headers`` are as received: ``content-encoding`` and ``content-length``
    describe the wire form, not :attr:`content`.
    """

    __slots__ = ("_response", "content")

    def __init__(self, response: httpx.Response, content: bytes) -> None:
        self._response = response
        self.content = content

    @property
    def status_code(self) -> int:
        return self._response.status_code

    @property
    def reason_phrase(self) -> str:
        return self._response.reason_phrase

    @property
    def headers(self) -> httpx.Headers:
        return self._response.headers

    @property
    def url(self) -> str:
        return str(self._response.url)

    def json(self) -> Any:
        return loads(self.content)

    @property
    def text(self) -> str | None:
        """The body as text, in the charset its Content-Type names (else UTF-8); None
        when it is not text: bytes that do not decode, or a NUL byte (which no text
        holds and an uncompressed archive does). Nothing is replaced: what is not
        text is kept whole, as bytes."""
        content = self.content
        if b"\0" in content:
            return None
        try:
            return content.decode(self._response.encoding or "utf-8")
        except UnicodeDecodeError:
            return None
