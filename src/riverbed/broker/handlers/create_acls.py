"""CreateAcls (key 30): add ACL bindings (:mod:`riverbed.broker.security.authorizer`).

Kafka's rules: SECURITY_DISABLED for every creation when no authorizer is configured;
CLUSTER_AUTHORIZATION_FAILED for every creation without ALTER on the cluster; a binding
that is not concrete (UNKNOWN/ANY type or operation, a pattern other than LITERAL or
PREFIXED, a principal without ``type:``) is refused alone with INVALID_REQUEST.  The
valid ones are written in one batch (``acls.json``) before the response; a creation that
already exists succeeds.  A failed write (OSError) fails every valid creation and changes nothing.
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.security.authorizer import (
    AclAdminDeps,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    allowed_cluster,
    wire_enum,
)
from riverbed.errors import error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import CreateAclsRequest, CreateAclsResponse

API_KEY = 30
_Result = CreateAclsResponse.AclCreationResult


def handle(
    deps: AclAdminDeps, ctx: RequestContext, request: CreateAclsRequest
) -> CreateAclsResponse:
    authorizer = deps.authorizer
    if authorizer is None:
        code, message = ErrorCode.SECURITY_DISABLED, "No Authorizer is configured."
    elif not allowed_cluster(authorizer, ctx, AclOperation.ALTER):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    else:
        return _create(deps, request)
    return CreateAclsResponse(
        throttle_time_ms=0,
        results=[_Result(error_code=code, error_message=message) for _ in request.creations],
    )


def _create(deps: AclAdminDeps, request: CreateAclsRequest) -> CreateAclsResponse:
    results: list[_Result | None] = []
    valid: list[AclBinding] = []
    for creation in request.creations:
        binding = AclBinding(
            wire_enum(ResourceType, creation.resource_type),
            creation.resource_name,
            wire_enum(PatternType, creation.resource_pattern_type),
            creation.principal,
            creation.host,
            wire_enum(AclOperation, creation.operation),
            wire_enum(AclPermissionType, creation.permission_type),
        )
        error = binding.validation_error()
        if error is not None:
            results.append(_Result(error_code=ErrorCode.INVALID_REQUEST, error_message=error))
        else:
            valid.append(binding)
            results.append(None)
    ok = _Result(error_code=ErrorCode.NONE, error_message=None)
    try:
        deps.acl_store.apply(valid, ())
    except OSError as exc:  # the write failed: nothing changed
        ok = _Result(error_code=error_code_for(exc), error_message=str(exc))
    return CreateAclsResponse(throttle_time_ms=0, results=[r or ok for r in results])
