"""DescribeAcls (key 29): the ACL bindings matching one filter, grouped by resource
pattern (:class:`~riverbed.broker.security.authorizer.AclBindingFilter`, MATCH included).

Kafka's rules: SECURITY_DISABLED when no authorizer is configured,
CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster, INVALID_REQUEST for a
filter with an UNKNOWN field.
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.security.authorizer import (
    AclAdminDeps,
    AclBinding,
    AclOperation,
    allowed_cluster,
    binding_filter,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DescribeAclsRequest, DescribeAclsResponse

API_KEY = 29
_Resource = DescribeAclsResponse.DescribeAclsResource
_Description = DescribeAclsResponse.AclDescription


def handle(
    deps: AclAdminDeps, ctx: RequestContext, request: DescribeAclsRequest
) -> DescribeAclsResponse:
    authorizer = deps.authorizer
    if authorizer is None:
        return _error(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    if not allowed_cluster(authorizer, ctx, AclOperation.DESCRIBE):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    filter_ = binding_filter(
        request.resource_type_filter,
        request.resource_name_filter,
        request.pattern_type_filter,
        request.principal_filter,
        request.host_filter,
        request.operation,
        request.permission_type,
    )
    error = filter_.validation_error()
    if error is not None:
        return _error(ErrorCode.INVALID_REQUEST, error)
    grouped: dict[tuple[int, str, int], list[AclBinding]] = {}
    for acl in sorted(a for a in deps.acl_store.acls() if filter_.matches(a)):
        key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
        grouped.setdefault(key, []).append(acl)
    resources = [
        _Resource(
            resource_type=rtype,
            resource_name=name,
            pattern_type=pattern,
            acls=[
                _Description(
                    principal=a.principal,
                    host=a.host,
                    operation=int(a.operation),
                    permission_type=int(a.permission_type),
                )
                for a in acls
            ],
        )
        for (rtype, name, pattern), acls in grouped.items()
    ]
    return DescribeAclsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, resources=resources
    )


def _error(code: ErrorCode, message: str | None) -> DescribeAclsResponse:
    return DescribeAclsResponse(
        throttle_time_ms=0, error_code=code, error_message=message, resources=[]
    )
