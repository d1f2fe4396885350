"""The ValidatingAdmissionPolicy plugin (apiserver ``pkg/admission/plugin/policy/validating``,
1.32): policies and bindings written through the API, enforced in the validating pass.

For each policy (in name order) whose ``matchConstraints`` match the request, and each of its
bindings (in name order) whose ``matchResources`` match: the params are collected (none without a
``paramKind`` or ``paramRef``; by name or selector otherwise, in ``paramRef.namespace`` or the
request's namespace), then the policy is evaluated once per param (``policyeval``). Each failure is
acted on by the binding's ``validationActions``: ``Deny`` collects it, ``Warn`` adds upstream's
warning, ``Audit`` the ``validation.policy.admission.k8s.io/validation_failure`` audit annotation;
auditAnnotations are published as ``<policy>/<key>``. Configuration errors (params not found under
``Deny``, a policy that does not compile) follow the policy's ``failurePolicy``. The first denial is
answered: 403/401/413/422 by its reason, with upstream's message.

Policies and bindings are compiled once per write (``following``); a request when no binding
exists costs one attribute read. Admission configuration kinds themselves are never matched.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import orjson

from kplane.api import errors, labels
from kplane.api.catalog import ResourceRecord
from kplane.api.cel import admission as celadmission
from kplane.server.admission import celauthorizer, following, matching, plugin, policies, policyeval
from kplane.server.registry import admitting

NAME = "ValidatingAdmissionPolicy"
POLICY_PREFIX = "/registry/admissionregistration.k8s.io/validatingadmissionpolicies/"
BINDING_PREFIX = "/registry/admissionregistration.k8s.io/validatingadmissionpolicybindings/"
FAILURE_ANNOTATION = "validation.policy.admission.k8s.io/validation_failure"
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}
Object = dict[str, Any]
Hooks = tuple[tuple[policies.Policy, tuple[policies.Binding, ...]], ...]


class ConfigError(Exception):
    """A binding or policy that cannot be applied; handled by the policy's failurePolicy."""


@dataclass(frozen=True, slots=True)
class _Denial:
    policy: str
    binding: str | None
    message: str
    reason: str


