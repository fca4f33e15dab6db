"""ACL authorization with the semantics of Kafka's ``StandardAuthorizer`` (KIP-801).

An :class:`AclBinding` is ``(resource pattern, principal, host, operation, permission)``
with Kafka's wire enums (:class:`ResourceType`, :class:`PatternType`,
:class:`AclOperation`, :class:`AclPermissionType`).  :meth:`Authorizer.authorize`
answers one question — may ``principal`` from ``host`` do ``operation`` on the resource
``(type, name)`` — by Kafka's rules, in this order:

1. a principal listed in ``super.users`` (``;``-separated, e.g. ``User:admin;User:ops``)
   is allowed everything;
2. the ACLs *on the resource* are those whose pattern matches it: LITERAL with the same
   name, LITERAL ``*`` (every resource of the type), PREFIXED whose name is a prefix of
   the resource's;
3. of those, the ones that *apply* name the principal or ``User:*`` and the host or
   ``*``;
4. a DENY that applies with the operation or ALL denies (DENY beats ALLOW);
5. an ALLOW that applies with the operation, ALL, or an operation that implies it
   allows: READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
   DESCRIBE_CONFIGS;
6. otherwise denied — unless the resource has no ACLs at all and
   ``allow.everyone.if.no.acl.found`` is true (Kafka's default: false).

Settings (Kafka's names): authorization is on only when ``authorizer.class.name`` is
set (any non-empty value; Kafka's ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``
is the documented one).  :func:`authorizer_from_props` returns None otherwise, and a
broker without an authorizer allows everything, as before.

The ACLs themselves live in :class:`~riverbed.broker.security.acl_store.AclStore`; the
authorizer reads its current set on each call (a frozenset swapped whole on change), so
a change is visible to the next request.  Pure and loop-only: no I/O, not thread-safe
beyond reading an immutable snapshot.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from riverbed.errors import RiverbedError
from riverbed.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from riverbed.broker.context import RequestContext
    from riverbed.broker.security.acl_store import AclStore

AUTHORIZER_KEYS: frozenset[str] = frozenset(
    {"authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found"}
)
"""Broker settings this module parses (accepted by :mod:`riverbed.broker.config`)."""

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER_NAME = "kafka-cluster"
"""The one CLUSTER resource's name, as in Kafka."""
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class AuthorizationError(RiverbedError):
    """An operation the request's principal is not allowed (never retriable)."""


class TopicAuthorizationError(AuthorizationError):
    error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class GroupAuthorizationError(AuthorizationError):
    error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED


