"""Kafka's own Java client (kafka-clients from the reference broker's cached jars) over
SASL_SSL with SCRAM-SHA-512 and PLAIN: the broker's certificate is verified from a PEM
truststore, a right password produces, a wrong one is a SaslAuthenticationException.
Skipped when java or the cached jars (``riverbed.testing.kafka_reference``) are missing."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from security_pki import Pki

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.kafka_reference import cache_dir

SOURCE = Path(__file__).parent / "java" / "SecureClient.java"


@pytest.fixture(scope="module")
def libs() -> Path:
    libs = cache_dir() / "libs"
    if shutil.which("java") is None or not (cache_dir() / "libs.complete").exists():
        pytest.skip("java or the cached Kafka jars are missing (riverbed.testing.kafka_reference)")
    return libs


@pytest.fixture(scope="module")
def broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    config = {
        "listeners": "ADMIN://127.0.0.1:0,SECURE://127.0.0.1:0",
        "listener.security.protocol.map": "ADMIN:PLAINTEXT,SECURE:SASL_SSL",
        "ssl.keystore.location": str(pki.server),
        "listener.name.secure.plain.sasl.jaas.config": (
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_java="java-pw";'
        ),
        "offsets.topic.num.partitions": "1",
    }
    embedded = EmbeddedBroker(tmp_path_factory.mktemp("java-broker"), config).start()
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{embedded.broker.endpoint('ADMIN')[1]}"})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion("jules", info, b"jules-pw")])[
        "jules"
    ].result(30)
    try:
        yield embedded
    finally:
        embedded.stop()


def run_java(
    libs: Path, broker: EmbeddedBroker, pki: Pki, *args: str
) -> subprocess.CompletedProcess[str]:
    port = broker.broker.endpoint("SECURE")[1]
    return subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            f"{libs}/*",
            str(SOURCE),
            f"localhost:{port}",
            *args[:3],
            str(pki.ca),
            args[3],
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [("SCRAM-SHA-512", "jules", "jules-pw"), ("PLAIN", "java", "java-pw")],
)
def test_java_producer_over_sasl_ssl(
    libs: Path, broker: EmbeddedBroker, pki: Pki, mechanism: str, user: str, password: str
) -> None:
    ok = run_java(libs, broker, pki, mechanism, user, password, "java-topic")
    assert ok.returncode == 0 and "OK offset=" in ok.stdout, ok.stdout + ok.stderr[-3000:]
    wrong = run_java(libs, broker, pki, mechanism, user, "wrong", "java-topic")
    assert wrong.returncode == 3, wrong.stdout + wrong.stderr[-3000:]
    assert "SaslAuthenticationException" in wrong.stdout, wrong.stdout
