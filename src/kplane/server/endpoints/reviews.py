"""The review APIs: create-only virtual resources answered by the server's authorizer
(upstream's ``pkg/registry/authorization/*`` and ``pkg/registry/authentication/selfsubjectreview``).

Nothing is stored. The response is the request object with ``status`` filled in, 201 Created, in
the negotiated media type (kubectl sends and accepts protobuf). ``SelfSubjectAccessReview`` and
``SelfSubjectRulesReview`` ask about the requesting user; ``SubjectAccessReview`` and
``LocalSubjectAccessReview`` about the user in the spec; ``SelfSubjectReview`` returns who the
requester is (after impersonation).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.server.auth import authn, authz
from kplane.server.endpoints import negotiation, patching
from kplane.server.endpoints.scope import Scope

if TYPE_CHECKING:
    from kplane.api.schema import godecode
else:
    godecode = lazy_module("kplane.api.schema.godecode")  # loaded with the first review

Object = dict[str, Any]
_AUTHORIZATION = "authorization.k8s.io"
_AUTHENTICATION = "authentication.k8s.io"


async def create(
    scope: Scope, *, authorizer: authz.Authorizer, rules_for: authz.RulesFor
) -> web.StreamResponse:
    """Answer a review with ``authorizer``'s decision or, for ``SelfSubjectRulesReview``, the
    rules ``rules_for`` resolves (both the server's, given when the handler table is built)."""
    kind = scope.record.kind
    content_type = scope.request.headers.get("Content-Type")
    body = negotiation.decode_object(await scope.body(), content_type, kind=kind)
    node = patching.schema_node(scope.record)
    found = godecode.decode_error(node, kind, body) if node is not None else None
    if found is not None:  # upstream decodes into the Go type first (handlers/rest.go)
        raise errors.BadRequest(
            f'{kind} in version "{scope.record.version}" cannot be handled as a {kind}: {found}'
        )
    user: authn.UserInfo = scope.request[authn.USER_KEY]
    obj: Object = {
        "kind": kind,
        "apiVersion": f"{scope.record.group}/{scope.record.version}",
        "metadata": body.get("metadata") if isinstance(body.get("metadata"), dict) else {},
        "spec": body.get("spec") if isinstance(body.get("spec"), dict) else {},
    }
    if kind == "SelfSubjectReview":
        obj.pop("spec")
        obj["status"] = {"userInfo": authn.user_info(user)}
    elif kind == "SelfSubjectRulesReview":
        obj["status"] = _rules_review(rules_for, user, obj["spec"])
    else:
        obj["status"] = _access_review(scope, authorizer, kind, user, obj)
    return scope.respond_plain(obj, 201)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _spec_user(spec: Mapping[str, Any]) -> authn.UserInfo:
    raw_extra = spec.get("extra")
    extra = {
        k: _strings(v)
        for k, v in (raw_extra.items() if isinstance(raw_extra, dict) else ())
        if isinstance(k, str)
    }
    return authn.UserInfo(
        name=str(spec.get("user") or ""),
        uid=str(spec.get("uid") or ""),
        groups=_strings(spec.get("groups")),
        extra=types.MappingProxyType(extra),
    )


def _access_review(
    scope: Scope, authorizer: authz.Authorizer, kind: str, user: authn.UserInfo, obj: Object
) -> Object:
    spec = obj["spec"]
    res, nonres = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    errs: list[errors.FieldError] = []
    if res is not None and nonres is not None:
        errs.append(
            errors.invalid(
                "spec.nonResourceAttributes",
                nonres,
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if res is None and nonres is None:
        errs.append(
            errors.invalid(
                "spec.resourceAttributes",
                "null",  # field.Error prints a nil pointer as the string "null"
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    if kind in ("SubjectAccessReview", "LocalSubjectAccessReview"):
        if not spec.get("user") and not _strings(spec.get("groups")):
            errs.append(
                errors.invalid(
                    "spec.user", spec.get("user") or "", "at least one of user or group must be specified"
                )
            )
        user = _spec_user(spec)
    if kind == "LocalSubjectAccessReview" and nonres is not None:
        errs.append(
            errors.invalid("spec.nonResourceAttributes", nonres, "disallowed on this kind of request")
        )
    if errs:
        raise errors.invalid_object(kind, _AUTHORIZATION, "", errs)
    if kind == "LocalSubjectAccessReview":
        namespace = scope.info.namespace
        if isinstance(res, dict) and res.get("namespace") not in (None, "", namespace):
            raise errors.BadRequest(f"spec.resourceAttributes.namespace must match namespace: {namespace}")
        if isinstance(res, dict):
            res["namespace"] = namespace
        obj["metadata"]["namespace"] = namespace
    if isinstance(res, dict):
        attributes = authz.Attributes(
            user,
            str(res.get("verb") or ""),
            group=str(res.get("group") or ""),
            version=str(res.get("version") or ""),
            resource=str(res.get("resource") or ""),
            subresource=str(res.get("subresource") or ""),
            namespace=str(res.get("namespace") or ""),
            name=str(res.get("name") or ""),
        )
    else:
        na = nonres if isinstance(nonres, dict) else {}
        attributes = authz.Attributes(
            user, str(na.get("verb") or ""), resource_request=False, path=str(na.get("path") or "")
        )
    decision = authorizer(attributes)
    status: Object = {"allowed": decision.allowed}
    if decision.verdict is authz.Verdict.DENY:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    return status


def _rules_review(rules_for: authz.RulesFor, user: authn.UserInfo, spec: Object) -> Object:
    namespace = spec.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        raise errors.BadRequest("no namespace on request")
    resource_rules: list[Object] = []
    non_resource_rules: list[Object] = []
    # As upstream, the system:masters authorizer resolves no rules: masters see what their
    # bindings (cluster-admin's) grant.
    rules, evaluation_errors = rules_for(user, namespace)
    for rule in rules:
        verbs = list(_strings(rule.get("verbs")))
        if rule.get("resources"):
            out: Object = {"verbs": verbs}
            for key in ("apiGroups", "resources", "resourceNames"):
                if rule.get(key):
                    out[key] = list(_strings(rule.get(key)))
            resource_rules.append(out)
        if rule.get("nonResourceURLs"):
            non_resource_rules.append(
                {"verbs": verbs, "nonResourceURLs": list(_strings(rule["nonResourceURLs"]))}
            )
    status: Object = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": bool(evaluation_errors),
    }
    if evaluation_errors:
        status["evaluationError"] = "[" + ", ".join(evaluation_errors) + "]"
    return status
