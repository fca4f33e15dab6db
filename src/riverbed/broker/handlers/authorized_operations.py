"""The authorized-operations bitfields of Metadata, DescribeCluster, DescribeGroups and
ConsumerGroupDescribe (KIP-430), as Kafka's ``AuthHelper.authorizedOperations`` computes
them.

Wire format: an int32 with bit ``1 << op`` set for every :class:`AclOperation` ``op``
allowed (READ = 3 -> bit 3, ...); :data:`OMITTED` (-2^31) when the client did not ask
(``include_*_authorized_operations`` false) or the resource is not described (an error).
Only the operations Kafka supports for the resource type (``AclEntry.supportedOperations``)
are considered: without an authorizer every one of them is set (:func:`all_operations`);
with one, those the principal is allowed (:func:`authorized_operations`), each asked as a
concrete operation on the resource's LITERAL name, so ALLOW READ also sets DESCRIBE as
Kafka's implication rules say.  Pure functions; any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from riverbed.broker.security.authorizer import AclOperation, ResourceType

OMITTED = -2147483648
"""``Integer.MIN_VALUE``: the field's default, "not computed"."""

Op = AclOperation

SUPPORTED_OPERATIONS: Mapping[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        Op.READ,
        Op.WRITE,
        Op.CREATE,
        Op.DESCRIBE,
        Op.DELETE,
        Op.ALTER,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (
        Op.CREATE,
        Op.CLUSTER_ACTION,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE,
        Op.ALTER,
        Op.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE, Op.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}
"""Kafka's ``AclEntry.supportedOperations`` per resource type (Kafka 4.x)."""


def bitfield(operations: Iterable[AclOperation]) -> int:
    """``Utils.to32BitField``: bit ``1 << op`` for each operation."""
    bits = 0
    for op in operations:
        bits |= 1 << int(op)
    return bits


def all_operations(resource_type: ResourceType) -> int:
    """Every supported operation: the answer of a broker without an authorizer."""
    return bitfield(SUPPORTED_OPERATIONS[resource_type])


def authorized_operations(
    resource_type: ResourceType, allowed: Callable[[AclOperation], bool]
) -> int:
    """The supported operations on one resource that ``allowed(op)`` grants."""
    return bitfield(op for op in SUPPORTED_OPERATIONS[resource_type] if allowed(op))


def operations(bits: int) -> frozenset[AclOperation]:
    """The operations a bitfield names (tests, logs); :data:`OMITTED` names none."""
    if bits == OMITTED:
        return frozenset()
    return frozenset(op for op in AclOperation if bits & (1 << int(op)))
