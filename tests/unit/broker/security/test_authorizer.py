"""Kafka's StandardAuthorizer semantics: a table of (ACLs, request) -> decision, the
filters of DescribeAcls/DeleteAcls, and the durable store."""

from __future__ import annotations

from pathlib import Path

import pytest

from riverbed.broker.security.acl_store import AclStore
from riverbed.broker.security.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Authorizer,
    PatternType,
    ResourceType,
    authorizer_from_props,
)

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
X = ResourceType.TRANSACTIONAL_ID
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
Op = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl(
    rtype: ResourceType,
    name: str,
    op: AclOperation,
    perm: AclPermissionType = ALLOW,
    *,
    pattern: PatternType = LIT,
    principal: str = "User:alice",
    host: str = "*",
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


class Fixed:
    def __init__(self, acls: list[AclBinding]) -> None:
        self._acls = frozenset(acls)

    def acls(self) -> frozenset[AclBinding]:
        return self._acls


CASES = [
    # (id, acls, principal, host, op, rtype, name, expected)
    ("no acls denies", [], "User:alice", "1.2.3.4", Op.READ, T, "t", False),
    ("literal allow", [acl(T, "t", Op.READ)], "User:alice", "1.2.3.4", Op.READ, T, "t", True),
    ("other principal", [acl(T, "t", Op.READ)], "User:bob", "1.2.3.4", Op.READ, T, "t", False),
    ("other topic", [acl(T, "t", Op.READ)], "User:alice", None, Op.READ, T, "u", False),
    ("other type", [acl(G, "t", Op.READ)], "User:alice", None, Op.READ, T, "t", False),
    ("other op", [acl(T, "t", Op.READ)], "User:alice", None, Op.WRITE, T, "t", False),
    ("wildcard name", [acl(T, "*", Op.READ)], "User:alice", None, Op.READ, T, "any", True),
    (
        "wildcard principal",
        [acl(T, "t", Op.READ, principal="User:*")],
        "User:bob",
        None,
        Op.READ,
        T,
        "t",
        True,
    ),
    (
        "host match",
        [acl(T, "t", Op.READ, host="10.0.0.1")],
        "User:alice",
        "10.0.0.1",
        Op.READ,
        T,
        "t",
        True,
    ),
    (
        "host mismatch",
        [acl(T, "t", Op.READ, host="10.0.0.1")],
        "User:alice",
        "10.0.0.2",
        Op.READ,
        T,
        "t",
        False,
    ),
    (
        "prefixed",
        [acl(T, "ord", Op.WRITE, pattern=PRE)],
        "User:alice",
        None,
        Op.WRITE,
        T,
        "orders",
        True,
    ),
    (
        "prefixed no match",
        [acl(T, "ord", Op.WRITE, pattern=PRE)],
        "User:alice",
        None,
        Op.WRITE,
        T,
        "or",
        False,
    ),
    (
        "literal is not prefix",
        [acl(T, "ord", Op.WRITE)],
        "User:alice",
        None,
        Op.WRITE,
        T,
        "orders",
        False,
    ),
    ("all allows read", [acl(T, "t", Op.ALL)], "User:alice", None, Op.READ, T, "t", True),
    (
        "read implies describe",
        [acl(T, "t", Op.READ)],
        "User:alice",
        None,
        Op.DESCRIBE,
        T,
        "t",
        True,
    ),
    (
        "write implies describe",
        [acl(T, "t", Op.WRITE)],
        "User:alice",
        None,
        Op.DESCRIBE,
        T,
        "t",
        True,
    ),
    (
        "delete implies describe",
        [acl(T, "t", Op.DELETE)],
        "User:alice",
        None,
        Op.DESCRIBE,
        T,
        "t",
        True,
    ),
    (
        "alter implies describe",
        [acl(T, "t", Op.ALTER)],
        "User:alice",
        None,
        Op.DESCRIBE,
        T,
        "t",
        True,
    ),
    (
        "create does not imply describe",
        [acl(T, "t", Op.CREATE)],
        "User:alice",
        None,
        Op.DESCRIBE,
        T,
        "t",
        False,
    ),
    (
        "describe does not imply read",
        [acl(T, "t", Op.DESCRIBE)],
        "User:alice",
        None,
        Op.READ,
        T,
        "t",
        False,
    ),
    (
        "alter_configs implies describe_configs",
        [acl(T, "t", Op.ALTER_CONFIGS)],
        "User:alice",
        None,
        Op.DESCRIBE_CONFIGS,
        T,
        "t",
        True,
    ),
    (
        "deny beats allow",
        [acl(T, "t", Op.READ), acl(T, "t", Op.READ, DENY)],
        "User:alice",
        None,
        Op.READ,
        T,
        "t",
        False,
    ),
    (
        "wildcard deny beats literal allow",
        [acl(T, "t", Op.READ), acl(T, "*", Op.READ, DENY, principal="User:*")],
        "User:alice",
        None,
        Op.READ,
        T,
        "t",
        False,
    ),
    (
        "prefixed deny beats literal allow",
        [acl(T, "orders", Op.READ), acl(T, "ord", Op.READ, DENY, pattern=PRE)],
        "User:alice",
        None,
        Op.READ,
        T,
        "orders",
        False,
    ),
    (
        "deny all beats allow read",
        [acl(T, "t", Op.READ), acl(T, "t", Op.ALL, DENY)],
        "User:alice",
        None,
        Op.READ,
        T,
        "t",
        False,
    ),
    (
        "deny read does not deny describe via implication",
        [acl(T, "t", Op.DESCRIBE), acl(T, "t", Op.READ, DENY)],
        "User:alice",
        None,
        Op.DESCRIBE,
        T,
        "t",
        True,
    ),
    (
        "deny for another host does not apply",
        [acl(T, "t", Op.READ), acl(T, "t", Op.READ, DENY, host="9.9.9.9")],
        "User:alice",
        "1.1.1.1",
        Op.READ,
        T,
        "t",
        True,
    ),
    (
        "acls on resource, none for principal",
        [acl(T, "t", Op.READ, principal="User:bob")],
        "User:alice",
        None,
        Op.READ,
        T,
        "t",
        False,
    ),
    (
        "cluster create",
        [acl(C, CLUSTER_NAME, Op.CREATE)],
        "User:alice",
        None,
        Op.CREATE,
        C,
        CLUSTER_NAME,
        True,
    ),
    (
        "transactional id write",
        [acl(X, "tx-", Op.WRITE, pattern=PRE)],
        "User:alice",
        None,
        Op.WRITE,
        X,
        "tx-1",
        True,
    ),
]


@pytest.mark.parametrize(
    ("acls", "principal", "host", "op", "rtype", "name", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_authorize(
    acls: list[AclBinding],
    principal: str,
    host: str | None,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
    expected: bool,
) -> None:
    assert Authorizer(Fixed(acls)).authorize(principal, host, op, rtype, name) is expected


def test_super_user_bypasses_deny() -> None:
    authorizer = Authorizer(
        Fixed([acl(T, "*", Op.ALL, DENY, principal="User:*")]), super_users=["User:admin"]
    )
    assert authorizer.authorize("User:admin", None, Op.WRITE, T, "t")
    assert not authorizer.authorize("User:alice", None, Op.WRITE, T, "t")


def test_allow_everyone_if_no_acl_found_only_for_resources_without_acls() -> None:
    authorizer = Authorizer(
        Fixed([acl(T, "guarded", Op.READ, principal="User:bob")]),
        allow_everyone_if_no_acl_found=True,
    )
    assert authorizer.authorize("User:alice", None, Op.READ, T, "open")
    assert not authorizer.authorize("User:alice", None, Op.READ, T, "guarded")


def test_authorize_any_by_resource_type() -> None:
    allow = acl(T, "orders", Op.WRITE)
    assert Authorizer(Fixed([allow])).authorize_any("User:alice", None, Op.WRITE, T)
    assert not Authorizer(Fixed([allow])).authorize_any("User:bob", None, Op.WRITE, T)
    denied = [allow, acl(T, "ord", Op.WRITE, DENY, pattern=PRE)]
    assert not Authorizer(Fixed(denied)).authorize_any("User:alice", None, Op.WRITE, T)
    other = [allow, acl(T, "x", Op.WRITE, DENY)]
    assert Authorizer(Fixed(other)).authorize_any("User:alice", None, Op.WRITE, T)


def test_from_props() -> None:
    assert authorizer_from_props({}, Fixed([])) is None
    authorizer = authorizer_from_props(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin; User:ops",
            "allow.everyone.if.no.acl.found": "true",
        },
        Fixed([]),
    )
    assert authorizer is not None
    assert authorizer.super_users == {"User:admin", "User:ops"}
    assert authorizer.allow_everyone_if_no_acl_found


def flt(
    rtype: ResourceType = ResourceType.ANY,
    name: str | None = None,
    pattern: PatternType = PatternType.ANY,
    principal: str | None = None,
    op: AclOperation = Op.ANY,
    perm: AclPermissionType = AclPermissionType.ANY,
) -> AclBindingFilter:
    return AclBindingFilter(rtype, name, pattern, principal, None, op, perm)


LITERAL_T = acl(T, "orders", Op.READ)
PREFIXED_T = acl(T, "ord", Op.READ, pattern=PRE)
WILDCARD_T = acl(T, "*", Op.READ)
GROUP_G = acl(G, "orders", Op.READ, principal="User:bob")
ALL_ACLS = [LITERAL_T, PREFIXED_T, WILDCARD_T, GROUP_G]


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        (flt(), ALL_ACLS),
        (flt(rtype=G), [GROUP_G]),
        (flt(name="orders"), [LITERAL_T, GROUP_G]),
        (flt(name="orders", pattern=LIT), [LITERAL_T, GROUP_G]),
        (flt(pattern=PRE), [PREFIXED_T]),
        (
            flt(rtype=T, name="orders", pattern=PatternType.MATCH),
            [LITERAL_T, PREFIXED_T, WILDCARD_T],
        ),
        (flt(rtype=T, name="x", pattern=PatternType.MATCH), [WILDCARD_T]),
        (flt(principal="User:bob"), [GROUP_G]),
        (flt(op=Op.WRITE), []),
        (flt(perm=DENY), []),
    ],
    ids=[
        "all",
        "type",
        "name-any-pattern",
        "literal",
        "prefixed",
        "match",
        "match-wildcard",
        "principal",
        "operation",
        "permission",
    ],
)
def test_filters(filter_: AclBindingFilter, expected: list[AclBinding]) -> None:
    assert [a for a in ALL_ACLS if filter_.matches(a)] == expected


def test_validation() -> None:
    assert acl(T, "t", Op.READ).validation_error() is None
    assert acl(T, "t", Op.ANY).validation_error() == "Invalid operation"
    assert acl(C, "other", Op.ALTER).validation_error() is not None
    assert acl(T, "t", Op.READ, principal="alice").validation_error() is not None
    assert AclBinding(T, "t", PatternType.MATCH, "User:a", "*", Op.READ, ALLOW).validation_error()


def test_store_survives_reopen(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    store.apply([LITERAL_T, PREFIXED_T], [])
    store.apply([GROUP_G], [PREFIXED_T])
    assert AclStore(tmp_path).acls() == {LITERAL_T, GROUP_G}


def test_store_failed_write_keeps_set(tmp_path: Path) -> None:
    store = AclStore(tmp_path / "missing")
    with pytest.raises(OSError):
        store.apply([LITERAL_T], [])
    assert store.acls() == frozenset()
