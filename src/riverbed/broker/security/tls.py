"""TLS for SSL and SASL_SSL listeners: an :class:`ssl.SSLContext` from Kafka's settings,
and Kafka's default principal for a client certificate.

Settings (each may be given per listener as ``listener.name.<l>.<key>``):

* ``ssl.keystore.type`` — ``PEM`` only (JKS / PKCS12 keystores must be converted:
  ``openssl pkcs12 -in ks.p12 -nodes``);
* the server certificate and key: ``ssl.keystore.location`` (a PEM file holding the
  certificate chain and the private key, the key encrypted with ``ssl.key.password`` if
  set) or ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` (the PEM text itself,
  Kafka's KIP-651 names);
* the CAs that sign client certificates: ``ssl.truststore.location`` (PEM file) or
  ``ssl.truststore.certificates`` (PEM text); ``ssl.truststore.type`` must be PEM;
* ``ssl.client.auth``: ``none`` (default), ``requested`` or ``required``;
* ``ssl.enabled.protocols`` (default ``TLSv1.2,TLSv1.3``) and ``ssl.cipher.suites``
  (OpenSSL names for TLS 1.2; empty: OpenSSL's defaults).

A file that cannot be read or a key that does not match is a one-line ConfigError at
start.  The context is built once per listener and shared by its connections.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any

from riverbed.broker.security.listeners import listener_setting
from riverbed.errors import ConfigError

ANONYMOUS = "User:ANONYMOUS"
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# RFC 2253 attribute names for the OIDs ``getpeercert()`` names (Java's X500Principal).
_RFC2253_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def server_context(props: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """The server-side context for ``listener`` (see the module docstring)."""

    def get(key: str) -> str | None:
        value = listener_setting(props, listener, key)
        return value if value else None

    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        kind = (get(key) or "PEM").upper()
        if kind != "PEM":
            raise ConfigError(
                f"setting {key!r}: {kind} stores are not supported, use PEM "
                "(convert with: openssl pkcs12 -in store.p12 -nodes)"
            )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = [p.strip() for p in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")]
    unknown = [p for p in protocols if p and p not in _PROTOCOLS]
    if unknown or not any(protocols):
        raise ConfigError(
            f"setting 'ssl.enabled.protocols': {','.join(unknown) or 'empty'} (TLSv1.2, TLSv1.3)"
        )
    versions = sorted(_PROTOCOLS[p] for p in protocols if p)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    ciphers = get("ssl.cipher.suites")
    if ciphers:
        try:
            context.set_ciphers(ciphers.replace(",", ":"))
        except ssl.SSLError:
            raise ConfigError(
                f"setting 'ssl.cipher.suites': no usable cipher in {ciphers!r}"
            ) from None
    _load_keystore(context, get)
    _load_truststore(context, get)
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in ("none", "requested", "required"):
        raise ConfigError(f"setting 'ssl.client.auth': {auth!r} is not none, requested or required")
    context.verify_mode = {
        "none": ssl.CERT_NONE,
        "requested": ssl.CERT_OPTIONAL,
        "required": ssl.CERT_REQUIRED,
    }[auth]
    return context


def _load_keystore(context: ssl.SSLContext, get: Any) -> None:
    location, chain, key = (
        get("ssl.keystore.location"),
        get("ssl.keystore.certificate.chain"),
        get("ssl.keystore.key"),
    )
    password = get("ssl.key.password")
    if location is None and chain is None:
        raise ConfigError(
            "a TLS listener needs ssl.keystore.location (a PEM file with certificate and key) "
            "or ssl.keystore.certificate.chain and ssl.keystore.key"
        )
    if location is not None:
        try:
            context.load_cert_chain(location, password=password)
        except ssl.SSLError as exc:  # an OSError too: catch it first
            raise ConfigError(
                f"setting 'ssl.keystore.location': {location!r} does not hold a "
                f"PEM certificate and its key ({exc.reason})"
            ) from None
        except OSError as exc:
            raise ConfigError(
                f"setting 'ssl.keystore.location': cannot read {location!r}: {exc.strerror or exc}"
            ) from None
        return
    if key is None:
        raise ConfigError("setting 'ssl.keystore.certificate.chain' needs ssl.keystore.key")
    # ssl loads keys from files only: a private temporary file, removed at once.
    fd, path = tempfile.mkstemp(prefix="riverbed-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(f"{key.strip()}\n{chain.strip()}\n")
        context.load_cert_chain(path, password=password)
    except ssl.SSLError as exc:
        raise ConfigError(
            f"setting 'ssl.keystore.key': not a PEM key matching "
            f"ssl.keystore.certificate.chain ({exc.reason})"
        ) from None
    finally:
        os.unlink(path)


def _load_truststore(context: ssl.SSLContext, get: Any) -> None:
    location, inline = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    try:
        if location is not None:
            context.load_verify_locations(cafile=location)
        elif inline is not None:
            context.load_verify_locations(cadata=inline)
    except ssl.SSLError as exc:  # an OSError too: catch it first
        key = "ssl.truststore.location" if location else "ssl.truststore.certificates"
        raise ConfigError(f"setting {key!r}: no PEM certificates ({exc.reason})") from None
    except OSError as exc:
        raise ConfigError(
            f"setting 'ssl.truststore.location': cannot read {location!r}: {exc.strerror or exc}"
        ) from None


def _escape(value: str) -> str:
    out = "".join("\\" + ch if ch in ',+"\\<>;=' else ch for ch in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def certificate_principal(peercert: Mapping[str, Any] | None) -> str:
    """Kafka's default principal for an SSL connection: ``User:`` + the client
    certificate's subject in RFC 2253 form (``CN=alice,OU=eng,O=acme,C=DE``: most specific
    first, as Java's ``X500Principal.getName()``), or ``User:ANONYMOUS`` without a
    client certificate."""
    if not peercert or not peercert.get("subject"):
        return ANONYMOUS
    rdns = []
    for rdn in reversed(peercert["subject"]):
        parts = [f"{_RFC2253_NAMES.get(k, k)}={_escape(str(v))}" for k, v in rdn]
        rdns.append("+".join(parts))
    return "User:" + ",".join(rdns)
