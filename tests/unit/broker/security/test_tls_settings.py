"""TLS settings under Kafka's names, and Kafka's default principal for a client
certificate (RFC 2253, most specific attribute first)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from riverbed.broker.security.listeners import SecurityProtocol, parse_listeners
from riverbed.broker.security.tls import certificate_principal, server_context
from riverbed.errors import ConfigError


def test_principal_from_peer_certificate() -> None:
    peercert = {
        "subject": (
            (("countryName", "DE"),),
            (("organizationName", "Acme, Inc."),),
            (("organizationalUnitName", "eng"), ("userId", "7")),
            (("commonName", "alice"),),
        )
    }
    assert certificate_principal(peercert) == r"User:CN=alice,OU=eng+UID=7,O=Acme\, Inc.,C=DE"
    assert certificate_principal({}) == "User:ANONYMOUS"
    assert certificate_principal(None) == "User:ANONYMOUS"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl CLI")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "k.pem",
            "-out",
            "c.pem",
        ],
        cwd=d,
        check=True,
        capture_output=True,
        timeout=60,
    )
    (d / "bundle.pem").write_text((d / "c.pem").read_text() + (d / "k.pem").read_text())
    return d


def test_context_from_kafka_settings(bundle: Path) -> None:
    context = server_context(
        {
            "ssl.keystore.location": str(bundle / "bundle.pem"),
            "listener.name.mtls.ssl.client.auth": "required",
            "ssl.truststore.location": str(bundle / "c.pem"),
            "ssl.enabled.protocols": "TLSv1.3",
        },
        "MTLS",
    )
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.minimum_version is ssl.TLSVersion.TLSv1_3
    inline = server_context(
        {
            "ssl.keystore.certificate.chain": (bundle / "c.pem").read_text(),
            "ssl.keystore.key": (bundle / "k.pem").read_text(),
        },
        "X",
    )
    assert inline.verify_mode is ssl.CERT_NONE


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "ssl.keystore.location"),
        ({"ssl.keystore.type": "JKS"}, "JKS stores are not supported"),
        ({"ssl.keystore.location": "/nonexistent.pem"}, "No such file"),
        ({"ssl.keystore.location": "{c}"}, "does not hold a PEM certificate and its key"),
        ({"ssl.keystore.location": "{b}", "ssl.client.auth": "maybe"}, "'maybe'"),
        ({"ssl.keystore.location": "{b}", "ssl.enabled.protocols": "SSLv3"}, "SSLv3"),
        ({"ssl.keystore.location": "{b}", "ssl.truststore.location": "{k}"}, "no PEM cert"),
    ],
)
def test_bad_settings_are_one_line(bundle: Path, settings: dict[str, str], message: str) -> None:
    files = {"b": bundle / "bundle.pem", "c": bundle / "c.pem", "k": bundle / "k.pem"}
    filled = {key: value.format(**files) for key, value in settings.items()}
    with pytest.raises(ConfigError, match=message):
        server_context(filled, "L")


def test_listeners_and_advertised_listeners() -> None:
    listeners = parse_listeners(
        {
            "listeners": "PLAINTEXT://:9092,SECURE://127.0.0.1:0,CONTROLLER://:9093",
            "advertised.listeners": "SECURE://kafka.example.com:19094",
            "listener.security.protocol.map": "SECURE:SASL_SSL,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
        }
    )
    assert [(lst.name, lst.protocol, lst.host, lst.port) for lst in listeners] == [
        ("PLAINTEXT", SecurityProtocol.PLAINTEXT, "", 9092),
        ("SECURE", SecurityProtocol.SASL_SSL, "127.0.0.1", 0),
    ]
    assert (listeners[1].advertised_host, listeners[1].advertised_port) == (
        "kafka.example.com",
        19094,
    )
    with pytest.raises(ConfigError, match="listed twice"):
        parse_listeners({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"})
