"""SCRAM-SHA-256 / SCRAM-SHA-512, the server side (RFC 5802, RFC 7677), as Kafka speaks it.

Stored form (what :class:`ScramCredential` holds and the credential store persists): the
salt, the iteration count, ``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")`` — never the password nor the salted
password, so a stolen store does not let anyone log in without a dictionary attack.

Exchange (one :class:`ScramServerExchange` per authentication)::

    client-first   n,[a=authzid],n=USER,r=CNONCE[,ext...]
    server-first   r=CNONCE+SNONCE,s=BASE64(salt),i=ITERATIONS
    client-final   c=BASE64(gs2-header),r=CNONCE+SNONCE,p=BASE64(ClientProof)
    server-final   v=BASE64(ServerSignature)

``AuthMessage = client-first-bare "," server-first "," client-final-without-proof``; the
proof checks iff ``H(ClientProof XOR HMAC(StoredKey, AuthMessage)) == StoredKey``.  An
unknown user gets a server-first message with a fake salt (derived from the name) so a
client cannot tell unknown users from wrong passwords before the final step.  Kafka's
rules: iterations between 4096 and 16384; an ``a=`` authzid must equal the user name;
channel binding is not supported (``n`` flag only).  Pure computation, no I/O; not
thread-safe (one exchange per connection).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from riverbed.errors import RiverbedError

MIN_ITERATIONS = 4096  # Kafka's ScramMechanism.minIterations
MAX_ITERATIONS = 16384  # Kafka's ScramMechanism.maxIterations
DEFAULT_ITERATIONS = 8192


class ScramMechanism(IntEnum):
    """Kafka's wire ids (AlterUserScramCredentials / DescribeUserScramCredentials)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism:
        """``SCRAM-SHA-256`` -> SCRAM_SHA_256; UNKNOWN for anything else."""
        try:
            return cls[name.upper().replace("-", "_")]
        except KeyError:
            return cls.UNKNOWN


class SaslAuthenticationError(RiverbedError):
    """Authentication failed (wrong password, unknown user, malformed exchange):
    SASL_AUTHENTICATION_FAILED on the wire; the connection is closed after the answer."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One user's stored SCRAM credential for one mechanism (see the module docstring)."""

    mechanism: ScramMechanism
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """The stored form of what AlterUserScramCredentials sends (salt, SaltedPassword)."""
    h = mechanism.hash_name
    client_key = _hmac(h, salted_password, b"Client Key")
    return ScramCredential(
        mechanism=mechanism,
        salt=salt,
        stored_key=hashlib.new(h, client_key).digest(),
        server_key=_hmac(h, salted_password, b"Server Key"),
        iterations=iterations,
    )


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """RFC 5802 ``Hi(Normalize(password), salt, i)`` (no SASLprep: Kafka does none either)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def credential_from_password(
    mechanism: ScramMechanism,
    password: str,
    iterations: int = DEFAULT_ITERATIONS,
    salt: bytes | None = None,
) -> ScramCredential:
    """A fresh credential (random 32-byte salt unless given)."""
    salt = secrets.token_bytes(32) if salt is None else salt
    return credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


def _decode_saslname(value: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ``,`` and ``=3D`` is ``=``; any other ``=`` is bad."""
    out = value.replace("=2C", ",").replace("=3D", "=")
    if "=" in value.replace("=2C", "").replace("=3D", ""):
        raise SaslAuthenticationError("invalid username encoding in SCRAM client-first message")
    return out


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslAuthenticationError(f"malformed SCRAM message attribute {part!r}")
        out.setdefault(key, value)
    return out


CredentialLookup = Callable[[str, ScramMechanism], "ScramCredential | None"]


class ScramServerExchange:
    """One SCRAM authentication, server side: :meth:`evaluate` twice (client-first, then
    client-final); raises :class:`SaslAuthenticationError` on any failure.  After the
    second call :attr:`username` is the authenticated user."""

    def __init__(self, mechanism: ScramMechanism, lookup: CredentialLookup) -> None:
        self._mechanism = mechanism
        self._lookup = lookup
        self._step = 0
        self._credential: ScramCredential | None = None
        self._user = ""
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2_header = ""
        self.username: str | None = None

    @property
    def complete(self) -> bool:
        return self.username is not None

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("SCRAM message is not UTF-8") from None
        self._step += 1
        if self._step == 1:
            return self._client_first(text)
        if self._step == 2:
            return self._client_final(text)
        raise SaslAuthenticationError("unexpected SCRAM message after the exchange completed")

    def _client_first(self, text: str) -> bytes:
        flag, sep1, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not (sep1 and sep2) or flag not in ("n", "y"):
            raise SaslAuthenticationError(
                "invalid SCRAM client-first message (channel binding is not supported)"
            )
        attrs = _attributes(bare)
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise SaslAuthenticationError("SCRAM client-first message lacks n= or r=")
        user = _decode_saslname(attrs["n"])
        if authzid and authzid != f"a={attrs['n']}":
            raise SaslAuthenticationError("authorization id differs from the SCRAM user name")
        self._user = user
        self._gs2_header = f"{flag},{authzid},"
        self._client_first_bare = bare
        credential = self._lookup(user, self._mechanism)
        self._credential = credential
        if credential is None:  # answer with a plausible salt; fail at the final step
            salt = hashlib.sha256(b"riverbed-unknown-user:" + user.encode()).digest()
            iterations = MIN_ITERATIONS
        else:
            salt, iterations = credential.salt, credential.iterations
        self._nonce = attrs["r"] + secrets.token_urlsafe(24)
        self._server_first = f"r={self._nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise SaslAuthenticationError("SCRAM client-final message lacks p=")
        attrs = _attributes(without_proof)
        # Kafka checks only that the nonce *ends with* the server-first nonce: librdkafka
        # before 2.x (kcat 1.7 ships 2.0.2) sends the client nonce twice.
        if not attrs.get("r", "").endswith(self._nonce):
            raise SaslAuthenticationError("Invalid client nonce in the final client message")
        expected_binding = base64.b64encode(self._gs2_header.encode()).decode()
        if attrs.get("c") != expected_binding:
            raise SaslAuthenticationError("SCRAM channel binding mismatch")
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise SaslAuthenticationError("SCRAM proof is not base64") from None
        credential = self._credential
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        h = self._mechanism.hash_name
        if credential is None or len(proof) != len(credential.stored_key):
            raise SaslAuthenticationError("invalid credentials")
        signature = _hmac(h, credential.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(h, client_key).digest(), credential.stored_key):
            raise SaslAuthenticationError("invalid credentials")
        self.username = self._user
        server_signature = _hmac(h, credential.server_key, auth_message)
        return f"v={base64.b64encode(server_signature).decode()}".encode()
