"""TLS and SASL with real clients (confluent-kafka / librdkafka 2.x, kcat on librdkafka
2.0.2) against one broker serving every listener kind at once:

    PLAIN    PLAINTEXT
    SSL      SSL, server certificate only         MTLS  SSL, client certificate required
    SASL     SASL_PLAINTEXT (PLAIN, SCRAM-*)      SSASL SASL_SSL (PLAIN, SCRAM-*)
    REAUTH   SASL_PLAINTEXT, connections.max.reauth.ms=1500 (KIP-368)

SCRAM users are created over the PLAINTEXT listener with AlterUserScramCredentials (the
``riverbed users`` CLI test does it through the console script).
"""

from __future__ import annotations

import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from security_pki import Pki

from riverbed.broker.server import Broker
from riverbed.testing.embedded import EmbeddedBroker

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-pw" user_admin="admin-pw" user_carol="carol-pw";'
)
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    config = {
        "listeners": "PLAIN://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,"
        "SASL://127.0.0.1:0,SSASL://127.0.0.1:0,REAUTH://127.0.0.1:0",
        "advertised.listeners": "SSL://localhost:0",  # the bound port, under this name
        "listener.security.protocol.map": "PLAIN:PLAINTEXT,SSL:SSL,MTLS:SSL,"
        "SASL:SASL_PLAINTEXT,SSASL:SASL_SSL,REAUTH:SASL_PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server),
        "listener.name.mtls.ssl.keystore.certificate.chain": pki.server_cert.read_text(),
        "listener.name.mtls.ssl.keystore.key": pki.server_key.read_text(),
        "listener.name.mtls.ssl.truststore.location": str(pki.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.jaas.config": JAAS,
        "listener.name.reauth.connections.max.reauth.ms": "1500",
        "offsets.topic.num.partitions": "1",
    }
    embedded = EmbeddedBroker(tmp_path_factory.mktemp("secure-broker"), config).start()
    admin = AdminClient({"bootstrap.servers": address(embedded, "PLAIN")})
    for user, mechanism, password in [
        ("alice", ScramMechanism.SCRAM_SHA_256, "alice-pw"),
        ("bob", ScramMechanism.SCRAM_SHA_512, "bob-pw"),
    ]:
        info = ScramCredentialInfo(mechanism, 4096)
        futures = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(user, info, password.encode())]
        )
        futures[user].result(timeout=DEADLINE_S)
    try:
        yield embedded
    finally:
        embedded.stop()


def address(embedded: EmbeddedBroker, listener: str) -> str:
    return f"127.0.0.1:{embedded.broker.endpoint(listener)[1]}"


def wait_for_principal(embedded: EmbeddedBroker, principal: str) -> None:
    """Some open connection carries ``principal`` (librdkafka replaces its bootstrap
    connection by one to the advertised broker, so it may take a moment)."""

    async def collect(b: Broker) -> list[str]:
        return sorted(c.principal for c in b.connections)

    deadline = time.monotonic() + DEADLINE_S
    while principal not in (seen := embedded.call(collect)):
        assert time.monotonic() < deadline, seen
        time.sleep(0.05)


def metadata(conf: dict[str, Any], timeout_s: float = DEADLINE_S) -> Any:
    return AdminClient(conf).list_topics(timeout=timeout_s)


def refused(conf: dict[str, Any], match: Callable[[KafkaError], bool]) -> KafkaError:
    """Metadata through ``conf`` fails; the client reports an error that ``match``es."""
    seen: list[KafkaError] = []
    client = Producer({**conf, "error_cb": seen.append})
    with pytest.raises(KafkaException):
        client.list_topics(timeout=2)
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        client.poll(0.1)  # error_cb runs from poll
        for error in seen:
            if match(error):
                return error
    raise AssertionError(f"no matching error in {[e.str() for e in seen]}")


