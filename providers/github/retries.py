"""Rate limits and retries of the GitHub client.

A 403 or 429 with ``Retry-After`` (seconds, or an HTTP date) or with
``X-RateLimit-Remaining: 0`` is a rate limit: :func:`rate_limit_wait` says how long it
asks to wait, :func:`rate_limit_error` is the step failure, with the reset time, when
the request is not retried. :func:`log_retry` is the ``http.retry`` event of each
request sent again (after a rate limit or a 502/503/504). The retry loop itself is
:meth:`providers.github.client.GitHubHTTP.request`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from providers.github.urls import route_of
from runtime.provider import StepError
from runtime.provider.log import WARNING, get_logger

if TYPE_CHECKING:
    from providers.github.replies import Reply

_log = get_logger("providers.github")


def rate_limit_wait(response: Reply, clock: Callable[[], float]) -> float | None:
    """How long to wait before a limited request is sent again, by ``clock``: None when
    ``response`` is no rate limit (or says not how long)."""
    if response.status_code not in (403, 429):
        return None
    retry_after = response.headers.get("retry-after")
    if retry_after is not None:
        try:
            seconds = float(retry_after)
        except ValueError:
            # RFC 9110 allows a date too: how far it is from now by the client's clock
            # (the clock X-RateLimit-Reset is read against)
            at = http_date(retry_after)
            if at is None:
                return None
            seconds = at - clock()
        # at least a second: "Retry-After: 0" (or a date past) must not turn into a
        # busy loop
        return max(1.0, seconds)
    if response.headers.get("x-ratelimit-remaining") == "0":
        reset = response.headers.get("x-ratelimit-reset")
        try:
            return max(1.0, float(reset) - clock()) if reset else None
        except ValueError:
            return None
    return None


def rate_limit_error(response: Reply, shown: str, why: str) -> StepError:
    reset = response.headers.get("x-ratelimit-reset")
    retry_after = response.headers.get("retry-after")
    when = ""
    at = reset_time(reset)
    if at is not None:
        when = f"; the limit resets at {at}"
    elif retry_after and retry_after.isascii() and retry_after.isdigit():
        when = f"; retry after {retry_after} s"
    elif retry_after and (date := utc_time(http_date(retry_after))) is not None:
        when = f"; retry after {date}"
    return StepError(
        f"{response.status_code} rate limited: {shown}{when} ({why})",
        hint="run the step again after the reset",
        http_status=response.status_code,
    )


def log_retry(method: str, url: str, status: int, attempt: int, wait: float, why: str) -> None:
    """The ``http.retry`` event: an idempotent request is sent again after ``wait`` s."""
    if _log.enabled(WARNING):
        _log.warning(
            "http.retry",
            method=method,
            route=route_of(url),
            status=status,
            attempt=attempt,
            wait_s=wait,
            why=why,
        )


def reset_time(reset: str | None) -> str | None:
    """X-RateLimit-Reset (epoch seconds) as a UTC time; None for what is not one (a
    server's header is untrusted: '²' is a digit to isdigit, 10**17 no date)."""
    if not reset or not (reset.isascii() and reset.isdigit()):
        return None
    return utc_time(int(reset))


def utc_time(epoch: float | None) -> str | None:
    """``epoch`` (seconds) as a UTC time for a message; None for what is no date."""
    if epoch is None:
        return None
    try:
        return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return None


def http_date(value: str) -> float | None:
    """An HTTP date (``Wed, 21 Oct 2026 07:28:00 GMT``, or RFC 9110's obsolete forms) as
    epoch seconds; None for what is not one (a server's header is untrusted)."""
    from email.utils import parsedate_to_datetime

    try:
        at = parsedate_to_datetime(value)
        if at.tzinfo is None:  # "-0000" and asctime's form: HTTP dates are in GMT
            at = at.replace(tzinfo=UTC)
        return at.timestamp()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None
