"""SASL on SASL_PLAINTEXT / SASL_SSL listeners: the per-connection state machine.

States (each lists what it admits; anything else closes the connection, as Kafka does)::

    HANDSHAKE      ApiVersions, SaslHandshake            -> AUTHENTICATE
    AUTHENTICATE   ApiVersions, SaslAuthenticate         -> AUTHENTICATE (more rounds)
                                                         -> COMPLETE | FAILED
    COMPLETE       every API; SaslHandshake starts a re-authentication (KIP-368)
                   -> REAUTHENTICATE
    REAUTHENTICATE every API; SaslAuthenticate           -> COMPLETE | FAILED
    FAILED         nothing (the answer is sent, then the connection closes)

SaslHandshake v0-1 and SaslAuthenticate v0-2 are served.  After a v0 handshake (clients
before Kafka 1.0) the tokens travel raw, without Kafka's request and response headers
(:attr:`SaslSession.raw_tokens`): each frame the client sends is a token, each answer a
size-prefixed token; a failure closes the connection without an answer, as Kafka does.
Re-authentication needs a v1 handshake.  An unknown mechanism gets
UNSUPPORTED_SASL_MECHANISM with the enabled list, then the connection closes.  A wrong
password gets SASL_AUTHENTICATION_FAILED ("Authentication failed: Invalid username or
password" for PLAIN, "... invalid credentials with SASL mechanism SCRAM-SHA-256" for
SCRAM), then the connection closes.

Re-authentication (KIP-368): with ``connections.max.reauth.ms`` > 0, SaslAuthenticate v1+
answers carry ``session_lifetime_ms``; once it has passed, any request but SaslHandshake
closes the connection.  A re-authentication must use the same mechanism and end in the
same principal (Kafka's rules) or it fails.

Mechanisms: ``PLAIN`` (users from the JAAS line ``sasl.jaas.config``, Kafka's
``user_<name>="<password>"`` options) and ``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` (the
credential store).  Not thread-safe: one session per connection, on the event loop.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from riverbed.broker.security.scram import (
    CredentialLookup,
    SaslAuthenticationError,
    ScramMechanism,
    ScramServerExchange,
)
from riverbed.errors import ConfigError
from riverbed.protocol.error_codes import ErrorCode

API_VERSIONS_KEY = 18
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


class SaslState(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    REAUTHENTICATE = "reauthenticate"
    FAILED = "failed"


def parse_jaas_options(jaas: str) -> dict[str, str]:
    """The ``key="value"`` options of one JAAS login-module line (Kafka's
    ``sasl.jaas.config``): ``org.apache...PlainLoginModule required user_alice="pw";``."""
    return {
        m.group(1): m.group(2).replace('\\"', '"').replace("\\\\", "\\")
        if m.group(2) is not None
        else m.group(3)
        for m in _JAAS_OPTION.finditer(jaas)
    }


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """One listener's SASL settings: the enabled mechanisms, PLAIN's users, the
    re-authentication bound (0: sessions never expire)."""

    mechanisms: tuple[str, ...] = SUPPORTED_MECHANISMS
    plain_users: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    max_reauth_ms: int = 0


def sasl_settings(props: Mapping[str, str], listener: str) -> SaslSettings:
    """Kafka's names: ``sasl.enabled.mechanisms``, ``connections.max.reauth.ms`` and the
    PLAIN JAAS line ``listener.name.<l>.plain.sasl.jaas.config`` (or, for every listener,
    ``sasl.jaas.config``); each key may carry the ``listener.name.<l>.`` prefix."""
    from riverbed.broker.security.listeners import listener_setting

    raw = listener_setting(props, listener, "sasl.enabled.mechanisms")
    mechanisms = tuple(
        m.strip().upper() for m in (raw or ",".join(SUPPORTED_MECHANISMS)).split(",") if m.strip()
    )
    for mechanism in mechanisms:
        if mechanism not in SUPPORTED_MECHANISMS:
            raise ConfigError(
                f"setting 'sasl.enabled.mechanisms': {mechanism} is not supported "
                f"(supported: {', '.join(SUPPORTED_MECHANISMS)})"
            )
    if not mechanisms:
        raise ConfigError("setting 'sasl.enabled.mechanisms': no mechanism enabled")
    jaas = listener_setting(props, listener, "plain.sasl.jaas.config") or listener_setting(
        props, listener, "sasl.jaas.config"
    )
    users = {
        k[len("user_") :]: v
        for k, v in parse_jaas_options(jaas or "").items()
        if k.startswith("user_") and len(k) > len("user_")
    }
    reauth_text = listener_setting(props, listener, "connections.max.reauth.ms") or "0"
    try:
        reauth = int(reauth_text)
    except ValueError:
        raise ConfigError(
            f"setting 'connections.max.reauth.ms': {reauth_text!r} is not an integer"
        ) from None
    return SaslSettings(mechanisms, MappingProxyType(users), max(reauth, 0))


@dataclass(frozen=True, slots=True)
class HandshakeResult:
    error_code: int
    mechanisms: list[str]
    close: bool


@dataclass(frozen=True, slots=True)
class AuthenticateResult:
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int
    close: bool


class _PlainExchange:
    """RFC 4616: one message ``[authzid] NUL authcid NUL passwd``."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.username: str | None = None

    @property
    def complete(self) -> bool:
        return self.username is not None

    def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user or not password:
            raise SaslAuthenticationError("Authentication failed: username or password empty")
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        self.username = user
        return b""


