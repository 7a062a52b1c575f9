"""Throwaway certificate authority for the double's optional TLS mode.

Creates, in a directory of the caller's choosing:

* ``ca.pem`` / ``ca.key`` - a self-signed CA, valid for two days;
* ``server.pem`` / ``server.key`` - a server certificate signed by that CA with
  subjectAltName ``DNS:localhost, IP:127.0.0.1, IP:::1``.

The ``openssl`` command line is used when available, otherwise the
``cryptography`` package.  Go clients such as ``gh`` pick the CA up from
``SSL_CERT_FILE``.
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
    if shutil.which("openssl"):
        return _with_openssl(directory)
    try:
        return _with_cryptography(directory)
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise RuntimeError(
            "GitHubDouble(tls=True) needs the `openssl` command or the `cryptography` package"
        ) from exc


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")


def _with_openssl(directory: Path) -> CertificateFiles:
    files = CertificateFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
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


def _with_cryptography(directory: Path) -> CertificateFiles:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "GitHubDouble throwaway CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    files = CertificateFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    files.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert_file.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    files.key_file.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files
