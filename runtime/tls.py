"""Certificate verification for every HTTPS client runtime opens (GitHub, preflight checks)."""

from __future__ import annotations

import ssl
from collections.abc import Mapping


class CertificateSetupError(Exception):
    """SSL_CERT_FILE / SSL_CERT_DIR name certificates that cannot be loaded."""


def ssl_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """The system store, or SSL_CERT_FILE / SSL_CERT_DIR when set (a private CA)."""
    cafile = environ.get("SSL_CERT_FILE") or None
    capath = environ.get("SSL_CERT_DIR") or None
    if cafile or capath:
        try:
            return ssl.create_default_context(cafile=cafile, capath=capath)
        except (OSError, ssl.SSLError) as exc:
            raise CertificateSetupError(
                f"cannot load the certificates from SSL_CERT_FILE/SSL_CERT_DIR: {exc}"
            ) from None
    return ssl.create_default_context()
