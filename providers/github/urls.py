"""The URLs of the GitHub client: the routes it builds, the links the server sends it,
and how both are shown in a message.

- :func:`origin`: scheme, host and port, which decide where the token may go;
- :func:`dot_segment`: a '.' or '..' in a route, which no input may put there;
- :func:`join_url`: a Location or Link target read against the URL it came with: https,
  or http on a loopback address only;
- :func:`route_of`, :func:`without_secrets`, :func:`shorten`: a URL or text for a
  message, with no credentials and no query values but the page's.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit

from providers.github.endpoints import is_loopback, split_url
from runtime.provider import StepError

SHOWN_PARAMS = frozenset({"page", "per_page"})  # query values a message may show


@lru_cache(maxsize=256)  # a run asks for the same few URLs at every request
def origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port; a URL that cannot be read has none (it is no token's home)."""
    try:
        parts = split_url(url)
    except ValueError:
        return "", "", None
    return parts.scheme, (parts.hostname or "").lower(), parts.port


@lru_cache(maxsize=1024)  # steps of a run often repeat a route
def dot_segment(path: str) -> str | None:
    """The first segment of the route in ``path`` that reads as '.' or '..', if any."""
    route = path.split("?", 1)[0]
    for segment in route.split("/")[1:] if route.startswith("/") else route.split("/"):
        if unquote(segment) in (".", ".."):
            return segment
    return None


def route_of(url: str) -> str:
    """The path of ``url``, for messages (the text itself if it cannot be read)."""
    try:
        return urlsplit(url).path
    except ValueError:
        return shorten(url, 80)


def without_secrets(url: str) -> str:
    """``url`` for a message: no user:password@, and of the query only the names (and the
    values of page and per_page)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return route_of(url)
    where = parts.netloc.rpartition("@")[2]
    query = "&".join(
        f"{name}={value}" if name in SHOWN_PARAMS else f"{name}=..."
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return f"{parts.scheme}://{where}{parts.path}" + (f"?{query}" if query else "")


def join_url(base: str, reference: str, what: str) -> str:
    """``reference`` (a Location or a Link target from the server) read against ``base``:
    an https URL, or http on a loopback address, as the configured URLs must be (an answer
    over plain http from anywhere else could be anyone's)."""
    try:
        target = urljoin(base, reference)
        parts = urlsplit(target)
        hostname = parts.hostname
    except ValueError as exc:
        raise StepError(
            f"{what} points to {shorten(reference, 80)!r}, which is not a valid URL ({exc})",
            hint="the server sent a malformed link; retry later, or report it to the server's owner",
        ) from None
    if parts.scheme not in ("https", "http") or not hostname:
        raise StepError(
            f"{what} points to {shorten(reference, 80)!r}, which is not an http(s) URL",
            hint="the server sent a link runtime does not follow; report it to its owner",
        )
    if parts.scheme == "http" and not is_loopback(hostname):
        raise StepError(
            f"{what} points to plain http:// on {hostname}; only loopback addresses may use http",
            hint="the server (or something in the way) downgraded the link; use https",
        )
    return target


def shorten(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
