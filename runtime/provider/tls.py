"""The TLS context every HTTPS client of the run uses, a provider's included."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.tls import CertificateSetupError as CertificateSetupError


def ssl_context(environ: Mapping[str, str]) -> Any:
    """The TLS context every HTTPS client of the run uses (the system store, or
    SSL_CERT_FILE / SSL_CERT_DIR for a private CA); :class:`CertificateSetupError`."""
    from runtime.tls import ssl_context as shared

    return shared(environ)
