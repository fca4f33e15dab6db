"""SCRAM (RFC 5802/7677) and PLAIN server sides, and the per-connection SASL state
machine, driven by a minimal SCRAM client written from the RFC."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest

from riverbed.broker.security.sasl import (
    SaslSession,
    SaslSettings,
    SaslState,
    parse_jaas_options,
    sasl_settings,
)
from riverbed.broker.security.scram import (
    SaslAuthenticationError,
    ScramCredential,
    ScramMechanism,
    ScramServerExchange,
    credential_from_password,
    credential_from_salted_password,
    salted_password,
)
from riverbed.broker.security.scram_store import ScramCredentialStore
from riverbed.errors import ConfigError, StorageError
from riverbed.protocol.error_codes import ErrorCode

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512


class ScramClient:
    """RFC 5802 client side, enough to drive the server."""

    def __init__(self, mechanism: ScramMechanism, user: str, password: str, nonce: str) -> None:
        self.mechanism, self.user, self.password, self.nonce = mechanism, user, password, nonce
        self.first_bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(p.split("=", 1) for p in server_first.decode().split(","))
        h = self.mechanism.hash_name
        salted = salted_password(
            self.mechanism, self.password, base64.b64decode(attrs["s"]), int(attrs["i"])
        )
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        client_key = hmac.new(salted, b"Client Key", h).digest()
        signature = hmac.new(hashlib.new(h, client_key).digest(), auth, h).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", h).digest()
        self.server_signature = hmac.new(server_key, auth, h).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def test_rfc7677_credential_vector() -> None:
    # RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096.
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = credential_from_password(SHA256, "pencil", 4096, salt)
    client = ScramClient(SHA256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO")
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = client.final(server_first)
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert base64.b64encode(client.server_signature) == (
        b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    )
    assert (
        credential.stored_key
        == hashlib.sha256(
            hmac.new(
                salted_password(SHA256, "pencil", salt, 4096), b"Client Key", "sha256"
            ).digest()
        ).digest()
    )


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_scram_exchange_accepts_the_right_password(mechanism: ScramMechanism) -> None:
    store = {"al,i=ce": credential_from_password(mechanism, "s3cret", 4096)}
    server = ScramServerExchange(mechanism, lambda u, m: store.get(u) if m is mechanism else None)
    client = ScramClient(mechanism, "al,i=ce", "s3cret", "fyko+d2lbbFgONRv9qkxdawL")
    server_first = server.evaluate(client.first())
    assert server_first.startswith(b"r=fyko+d2lbbFgONRv9qkxdawL")
    server_final = server.evaluate(client.final(server_first))
    assert server_final == b"v=" + base64.b64encode(client.server_signature)
    assert server.complete and server.username == "al,i=ce"


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("nobody", "s3cret")])
def test_scram_exchange_refuses_wrong_password_and_unknown_user(user: str, password: str) -> None:
    store = {"alice": credential_from_password(SHA256, "s3cret", 4096)}
    server = ScramServerExchange(SHA256, lambda u, m: store.get(u))
    client = ScramClient(SHA256, user, password, "abc")
    server_first = server.evaluate(client.first())
    assert b",i=4096" in server_first  # unknown users look like known ones
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        server.evaluate(client.final(server_first))
    assert not server.complete


def test_scram_exchange_refuses_malformed_messages() -> None:
    server = ScramServerExchange(SHA256, lambda u, m: None)
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(b"p=tls-unique,,n=a,r=x")  # channel binding
    server = ScramServerExchange(SHA256, lambda u, m: None)
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        server.evaluate(b"n,a=bob,n=alice,r=x")
    store = {"alice": credential_from_password(SHA256, "pw", 4096)}
    server = ScramServerExchange(SHA256, lambda u, m: store.get(u))
    server.evaluate(b"n,,n=alice,r=x")
    with pytest.raises(SaslAuthenticationError, match="Invalid client nonce"):
        server.evaluate(b"c=biws,r=x-not-ours,p=AAAA")


def _session(
    settings: SaslSettings, store: dict[str, ScramCredential], now: list[int]
) -> SaslSession:
    return SaslSession(settings, lambda u, m: store.get(u), lambda: now[0])


def test_plain_session_gates_requests_until_authenticated() -> None:
    settings = SaslSettings(plain_users={"alice": "pw"})
    session = _session(settings, {}, [0])
    assert session.admits(18) is None and session.admits(17) is None
    assert session.admits(3) is not None  # Metadata before the handshake: closed
    assert session.handshake("PLAIN").error_code == ErrorCode.NONE
    assert session.admits(3) is not None and session.admits(36) is None
    result = session.authenticate(b"\x00alice\x00pw", 2)
    assert result.error_code == ErrorCode.NONE and not result.close
    assert session.principal == "User:alice" and session.admits(3) is None


def test_plain_wrong_password_fails_and_closes() -> None:
    session = _session(SaslSettings(plain_users={"alice": "pw"}), {}, [0])
    session.handshake("PLAIN")
    result = session.authenticate(b"\x00alice\x00nope", 1)
    assert result.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and result.close
    assert result.error_message == "Authentication failed: Invalid username or password"
    assert session.state is SaslState.FAILED and session.admits(18) is not None


def test_unsupported_mechanism_lists_the_enabled_ones() -> None:
    session = _session(SaslSettings(mechanisms=("SCRAM-SHA-512",)), {}, [0])
    result = session.handshake("PLAIN")
    assert result.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM and result.close
    assert result.mechanisms == ["SCRAM-SHA-512"]


def test_scram_session_and_reauthentication() -> None:
    now = [1_000]
    store = {"bob": credential_from_password(SHA512, "pw", 4096)}
    session = _session(SaslSettings(max_reauth_ms=60_000), store, now)
    session.handshake("SCRAM-SHA-512")
    client = ScramClient(SHA512, "bob", "pw", "n1")
    first = session.authenticate(client.first(), 2)
    assert first.error_code == ErrorCode.NONE and first.auth_bytes.startswith(b"r=n1")
    final = session.authenticate(client.final(first.auth_bytes), 2)
    assert final.error_code == ErrorCode.NONE and final.session_lifetime_ms == 60_000
    assert session.principal == "User:bob"
    now[0] += 60_001
    assert session.admits(0) is not None  # expired: only a re-authentication is allowed
    assert session.handshake("SCRAM-SHA-512").error_code == ErrorCode.NONE
    client = ScramClient(SHA512, "bob", "pw", "n2")
    first = session.authenticate(client.first(), 2)
    assert session.authenticate(client.final(first.auth_bytes), 2).error_code == 0
    assert session.admits(0) is None


def test_reauthentication_may_not_change_principal_or_mechanism() -> None:
    store = {u: credential_from_password(SHA256, "pw", 4096) for u in ("bob", "eve")}
    session = _session(SaslSettings(), store, [0])
    for user in ("bob", "eve"):
        session.handshake("SCRAM-SHA-256")
        client = ScramClient(SHA256, user, "pw", "n")
        first = session.authenticate(client.first(), 1)
        result = session.authenticate(client.final(first.auth_bytes), 1)
    assert result.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Cannot change principals" in (result.error_message or "")
    session = _session(SaslSettings(plain_users={"bob": "pw"}), store, [0])
    session.handshake("PLAIN")
    session.authenticate(b"\x00bob\x00pw", 1)
    assert session.handshake("SCRAM-SHA-256").close


def test_jaas_options_and_settings() -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="a\\"b" user_admin="a\\"b" user_alice=alice-pw;'
    )
    assert parse_jaas_options(jaas)["user_admin"] == 'a"b'
    settings = sasl_settings(
        {
            "listener.name.client.plain.sasl.jaas.config": jaas,
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "connections.max.reauth.ms": "5000",
        },
        "CLIENT",
    )
    assert dict(settings.plain_users) == {"admin": 'a"b', "alice": "alice-pw"}
    assert settings.mechanisms == ("PLAIN", "SCRAM-SHA-256") and settings.max_reauth_ms == 5000
    with pytest.raises(ConfigError, match="GSSAPI"):
        sasl_settings({"sasl.enabled.mechanisms": "GSSAPI"}, "X")


def test_credential_store_is_durable(tmp_path: Path) -> None:
    store = ScramCredentialStore(tmp_path)
    salt = b"salt" * 8
    credential = credential_from_salted_password(
        SHA256, salt, salted_password(SHA256, "correct-horse", salt, 4096), 4096
    )
    store.apply([], [("alice", credential), ("bob", credential_from_password(SHA512, "x", 4096))])
    text = (tmp_path / "scram_credentials.json").read_text()
    assert "correct-horse" not in text and "SCRAM-SHA-256" in text
    reopened = ScramCredentialStore(tmp_path)
    assert reopened.get("alice", SHA256) == credential
    assert reopened.users() == ["alice", "bob"]
    reopened.apply([("bob", SHA512), ("nobody", SHA256)], [])
    assert ScramCredentialStore(tmp_path).users() == ["alice"]
    (tmp_path / "scram_credentials.json").write_text('{"version": 7}')
    with pytest.raises(StorageError, match="not valid"):
        ScramCredentialStore(tmp_path)


def test_v0_handshake_switches_to_raw_tokens_until_authenticated() -> None:
    session = _session(SaslSettings(plain_users={"alice": "pw"}), {}, [0])
    assert session.handshake("PLAIN", 0).error_code == ErrorCode.NONE
    assert session.raw_tokens
    assert session.authenticate(b"\x00alice\x00pw", 0).error_code == ErrorCode.NONE
    assert not session.raw_tokens and session.principal == "User:alice"
    assert session.handshake("PLAIN", 0).close  # re-authentication needs v1