class ClusterAuthorizationError(AuthorizationError):
    error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class TransactionalIdAuthorizationError(AuthorizationError):
    error_code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_IMPLIED_BY: Mapping[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL, as CreateAcls carries it (concrete: no ANY/MATCH/UNKNOWN values)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def validation_error(self) -> str | None:
        """Why CreateAcls must refuse this binding (Kafka's messages), or None."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            return "Invalid resource type"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return "Invalid pattern type"
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            return "Invalid operation"
        if self.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return "Invalid permission type"
        if not self.resource_name:
            return "Resource name should not be empty"
        if ":" not in self.principal:
            return f"Could not parse principal from `{self.principal}` (no colon is present)"
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return "The only valid name for the CLUSTER resource is kafka-cluster"
        return None

    def pattern_matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this ACL's resource pattern covers the concrete resource."""
        if self.resource_type is not resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name == name or self.resource_name == WILDCARD


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """DescribeAcls' and DeleteAcls' filter: ANY (or None for strings) matches all;
    pattern type MATCH matches the LITERAL/PREFIXED/wildcard ACLs that would apply to
    the named resource; ANY with a name matches that exact name of any pattern type."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def validation_error(self) -> str | None:
        if self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN:
            return "Invalid resource filter"
        if self.operation is AclOperation.UNKNOWN:
            return "Invalid operation"
        if self.permission_type is AclPermissionType.UNKNOWN:
            return "Invalid permission type"
        return None

    def matches(self, acl: AclBinding) -> bool:
        rtype = self.resource_type
        if rtype is not ResourceType.ANY and rtype is not acl.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation is not acl.operation:
            return False
        return (
            self.permission_type is AclPermissionType.ANY
            or self.permission_type is acl.permission_type
        )

    def _pattern_matches(self, acl: AclBinding) -> bool:
        pattern, name = self.pattern_type, self.resource_name
        if pattern is PatternType.MATCH:
            if name is None:
                return True
            if acl.pattern_type is PatternType.PREFIXED:
                return name.startswith(acl.resource_name)
            return acl.resource_name in (name, WILDCARD)
        if pattern is not PatternType.ANY and pattern is not acl.pattern_type:
            return False
        return name is None or name == acl.resource_name


class AclSource(Protocol):
    """Where the authorizer reads the current ACLs (the store)."""

    def acls(self) -> frozenset[AclBinding]: ...


class Authorizer:
    """Kafka's StandardAuthorizer decision over an :class:`AclSource` (see module doc)."""

    def __init__(
        self,
        source: AclSource,
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self._source = source
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found

    def authorize(
        self,
        principal: str,
        host: str | None,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """May ``principal`` from ``host`` (an IP, None when unknown) do ``operation``
        on the resource?  ``operation`` is concrete (not ANY/ALL)."""
        if principal in self.super_users:
            return True
        on_resource = [a for a in self._source.acls() if a.pattern_matches(resource_type, name)]
        if not on_resource:
            return self.allow_everyone_if_no_acl_found
        applying = [a for a in on_resource if _applies(a, principal, host)]
        if any(
            a.permission_type is AclPermissionType.DENY
            and a.operation in (operation, AclOperation.ALL)
            for a in applying
        ):
            return False
        allowed_by = _IMPLIED_BY.get(operation, frozenset({operation}))
        return any(
            a.permission_type is AclPermissionType.ALLOW
            and (a.operation is AclOperation.ALL or a.operation in allowed_by)
            for a in applying
        )

    def authorize_any(
        self,
        principal: str,
        host: str | None,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Kafka's ``authorizeByResourceType``: is ``operation`` allowed on at least one
        resource of the type (e.g. WRITE on some topic, for an idempotent producer)?  An
        ALLOW counts unless a DENY with a pattern covering it (LITERAL ``*``, the same
        literal, a PREFIXED prefix of its name) applies too."""
        if principal in self.super_users:
            return True
        applying = [
            a
            for a in self._source.acls()
            if a.resource_type is resource_type and _applies(a, principal, host)
        ]
        denies = [
            a
            for a in applying
            if a.permission_type is AclPermissionType.DENY
            and a.operation in (operation, AclOperation.ALL)
        ]
        allowed_by = _IMPLIED_BY.get(operation, frozenset({operation}))
        for allow in applying:
            if allow.permission_type is not AclPermissionType.ALLOW:
                continue
            if allow.operation is not AclOperation.ALL and allow.operation not in allowed_by:
                continue
            if not any(_deny_covers(d, allow) for d in denies):
                return True
        if self.allow_everyone_if_no_acl_found:
            return not any(a.resource_type is resource_type for a in self._source.acls())
        return False


def _applies(acl: AclBinding, principal: str, host: str | None) -> bool:
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return False
    return acl.host == WILDCARD or (host is not None and acl.host == host)


def _deny_covers(deny: AclBinding, allow: AclBinding) -> bool:
    if deny.pattern_type is PatternType.LITERAL:
        if deny.resource_name == WILDCARD:
            return True
        literal = allow.pattern_type is PatternType.LITERAL
        return literal and allow.resource_name == deny.resource_name
    return allow.resource_name.startswith(deny.resource_name)


def authorizer_from_props(props: Mapping[str, str], source: AclSource) -> Authorizer | None:
    """The configured authorizer, or None when ``authorizer.class.name`` is unset/empty."""
    if not props.get("authorizer.class.name", "").strip():
        return None
    supers = [p.strip() for p in props.get("super.users", "").split(";") if p.strip()]
    allow = props.get("allow.everyone.if.no.acl.found", "false").strip().lower() == "true"
    return Authorizer(source, super_users=supers, allow_everyone_if_no_acl_found=allow)


class AuthorizerDeps(Protocol):
    """A handler's view of authorization: None when no authorizer is configured."""

    @property
    def authorizer(self) -> Authorizer | None: ...


def allowed(
    authorizer: Authorizer | None,
    ctx: RequestContext,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str,
) -> bool:
    """The handlers' check: True without an authorizer (one attribute test on the hot
    path), else :meth:`Authorizer.authorize` for the request's principal and host."""
    return authorizer is None or authorizer.authorize(
        ctx.principal, ctx.client_address, operation, resource_type, name
    )


def allowed_cluster(
    authorizer: Authorizer | None, ctx: RequestContext, operation: AclOperation
) -> bool:
    """:func:`allowed` on the CLUSTER resource."""
    return allowed(authorizer, ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


E = TypeVar("E", ResourceType, PatternType, AclOperation, AclPermissionType)


def wire_enum(cls: type[E], value: int) -> E:
    """``cls(value)``, or its UNKNOWN member for a value Kafka does not define."""
    try:
        return cls(value)
    except ValueError:
        return cls(0)


def binding_filter(
    resource_type: int,
    resource_name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission_type: int,
) -> AclBindingFilter:
    """A DescribeAcls/DeleteAcls filter from its wire fields."""
    return AclBindingFilter(
        wire_enum(ResourceType, resource_type),
        resource_name,
        wire_enum(PatternType, pattern_type),
        principal,
        host,
        wire_enum(AclOperation, operation),
        wire_enum(AclPermissionType, permission_type),
    )


class AclAdminDeps(AuthorizerDeps, Protocol):
    """CreateAcls, DescribeAcls, DeleteAcls: the authorizer and the ACL store."""

    @property
    def acl_store(self) -> AclStore: ...
