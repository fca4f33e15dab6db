"""DeleteAcls (key 31): remove the ACL bindings matching each filter
(:class:`~riverbed.broker.security.authorizer.AclBindingFilter`, MATCH included) and
list what each filter removed.

Kafka's rules: SECURITY_DISABLED for every filter when no authorizer is configured,
CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster, INVALID_REQUEST for a filter
with an UNKNOWN field (alone).  All removals are written in one batch before the
response; a failed write (OSError) fails every filter and changes nothing.
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
from riverbed.errors import error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DeleteAclsRequest, DeleteAclsResponse

API_KEY = 31
_FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
_Matching = DeleteAclsResponse.DeleteAclsMatchingAcl


def handle(
    deps: AclAdminDeps, ctx: RequestContext, request: DeleteAclsRequest
) -> DeleteAclsResponse:
    authorizer = deps.authorizer
    if authorizer is None:
        return _all_failed(request, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    if not allowed_cluster(authorizer, ctx, AclOperation.ALTER):
        return _all_failed(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    current = sorted(deps.acl_store.acls())
    results: list[_FilterResult] = []
    removed: set[AclBinding] = set()
    for wire in request.filters:
        filter_ = binding_filter(
            wire.resource_type_filter,
            wire.resource_name_filter,
            wire.pattern_type_filter,
            wire.principal_filter,
            wire.host_filter,
            wire.operation,
            wire.permission_type,
        )
        error = filter_.validation_error()
        if error is not None:
            results.append(
                _FilterResult(
                    error_code=ErrorCode.INVALID_REQUEST, error_message=error, matching_acls=[]
                )
            )
            continue
        matched = [a for a in current if filter_.matches(a)]
        removed.update(matched)
        results.append(
            _FilterResult(
                error_code=ErrorCode.NONE,
                error_message=None,
                matching_acls=[_matching(a) for a in matched],
            )
        )
    try:
        deps.acl_store.apply((), removed)
    except OSError as exc:  # the write failed: nothing changed
        return _all_failed(request, error_code_for(exc), str(exc))
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=results)


def _matching(acl: AclBinding) -> _Matching:
    return _Matching(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=int(acl.resource_type),
        resource_name=acl.resource_name,
        pattern_type=int(acl.pattern_type),
        principal=acl.principal,
        host=acl.host,
        operation=int(acl.operation),
        permission_type=int(acl.permission_type),
    )


def _all_failed(request: DeleteAclsRequest, code: int, message: str | None) -> DeleteAclsResponse:
    return DeleteAclsResponse(
        throttle_time_ms=0,
        filter_results=[
            _FilterResult(error_code=code, error_message=message, matching_acls=[])
            for _ in request.filters
        ],
    )