class ValidatingAdmissionPolicy(plugin.Base):
    name = NAME

    def __init__(self, ctx: plugin.Context) -> None:
        self._ctx = ctx
        self._policies = following.Follower(ctx.storage, POLICY_PREFIX, policies.compile_policy)
        self._bindings = following.Follower(ctx.storage, BINDING_PREFIX, policies.compile_binding)
        self._equivalents = matching.Equivalents(ctx.catalog)
        self._hooks: Hooks = ()
        self._built = (-1, -1)

    async def _current(self) -> Hooks:
        by_policy = await self._policies.items()
        by_binding = await self._bindings.items()
        version = (self._policies.version, self._bindings.version)
        if version != self._built:
            grouped: dict[str, list[policies.Binding]] = {}
            for key in sorted(by_binding):
                binding = by_binding[key]
                grouped.setdefault(binding.policy, []).append(binding)
            self._hooks = tuple(
                (by_policy[key], tuple(grouped[by_policy[key].name]))
                for key in sorted(by_policy)
                if by_policy[key].name in grouped
            )
            self._built = version
        return self._hooks

    def validate(self, attrs: admitting.Attributes) -> Awaitable[None] | None:
        if self._bindings.loaded_empty or matching.exempt(attrs.record):
            return None
        return self._validate(attrs)

    async def _validate(self, attrs: admitting.Attributes) -> None:
        hooks = await self._current()
        if not hooks:
            return
        denials: list[_Denial] = []
        namespace: Object | None = None
        namespace_read = False
        for policy, bindings in hooks:
            if policy.match is None and not policy.error:
                continue
            if policy.match is not None:
                if not namespace_read:
                    namespace, namespace_read = await self._namespace(attrs), True
                matched = self._matches(policy.match, attrs, namespace)
                if matched is None:
                    continue
            else:
                matched = attrs.record
            if policy.error:
                if policy.fail:
                    denials.append(
                        _Denial(policy.name, None, f"failed to configure policy: {policy.error}", "")
                    )
                continue
            published: dict[str, list[str]] = {}
            for binding in bindings:
                if binding.match is not None and self._matches(binding.match, attrs, namespace) is None:
                    continue
                try:
                    if binding.error:
                        raise ConfigError(binding.error)
                    params = await self._params(policy, binding, attrs)
                except ConfigError as exc:
                    if policy.fail:
                        denials.append(
                            _Denial(policy.name, binding.name, f"failed to configure binding: {exc}", "")
                        )
                    continue
                for param in params:
                    result = self._evaluate(policy, attrs, matched, param, namespace)
                    denials += _act(attrs, policy, binding, result.failures)
                    for key, value in result.annotations:
                        values = published.setdefault(key, [])
                        if value not in values:
                            values.append(value)
            for key, values in published.items():
                attrs.audit_annotations.setdefault(f"{policy.name}/{key}", ", ".join(values))
        if denials:
            raise _error(attrs, denials[0])

    def _matches(
        self, match: policies.Match, attrs: admitting.Attributes, namespace: Object | None
    ) -> ResourceRecord | None:
        """The record a request matches through (its own, or an equivalent's under
        ``matchPolicy: Equivalent``), or None."""
        if matching.namespace_applies(attrs.record.plural, attrs.record.group, attrs.namespace):
            if attrs.record.group == "" and attrs.record.plural == "namespaces":
                ns_labels = _labels(attrs.obj if attrs.obj is not None else attrs.old)
            else:
                ns_labels = _labels(namespace)
            if not match.namespace_selector.matches(ns_labels or {}):
                return None
        if not matching.selects_object(match.object_selector, attrs.obj, attrs.old):
            return None
        name = attrs.name or _name(attrs.obj)
        candidates = (
            (attrs.record, *self._equivalents.of(attrs.record)) if match.equivalent else (attrs.record,)
        )
        requests = [
            (record, matching.Request(attrs.operation, record.group, record.version, record.plural,
                                      attrs.subresource, attrs.namespace))
            for record in candidates
        ]  # fmt: skip
        if any(r.matches(req, name) for _, req in requests for r in match.excludes):
            return None
        if not match.rules:  # a binding's matchResources without rules: every resource
            return attrs.record
        for record, req in requests:
            if any(r.matches(req, name) for r in match.rules):
                return record
        return None

    async def _namespace(self, attrs: admitting.Attributes) -> Object | None:
        if not attrs.namespace or (attrs.record.group == "" and attrs.record.plural == "namespaces"):
            return None
        return await self._ctx.get(self._ctx.record("", "v1", "namespaces"), "", attrs.namespace)

    async def _params(
        self, policy: policies.Policy, binding: policies.Binding, attrs: admitting.Attributes
    ) -> list[Object | None]:
        """``generic.CollectParams``: the params of one binding; raises ``ConfigError``."""
        ref = binding.param_ref
        if policy.param_kind is None or ref is None:
            return [None]
        group, version, kind = policy.param_kind
        record = self._ctx.catalog.by_kind(group, version, kind)
        if record is None:
            raise ConfigError(f"paramKind kind `{kind}` not known")
        namespace = ""
        if record.scope == "Namespaced":
            namespace = ref.namespace or attrs.namespace
            if not namespace:
                raise ConfigError(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                )
        elif ref.namespace:
            raise ConfigError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
        found: list[Object | None]
        if ref.name:
            obj = await self._ctx.get(record, namespace, ref.name)
            found = [obj] if obj is not None else []
        else:
            selector = ref.selector or labels.Selector.everything()
            found = [o for o in await self._ctx.list(record, namespace) if selector.matches(_labels(o) or {})]
        if not found and ref.deny_if_missing:
            raise ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return found

    def _evaluate(
        self,
        policy: policies.Policy,
        attrs: admitting.Attributes,
        matched: ResourceRecord,
        param: Object | None,
        namespace: Object | None,
    ) -> policyeval.Result:
        scope = celadmission.policy_scope(
            params=policy.param_kind is not None, variables=bool(policy.variables)
        )
        req = celadmission.Request(
            request=_request(attrs, matched),
            object=attrs.obj if attrs.operation != "DELETE" else None,
            old_object=attrs.old,
            params=param,
            namespace_object=_namespace_object(namespace),
        )
        with celadmission.activation(
            scope, req, celauthorizer.for_request(self._ctx.authorizer, attrs)
        ) as data:
            return policyeval.evaluate(policy, data)


