"""Throwaway certificate authority for the double's optional TLS mode.

Creates, in a directory of the caller's choosing:

* ``ca.pem`` / ``ca.key`` - a self-signed CA, valid for two days;
* ``server.pem`` / ``server.key`` - a server certificate signed by that CA with
  subjectAltName ``DNS:localhost, IP:127.0.0.1, IP:::1``.

Keys are P-256 EC keys made with the ``openssl`` command line.  Go clients
such as ``gh`` pick the CA up from ``SSL_CERT_FILE``; Python clients can use
``ssl.create_default_context(cafile=...)``.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CertificateFiles", "create_certificates"]

_SUBJECT_ALT_NAMES = "DNS:localhost,IP:127.0.0.1,IP:::1"


@dataclass(frozen=True)
class CertificateFiles:
    ca_file: Path
    cert_file: Path
    key_file: Path


def create_certificates(directory: Path) -> CertificateFiles:
    """Generate a CA plus a localhost server certificate inside ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    if shutil.which("openssl") is None:
        raise RuntimeError(
            "GitHubDouble(tls=True) needs the `openssl` command line (Debian package openssl)"
        )
    return _with_openssl(directory)


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(
        ["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def _with_openssl(directory: Path) -> CertificateFiles:
    files = CertificateFiles(
        directory / "ca.pem", directory / "server.pem", directory / "server.key"
    )
    ca_key = directory / "ca.key"
    csr = directory / "server.csr"
    extensions = directory / "server.ext"
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req", "-x509", *ec,
        "-keyout", str(ca_key), "-out", str(files.ca_file), "-days", "2",
        "-subj", "/CN=GitHubDouble throwaway CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=directory,
    )  # fmt: skip
    _openssl(
        "req", "-new", *ec,
        "-keyout", str(files.key_file), "-out", str(csr), "-subj", "/CN=localhost",
        cwd=directory,
    )  # fmt: skip
    extensions.write_text(
        f"subjectAltName={_SUBJECT_ALT_NAMES}\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(files.ca_file), "-CAkey", str(ca_key),
        "-CAcreateserial", "-out", str(files.cert_file), "-days", "2", "-sha256",
        "-extfile", str(extensions),
        cwd=directory,
    )  # fmt: skip
    return files