def sasl(
    embedded: EmbeddedBroker, listener: str, mechanism: str, user: str, password: str, **extra: str
) -> dict[str, Any]:
    protocol = "SASL_SSL" if listener == "SSASL" else "SASL_PLAINTEXT"
    return {
        "bootstrap.servers": address(embedded, listener),
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def roundtrip(conf: dict[str, Any]) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    for i in range(10):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(DEADLINE_S) == 0
    consumer = Consumer({**conf, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value() or b"")
    consumer.commit(asynchronous=False)  # through the coordinator found on this listener
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(10)]


# -- TLS ---------------------------------------------------------------------------------
def test_ssl_verified_with_the_right_ca(broker: EmbeddedBroker, pki: Pki) -> None:
    conf = {
        "bootstrap.servers": address(broker, "SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca),
    }
    md = metadata(conf)
    (advertised,) = md.brokers.values()  # the SSL listener's advertised address
    assert (advertised.host, advertised.port) == ("localhost", broker.broker.endpoint("SSL")[1])
    roundtrip({**conf, "bootstrap.servers": f"localhost:{advertised.port}"})


def test_ssl_with_the_wrong_ca_fails(broker: EmbeddedBroker, pki: Pki) -> None:
    conf = {
        "bootstrap.servers": address(broker, "SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.other_ca),
    }
    refused(conf, lambda e: "certificate verify failed" in e.str())


def test_ssl_client_certificate_required(broker: EmbeddedBroker, pki: Pki) -> None:
    base = {
        "bootstrap.servers": address(broker, "MTLS"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca),
    }
    refused(
        base,
        lambda e: (
            e.code() in (KafkaError._TRANSPORT, KafkaError._SSL, KafkaError._ALL_BROKERS_DOWN)
        ),
    )
    with_cert = {
        **base,
        "ssl.certificate.location": str(pki.client_cert),
        "ssl.key.location": str(pki.client_key),
    }
    producer = Producer(with_cert)  # keep a connection open to look at its principal
    producer.list_topics(timeout=DEADLINE_S)
    wait_for_principal(broker, "User:CN=alice,OU=eng,O=Riverbed")
    del producer


# -- SASL --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("PLAIN", "carol", "carol-pw"),
        ("SCRAM-SHA-256", "alice", "alice-pw"),
        ("SCRAM-SHA-512", "bob", "bob-pw"),
    ],
)
def test_sasl_plaintext_mechanisms(
    broker: EmbeddedBroker, mechanism: str, user: str, password: str
) -> None:
    conf = sasl(broker, "SASL", mechanism, user, password)
    producer = Producer(conf)
    md = producer.list_topics(timeout=DEADLINE_S)
    assert [b.port for b in md.brokers.values()] == [broker.broker.endpoint("SASL")[1]]
    wait_for_principal(broker, f"User:{user}")
    wrong = sasl(broker, "SASL", mechanism, user, "wrong")
    error = refused(wrong, lambda e: e.code() == KafkaError._AUTHENTICATION)
    assert "Authentication failed" in error.str()


def test_scram_mechanism_without_credential_is_refused(broker: EmbeddedBroker) -> None:
    # alice has only a SCRAM-SHA-256 credential
    conf = sasl(broker, "SASL", "SCRAM-SHA-512", "alice", "alice-pw")
    refused(conf, lambda e: e.code() == KafkaError._AUTHENTICATION)


def test_sasl_ssl_roundtrip_with_consumer_group(broker: EmbeddedBroker, pki: Pki) -> None:
    conf = sasl(
        broker, "SSASL", "SCRAM-SHA-512", "bob", "bob-pw", **{"ssl.ca.location": str(pki.ca)}
    )
    roundtrip(conf)


def test_requests_before_authentication_close_the_connection(broker: EmbeddedBroker) -> None:
    # A Metadata v1 request with no topics, sent before any SaslHandshake.
    body = struct.pack(">hhih", 3, 1, 7, 1) + b"x" + struct.pack(">i", 0)
    port = broker.broker.endpoint("SASL")[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        assert sock.recv(4) == b""  # closed, no answer


def _frame(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, 1) + b"t"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _read_frame(sock: socket.socket) -> bytes:
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed after {data!r}")
        data += chunk
    return data[4:]


@pytest.mark.parametrize(("password", "accepted"), [("carol-pw", True), ("nope", False)])
def test_legacy_v0_handshake_with_raw_tokens(
    broker: EmbeddedBroker, password: str, accepted: bool
) -> None:
    """A pre-1.0 client: SaslHandshake v0, then the PLAIN token without Kafka headers."""
    port = broker.broker.endpoint("SASL")[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_frame(17, 0, 1, struct.pack(">h", 5) + b"PLAIN"))
        answer = _read_frame(sock)
        assert struct.unpack(">ih", answer[:6]) == (1, 0)  # correlation id, NONE
        token = b"\x00carol\x00" + password.encode()
        sock.sendall(struct.pack(">i", len(token)) + token)
        if not accepted:
            assert sock.recv(4) == b""  # closed without an answer, as Kafka does
            return
        assert _read_frame(sock) == b""  # PLAIN's empty server token, size-prefixed
        sock.sendall(_frame(3, 1, 2, struct.pack(">i", -1)))  # Metadata v1, all topics
        assert struct.unpack(">i", _read_frame(sock)[:4]) == (2,)


def test_expired_session_is_closed_on_its_next_request(broker: EmbeddedBroker) -> None:
    """KIP-368 without a re-authenticating client: SaslAuthenticate v1 announces the
    1.5 s lifetime; after it, the next request (not a SaslHandshake) closes the socket."""
    port = broker.broker.endpoint("REAUTH")[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_frame(17, 1, 1, struct.pack(">h", 5) + b"PLAIN"))
        assert struct.unpack(">ih", _read_frame(sock)[:6]) == (1, 0)
        token = b"\x00carol\x00carol-pw"
        sock.sendall(_frame(36, 1, 2, struct.pack(">i", len(token)) + token))
        answer = _read_frame(sock)  # id, error, null message, empty bytes, lifetime
        assert struct.unpack(">ihhiq", answer) == (2, 0, -1, 0, 1500)
        sock.sendall(_frame(3, 1, 3, struct.pack(">i", -1)))
        assert struct.unpack(">i", _read_frame(sock)[:4]) == (3,)
        time.sleep(1.6)  # let the session lifetime pass (the point of the test)
        sock.sendall(_frame(3, 1, 4, struct.pack(">i", -1)))
        assert sock.recv(4) == b""


def test_reauthentication(broker: EmbeddedBroker) -> None:
    """librdkafka re-authenticates before the 1.5 s session ends (KIP-368); the same
    connection keeps producing for three session lifetimes."""
    conf = sasl(broker, "REAUTH", "SCRAM-SHA-256", "alice", "alice-pw")
    producer = Producer(conf)
    topic = f"reauth-{uuid.uuid4().hex[:8]}"
    deadline = time.monotonic() + 5
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(topic, b"x")
        assert producer.flush(DEADLINE_S) == 0
        sent += 1
        time.sleep(0.1)

    async def reauth_counts(b: Broker) -> list[int]:
        return [
            c.sasl.authentications
            for c in b.connections
            if c.sasl is not None and c.principal == "User:alice"
        ]

    assert max(broker.call(reauth_counts)) >= 3


def test_kcat_over_sasl_ssl(broker: EmbeddedBroker, pki: Pki, tmp_path: Path) -> None:
    common = [
        "kcat",
        "-b",
        address(broker, "SSASL"),
        "-X",
        "security.protocol=SASL_SSL",
        "-X",
        "sasl.mechanisms=SCRAM-SHA-256",
        "-X",
        "sasl.username=alice",
        "-X",
        f"ssl.ca.location={pki.ca}",
        "-t",
        "kcat-topic",
    ]
    subprocess.run(
        [*common, "-X", "sasl.password=alice-pw", "-P"],
        input=b"one\ntwo\n",
        check=True,
        timeout=60,
        capture_output=True,
    )
    out = subprocess.run(
        [*common, "-X", "sasl.password=alice-pw", "-C", "-e", "-o", "beginning"],
        check=True,
        timeout=60,
        capture_output=True,
    )
    assert out.stdout.split() == [b"one", b"two"]
    wrong = subprocess.run(
        [*common, "-X", "sasl.password=nope", "-L", "-m", "5"], timeout=60, capture_output=True
    )
    assert wrong.returncode != 0
    assert b"Authentication failed" in wrong.stderr, wrong.stderr