def _act(
    attrs: admitting.Attributes,
    policy: policies.Policy,
    binding: policies.Binding,
    failures: list[policyeval.Failure],
) -> list[_Denial]:
    """The binding's ``validationActions`` on the failures of one evaluation; returns the denials."""
    denials = []
    for failure in failures:
        if failure.error:
            denials.append(_Denial(policy.name, binding.name, failure.message, ""))
            continue
        if "Deny" in binding.actions:
            denials.append(_Denial(policy.name, binding.name, failure.message, failure.reason))
        if "Warn" in binding.actions:
            attrs.warnings.append(
                f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' "
                f"with binding '{binding.name}': {failure.message}"
            )
        if "Audit" in binding.actions:
            # upstream's AddAnnotation keeps the first value of a key
            attrs.audit_annotations.setdefault(FAILURE_ANNOTATION, _failure_json(policy, binding, failure))
    return denials


def _labels(obj: Object | None) -> dict[str, str] | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    found = meta.get("labels") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else None


def _name(obj: Object | None) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def _request(attrs: admitting.Attributes, matched: ResourceRecord) -> Object:
    """The AdmissionRequest as CEL's ``request`` sees it (``cel.CreateAdmissionRequest``)."""
    record = attrs.record
    user: Object = {}
    if attrs.user is not None:
        user["username"] = attrs.user.username
        if attrs.user.uid:
            user["uid"] = attrs.user.uid
        if attrs.user.groups:
            user["groups"] = list(attrs.user.groups)
        if attrs.user.extra:
            user["extra"] = {k: list(v) for k, v in attrs.user.extra.items()}
    out: Object = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": matched.group, "version": matched.version, "kind": matched.kind},
        "resource": {"group": matched.group, "version": matched.version, "resource": matched.plural},
        "requestKind": {"group": record.group, "version": record.version, "kind": record.kind},
        "requestResource": {"group": record.group, "version": record.version, "resource": record.plural},
        "operation": attrs.operation,
        "userInfo": user,
        "dryRun": attrs.dry_run,
    }
    if attrs.subresource:
        out["subResource"] = out["requestSubResource"] = attrs.subresource
    name = attrs.name or _name(attrs.obj)
    if name:
        out["name"] = name
    if attrs.namespace:
        out["namespace"] = attrs.namespace
    if attrs.options is not None:
        out["options"] = attrs.options
    return out


def _namespace_object(ns: Object | None) -> Object | None:
    """``cel.CreateNamespaceObject``: the namespace's metadata (no managedFields), spec, status."""
    if ns is None:
        return None
    meta = {k: v for k, v in (ns.get("metadata") or {}).items() if k != "managedFields"}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta,
        "spec": ns.get("spec") or {},
        "status": ns.get("status") or {},
    }


def _failure_json(policy: policies.Policy, binding: policies.Binding, failure: policyeval.Failure) -> str:
    value = [
        {
            "message": failure.message,
            "policy": policy.name,
            "binding": binding.name,
            "expressionIndex": failure.index,
            "validationActions": list(binding.action_list),
        }
    ]
    return orjson.dumps(value).decode()


def _error(attrs: admitting.Attributes, denial: _Denial) -> errors.APIError:
    if denial.binding is not None:
        message = (
            f"ValidatingAdmissionPolicy '{denial.policy}' with binding '{denial.binding}' denied request: "
            f"{denial.message}"
        )
    else:
        message = f"ValidatingAdmissionPolicy '{denial.policy}' denied request: {denial.message}"
    err = plugin.forbidden(attrs, message)
    reason = denial.reason or "Invalid"
    err.reason = reason
    err.code = _CODES.get(reason, 422)
    err.details["causes"] = [{"message": message}]
    return err
