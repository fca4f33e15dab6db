"""Test certificates for the security tests (imported by basename, so the name is unique),
made with the ``openssl`` CLI: a CA, a server certificate for ``localhost`` /
``127.0.0.1`` signed by it, a client certificate (``CN=alice,OU=eng,O=Riverbed``) signed
by it, and a second, unrelated CA that signs nothing the broker uses (a client trusting
it must fail to verify)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pki:
    ca: Path
    other_ca: Path
    server: Path  # certificate chain and key, one PEM file (ssl.keystore.location)
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(directory: Path, name: str) -> None:
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        f"/CN={name}",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.pem",
        cwd=directory,
    )


def _signed(directory: Path, name: str, subject: str, ca: str, extensions: str) -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        subject,
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.csr",
        cwd=directory,
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        f"{ca}.pem",
        "-CAkey",
        f"{ca}.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        f"{name}.ext",
        "-out",
        f"{name}.pem",
        cwd=directory,
    )


def make_pki(d: Path) -> Pki:
    """Every certificate and key of :class:`Pki`, written under ``d``."""
    _ca(d, "ca")
    _ca(d, "other-ca")
    _signed(
        d,
        "server",
        "/CN=localhost",
        "ca",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    _signed(d, "client", "/O=Riverbed/OU=eng/CN=alice", "ca", "extendedKeyUsage=clientAuth\n")
    (d / "server-bundle.pem").write_text(
        (d / "server.pem").read_text() + (d / "server.key").read_text()
    )
    return Pki(
        d / "ca.pem",
        d / "other-ca.pem",
        d / "server-bundle.pem",
        d / "server.pem",
        d / "server.key",
        d / "client.pem",
        d / "client.key",
    )
