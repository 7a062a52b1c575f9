"""Certificate verification for every HTTPS client runtime opens (GitHub, preflight checks).

:mod:`ssl` is imported when a context is made, not with this module: the offline
preflight of every ``execute`` imports this module for its error class, and
importing ``ssl`` is a noticeable part of start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl


class CertificateSetupError(Exception):
    """SSL_CERT_FILE / SSL_CERT_DIR name certificates that cannot be loaded."""


def ssl_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """The system store, or SSL_CERT_FILE / SSL_CERT_DIR when set (a private CA)."""
    import ssl

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