class SaslSession:
    """One connection's SASL state (see the module docstring).  ``now_ms`` is the
    broker clock's wall time in milliseconds."""

    def __init__(
        self, settings: SaslSettings, scram_lookup: CredentialLookup, now_ms: Callable[[], int]
    ) -> None:
        self._settings = settings
        self._lookup = scram_lookup
        self._now_ms = now_ms
        self.state = SaslState.HANDSHAKE
        self.mechanism: str | None = None
        self.principal: str | None = None  # "User:<name>" once authenticated
        self._exchange: _PlainExchange | ScramServerExchange | None = None
        self._expires_at_ms: int | None = None
        self.authentications = 0  # successful ones, re-authentications included
        # After a v0 handshake, until authenticated: frames are raw SASL tokens.
        self.raw_tokens = False

    @property
    def authenticated(self) -> bool:
        return self.state in (SaslState.COMPLETE, SaslState.REAUTHENTICATE)

    def admits(self, api_key: int) -> str | None:
        """None if a request of ``api_key`` may run now, else why the connection closes."""
        state = self.state
        if state is SaslState.FAILED:
            return "authentication failed"
        if state is SaslState.HANDSHAKE:
            if api_key in (API_VERSIONS_KEY, SASL_HANDSHAKE_KEY):
                return None
            return f"api key {api_key} before SASL authentication (expected SaslHandshake)"
        if state is SaslState.AUTHENTICATE:
            if api_key in (API_VERSIONS_KEY, SASL_AUTHENTICATE_KEY):
                return None
            return f"api key {api_key} during SASL authentication (expected SaslAuthenticate)"
        expires = self._expires_at_ms
        if (
            state is SaslState.COMPLETE
            and expires is not None
            and self._now_ms() > expires
            and api_key != SASL_HANDSHAKE_KEY
        ):
            return "SASL session expired (connections.max.reauth.ms) without re-authentication"
        return None

    def handshake(self, mechanism: str, version: int = 1) -> HandshakeResult:
        enabled = list(self._settings.mechanisms)
        legacy_reauth = version == 0 and self.state is SaslState.COMPLETE
        if self.state not in (SaslState.HANDSHAKE, SaslState.COMPLETE) or legacy_reauth:
            self.state = SaslState.FAILED
            return HandshakeResult(ErrorCode.ILLEGAL_SASL_STATE, enabled, True)
        if mechanism not in enabled:
            self.state = SaslState.FAILED
            return HandshakeResult(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled, True)
        if self.state is SaslState.COMPLETE:
            if mechanism != self.mechanism:  # KIP-368: the mechanism may not change
                self.state = SaslState.FAILED
                return HandshakeResult(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled, True)
            self.state = SaslState.REAUTHENTICATE
        else:
            self.state = SaslState.AUTHENTICATE
            self.raw_tokens = version == 0
        self.mechanism = mechanism
        if mechanism == "PLAIN":
            self._exchange = _PlainExchange(self._settings.plain_users)
        else:
            self._exchange = ScramServerExchange(ScramMechanism.from_name(mechanism), self._lookup)
        return HandshakeResult(ErrorCode.NONE, enabled, False)

    def authenticate(self, auth_bytes: bytes, version: int) -> AuthenticateResult:
        exchange = self._exchange
        if self.state not in (SaslState.AUTHENTICATE, SaslState.REAUTHENTICATE) or exchange is None:
            self.state = SaslState.FAILED
            return AuthenticateResult(
                ErrorCode.ILLEGAL_SASL_STATE,
                "SaslAuthenticate request received without a SaslHandshake",
                b"",
                0,
                True,
            )
        try:
            challenge = exchange.evaluate(auth_bytes)
        except SaslAuthenticationError as exc:
            return self._fail(str(exc))
        if not exchange.complete:
            return AuthenticateResult(ErrorCode.NONE, None, challenge, 0, False)
        principal = f"User:{exchange.username}"
        if self.state is SaslState.REAUTHENTICATE and principal != self.principal:
            return self._fail(
                "Cannot change principals during re-authentication from "
                f"{self.principal} to {principal}"
            )
        self.principal = principal
        self.authentications += 1
        self.state = SaslState.COMPLETE
        self.raw_tokens = False
        self._exchange = None
        lifetime = self._settings.max_reauth_ms if version >= 1 else 0
        self._expires_at_ms = self._now_ms() + lifetime if lifetime > 0 else None
        return AuthenticateResult(ErrorCode.NONE, None, challenge, lifetime, False)

    def _fail(self, reason: str) -> AuthenticateResult:
        self.state = SaslState.FAILED
        self._exchange = None
        if self.mechanism and self.mechanism.startswith("SCRAM") and "credentials" in reason:
            reason = (
                "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {self.mechanism}"
            )
        return AuthenticateResult(ErrorCode.SASL_AUTHENTICATION_FAILED, reason, b"", 0, True)
