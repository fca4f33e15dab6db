"""AlterUserScramCredentials / DescribeUserScramCredentials against Kafka's rules, on a
real credential store in a temporary directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers import alter_user_scram_credentials as alter
from riverbed.broker.handlers import describe_user_scram_credentials as describe
from riverbed.broker.security.scram import ScramMechanism, salted_password
from riverbed.broker.security.scram_store import ScramCredentialStore
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import (
    AlterUserScramCredentialsRequest as Alter,
)
from riverbed.protocol.messages import (
    DescribeUserScramCredentialsRequest as Describe,
)

CTX = RequestContext(RequestHeader(api_key=51, api_version=0, correlation_id=1, client_id="t"))


@dataclass
class Deps:
    scram_credentials: ScramCredentialStore


def upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> Alter.ScramCredentialUpsertion:
    salt = b"0123456789abcdef"
    m = ScramMechanism(mechanism) if mechanism in (1, 2) else ScramMechanism.SCRAM_SHA_256
    return Alter.ScramCredentialUpsertion(
        name=name,
        mechanism=mechanism,
        iterations=iterations,
        salt=salt,
        salted_password=salted_password(m, "pw", salt, 4096),
    )


def codes(response: object) -> dict[str, int]:
    return {r.user: r.error_code for r in response.results}  # type: ignore[attr-defined]


def test_alter_then_describe(tmp_path: Path) -> None:
    deps = Deps(ScramCredentialStore(tmp_path))
    out = alter.handle(
        deps,
        CTX,
        Alter(
            deletions=[],
            upsertions=[
                upsert("alice"),
                upsert("alice", 2, 8192),
                upsert("bob"),
                upsert(""),
                upsert("carol", 3),
                upsert("dave", 1, 100),
                upsert("erin", 1, 20000),
            ],
        ),
    )
    assert codes(out) == {
        # Kafka's KRaft controller: one user altered twice in a request, even for two
        # mechanisms, is DUPLICATE_RESOURCE and neither change applies.
        "alice": ErrorCode.DUPLICATE_RESOURCE,
        "bob": 0,
        "": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "carol": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "dave": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "erin": ErrorCode.UNACCEPTABLE_CREDENTIAL,
    }
    alter.handle(deps, CTX, Alter(deletions=[], upsertions=[upsert("alice")]))
    alter.handle(deps, CTX, Alter(deletions=[], upsertions=[upsert("alice", 2, 8192)]))
    described = describe.handle(deps, CTX, Describe(users=None))
    assert [r.user for r in described.results] == ["alice", "bob"]
    infos = described.results[0].credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(1, 4096), (2, 8192)]
    described = describe.handle(
        deps,
        CTX,
        Describe(
            users=[
                Describe.UserName(name="bob"),
                Describe.UserName(name="zed"),
                Describe.UserName(name="x"),
                Describe.UserName(name="x"),
            ]
        ),
    )
    assert codes(described) == {
        "bob": 0,
        "zed": ErrorCode.RESOURCE_NOT_FOUND,
        "x": ErrorCode.DUPLICATE_RESOURCE,
    }
    # Durable: a new store on the same directory sees the credentials.
    assert ScramCredentialStore(tmp_path).users() == ["alice", "bob"]


def test_delete_rules(tmp_path: Path) -> None:
    deps = Deps(ScramCredentialStore(tmp_path))
    alter.handle(deps, CTX, Alter(deletions=[], upsertions=[upsert("alice"), upsert("bob")]))
    out = alter.handle(
        deps,
        CTX,
        Alter(
            deletions=[
                Alter.ScramCredentialDeletion(name="alice", mechanism=1),
                Alter.ScramCredentialDeletion(name="bob", mechanism=1),
                Alter.ScramCredentialDeletion(name="nobody", mechanism=1),
            ],
            upsertions=[upsert("bob")],
        ),
    )
    assert codes(out) == {
        "alice": 0,
        "bob": ErrorCode.DUPLICATE_RESOURCE,
        "nobody": ErrorCode.RESOURCE_NOT_FOUND,
    }
    assert deps.scram_credentials.users() == ["bob"]


def test_a_third_alteration_keeps_the_duplicate_and_a_first_error_sticks(tmp_path: Path) -> None:
    deps = Deps(ScramCredentialStore(tmp_path))
    out = alter.handle(
        deps,
        CTX,
        Alter(
            deletions=[Alter.ScramCredentialDeletion(name="nobody", mechanism=1)],
            upsertions=[upsert("ann"), upsert("ann", 2), upsert("ann"), upsert("nobody")],
        ),
    )
    assert codes(out) == {
        "nobody": ErrorCode.RESOURCE_NOT_FOUND,
        "ann": ErrorCode.DUPLICATE_RESOURCE,
    }
    assert deps.scram_credentials.users() == []
