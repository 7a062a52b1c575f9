"""The GitHub client's settings, read from the environment, and its TLS context.

- ``RUNTIME_GITHUB_TIMEOUT``: seconds one whole request may take (default 30);
- ``RUNTIME_GITHUB_MAX_WAIT``: seconds an idempotent request may wait in all for a rate
  limit to pass (default 60, 0 for none);
- ``RUNTIME_GITHUB_MAX_PAGES``: pages one list follows (default 100);
- the bound on a response body (32 MiB, decoded), which no variable moves;
- :func:`ssl_context`: the run's one TLS context
  (:func:`runtime.provider.tls.ssl_context`), whose certificate errors are step
  failures here.

:func:`check_settings` reads them at plan time, :class:`~providers.github.client.GitHubHTTP`
when it is made.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

from runtime.provider import StepError

DEFAULT_MAX_WAIT = 60.0
DEFAULT_TIMEOUT = 30.0  # seconds for one whole request (RUNTIME_GITHUB_TIMEOUT)
DEFAULT_MAX_PAGES = 100  # pages one list follows (RUNTIME_GITHUB_MAX_PAGES)
# A response body, decoded. GitHub's largest JSON answers are a few MiB (a recursive tree
# is cut at 7 MB, a file's contents at 1 MB); parsed, JSON can take up to ~20 times its
# size in memory, so the bound stays well below what a machine can hold.
MAX_BODY_BYTES = 32 * 1024 * 1024


def number_setting(
    environ: Mapping[str, str], name: str, default: float, *, zero: bool = False
) -> float:
    """A positive (or, with ``zero``, non-negative) number from ``environ[name]``; a clear
    step failure if it is not one."""
    raw = environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value >= 0 if zero else value > 0) or value == float("inf"):
        kind = "a number of 0 or more" if zero else "a positive number"
        raise StepError(f"{name}={raw!r} is not {kind}", hint=f"fix or unset {name}")
    return value


def count_setting(environ: Mapping[str, str], name: str, default: int) -> int:
    """A whole number of at least 1 from ``environ[name]`` (0.5 pages is none)."""
    raw = environ.get(name)
    if raw is None:
        return default
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise StepError(
            f"{name}={raw!r} is not a whole number of 1 or more", hint=f"fix or unset {name}"
        )
    return int(text)


def check_settings(environ: Mapping[str, str]) -> None:
    """The client's settings from the environment, as a :class:`StepError` when one is
    not a value it takes: checked at plan time, so that no step of a run has started."""
    number_setting(environ, "RUNTIME_GITHUB_MAX_WAIT", DEFAULT_MAX_WAIT, zero=True)
    number_setting(environ, "RUNTIME_GITHUB_TIMEOUT", DEFAULT_TIMEOUT)
    count_setting(environ, "RUNTIME_GITHUB_MAX_PAGES", DEFAULT_MAX_PAGES)


def ssl_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """runtime's certificate setup, as a step failure when the certificates cannot load."""
    from runtime.provider.tls import CertificateSetupError
    from runtime.provider.tls import ssl_context as shared

    try:
        return shared(environ)  # type: ignore[no-any-return]
    except CertificateSetupError as exc:
        raise StepError(
            str(exc), hint="point SSL_CERT_FILE at a PEM file of trusted CA certificates"
        ) from None
