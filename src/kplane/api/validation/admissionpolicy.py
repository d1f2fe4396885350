"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (``admissionregistration.k8s.io``,
kubernetes ``pkg/apis/admissionregistration/validation/validation.go``, 1.32).

Every expression is compiled as the server will run it (``api/cel/admission``), so a policy that
does not compile is refused with cel-go's issue text. On update, an expression whose exact text the
stored policy already had compiles against the full (stored) library set, others against the
previous minor's, as upstream; matchConditions are not re-checked when they and ``paramKind`` are
unchanged. Status writes check only ``status`` (``typeChecking`` field refs and warnings).
"""

from __future__ import annotations

import re
from typing import Any

from kplane.api import errors, names
from kplane.api.cel import admission as cel_admission
from kplane.api.cel import schematypes
from kplane.api.validation import admissionregistration
from kplane.api.validation import admissionrules as rules
from kplane.api.validation.field import Errs, Object, d, dl, s

REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge"]
ACTIONS = ["Audit", "Deny", "Warn"]
_MAX_AUDIT_ANNOTATIONS = 20
_MAX_VALUE_EXPRESSION = 5 * 1024
_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")


def _preexisting(old: Object | None) -> dict[str, frozenset[str]]:
    spec = d(d(old).get("spec"))
    return {
        "match": frozenset(s(c, "expression") for c in dl(spec.get("matchConditions"))),
        "validation": frozenset(s(v, "expression") for v in dl(spec.get("validations"))),
        "message": frozenset(s(v, "messageExpression") for v in dl(spec.get("validations"))),
        "audit": frozenset(s(a, "valueExpression") for a in dl(spec.get("auditAnnotations"))),
        "variable": frozenset(s(v, "expression") for v in dl(spec.get("variables"))),
    }


def _param_kind(kind: Object, path: str) -> Errs:
    errs: Errs = []
    api_version = s(kind, "apiVersion")
    if not api_version:
        errs.append(errors.required(f"{path}.apiVersion"))
    elif api_version.count("/") > 1:
        errs.append(
            errors.invalid(
                f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"
            )
        )
    else:
        group, _, version = api_version.rpartition("/")
        if group and names.dns1123_subdomain_errors(group):
            errs.append(
                errors.invalid(f"{path}.apiVersion", group, ",".join(names.dns1123_subdomain_errors(group)))
            )
        if not version:
            errs.append(errors.invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        elif names.dns1035_label_errors(version):
            errs.append(
                errors.invalid(f"{path}.apiVersion", version, ",".join(names.dns1035_label_errors(version)))
            )
    kind_name = s(kind, "kind")
    if not kind_name:
        errs.append(errors.required(f"{path}.kind"))
    elif names.dns1035_label_errors(kind_name.lower()):
        errs.append(
            errors.invalid(
                f"{path}.kind",
                kind_name,
                "may have mixed case, but should otherwise match: "
                + ",".join(names.dns1035_label_errors(kind_name.lower())),
            )
        )
    return errs


def named_rule(rule: Object, path: str) -> Errs:
    """``validateNamedRuleWithOperations``: resourceNames, then the rule."""
    errs: Errs = []
    seen: set[str] = set()
    for i, name in enumerate(rules.strings(rule.get("resourceNames"))):
        for msg in rules.path_segment_errors(name):
            errs.append(errors.invalid(f"{path}.resourceNames[{i}]", name, msg))
        if name in seen:
            errs.append(errors.FieldError("FieldValueDuplicate", f"{path}.resourceNames[{i}]", "", name))
        seen.add(name)
    return errs + admissionregistration.rule_with_operations(rule, path)


def match_resources(mc: Object, path: str) -> Errs:
    """``validateMatchResources`` (after defaulting: matchPolicy and both selectors are set)."""
    errs: Errs = []
    policy = mc.get("matchPolicy")
    if policy is None:
        errs.append(errors.required(f"{path}.matchPolicy"))
    elif policy not in rules.MATCH_POLICIES:
        errs.append(errors.not_supported(f"{path}.matchPolicy", policy, rules.MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        if mc.get(key) is None:
            errs.append(errors.required(f"{path}.{key}"))
        else:
            errs += admissionregistration.label_selector(mc[key], f"{path}.{key}")
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(dl(mc.get(key))):
            errs += named_rule(rule, f"{path}.{key}[{i}]")
    return errs


def policy(obj: Object, old: Object | None) -> Errs:
    """``ValidateValidatingAdmissionPolicy`` / ``...Update`` (the spec; metadata is the registry's)."""
    spec = d(obj.get("spec"))
    old_spec = d(d(old).get("spec")) if old is not None else None
    pre = _preexisting(old)
    path = "spec"
    errs: Errs = []
    has_params = spec.get("paramKind") is not None
    has_variables = bool(dl(spec.get("variables")))
    scope = cel_admission.policy_scope(params=has_params, variables=has_variables)
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(errors.required(f"{path}.failurePolicy"))
    elif failure not in rules.FAILURE_POLICIES:
        errs.append(errors.not_supported(f"{path}.failurePolicy", failure, rules.FAILURE_POLICIES))
    if has_params:
        errs += _param_kind(d(spec.get("paramKind")), f"{path}.paramKind")
    mc = spec.get("matchConstraints")
    if mc is None:
        errs.append(errors.required(f"{path}.matchConstraints"))
    else:
        errs += match_resources(d(mc), f"{path}.matchConstraints")
        if not dl(d(mc).get("resourceRules")):
            errs.append(errors.required(f"{path}.matchConstraints.resourceRules"))
    unchanged = old_spec is not None and (
        old_spec.get("paramKind") == spec.get("paramKind")
        and old_spec.get("matchConditions") == spec.get("matchConditions")
    )
    if not unchanged:
        errs += rules.match_conditions(
            spec.get("matchConditions"), f"{path}.matchConditions", scope, pre["match"]
        )
    for i, variable in enumerate(dl(spec.get("variables"))):
        errs += _variable(variable, f"{path}.variables[{i}]", scope, pre["variable"])
    validations = dl(spec.get("validations"))
    annotations = dl(spec.get("auditAnnotations"))
    if not validations and not annotations:
        msg = "validations or auditAnnotations must contain at least one item"
        errs.append(errors.required(f"{path}.validations", msg))
        errs.append(errors.required(f"{path}.auditAnnotations", msg))
        return errs
    for i, validation in enumerate(validations):
        errs += _validation(validation, f"{path}.validations[{i}]", scope, pre)
    if spec.get("auditAnnotations") is not None:
        if len(annotations) > _MAX_AUDIT_ANNOTATIONS:
            errs.append(
                errors.invalid(
                    f"{path}.auditAnnotations",
                    _GoList(len(annotations)),
                    f"must not have more than {_MAX_AUDIT_ANNOTATIONS} auditAnnotations",
                )
            )
        keys: set[str] = set()
        name = s(d(obj.get("metadata")), "name")
        for i, annotation in enumerate(annotations):
            at = f"{path}.auditAnnotations[{i}]"
            errs += _audit_annotation(annotation, at, name, scope, pre["audit"])
            key = s(annotation, "key")
            if key in keys:
                errs.append(errors.FieldError("FieldValueDuplicate", f"{at}.key", "", key))
            keys.add(key)
    return errs


class _GoList:
    """A slice of structs too long to render usefully (upstream prints it with ``%#v``)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __str__(self) -> str:
        return f"[]admissionregistration.AuditAnnotation{{... {self.n} items}}"


def _variable(variable: Object, path: str, scope: cel_admission.Scope, stored: frozenset[str]) -> Errs:
    errs: Errs = []
    name = s(variable, "name")
    if not name.strip():
        errs.append(errors.required(f"{path}.name", "name is not specified"))
    elif not _IDENT.match(name) or name in schematypes.RESERVED:
        errs.append(errors.invalid(f"{path}.name", name, "name is not a valid CEL identifier"))
    expression = s(variable, "expression")
    if not expression.strip():
        errs.append(errors.required(f"{path}.expression", "expression is not specified"))
    else:
        errs += rules.cel_expression(
            expression, f"{path}.expression", scope, ("dyn",), stored=expression in stored
        )[0]
    return errs


def _validation(
    validation: Object, path: str, scope: cel_admission.Scope, pre: dict[str, frozenset[str]]
) -> Errs:
    errs: Errs = []
    expression = s(validation, "expression")
    if not expression.strip():
        errs.append(errors.required(f"{path}.expression", "expression is not specified"))
    else:
        errs += rules.cel_expression(
            expression, f"{path}.expression", scope, ("bool",), stored=expression in pre["validation"]
        )[0]
    message_expression = s(validation, "messageExpression")
    if message_expression and not message_expression.strip():
        errs.append(
            errors.invalid(f"{path}.messageExpression", message_expression, "must be non-empty if specified")
        )
    elif message_expression.strip():
        errs += rules.cel_expression(
            message_expression,
            f"{path}.messageExpression",
            cel_admission.message_scope(scope),
            ("string",),
            stored=message_expression in pre["message"],
        )[0]
    message = s(validation, "message")
    if message and not message.strip():
        errs.append(errors.invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif "\n" in message.strip() or "\r" in message.strip():
        errs.append(errors.invalid(f"{path}.message", message, "message must not contain line breaks"))
    reason = validation.get("reason")
    if reason is not None and reason not in REASONS:
        errs.append(errors.not_supported(f"{path}.reason", reason, REASONS))
    return errs


def _audit_annotation(
    annotation: Object, path: str, policy_name: str, scope: cel_admission.Scope, stored: frozenset[str]
) -> Errs:
    errs: Errs = []
    key = s(annotation, "key")
    if policy_name:
        errs += rules.qualified_name(f"{policy_name}/{key}", f"{path}.key")
    else:
        errs.append(errors.invalid(f"{path}.key", key, "requires metadata.name be non-empty"))
    value_expression = s(annotation, "valueExpression")
    trimmed = value_expression.strip()
    if not trimmed:
        errs.append(errors.required(f"{path}.valueExpression", "valueExpression is not specified"))
    elif len(trimmed) > _MAX_VALUE_EXPRESSION:
        errs.append(
            errors.required(
                f"{path}.valueExpression", f"must not exceed {_MAX_VALUE_EXPRESSION} bytes in length"
            )
        )
    else:
        found, _ = rules.cel_expression(
            trimmed,
            f"{path}.valueExpression",
            scope,
            ("string", "null_type"),
            stored=value_expression in stored,
        )
        # upstream reports the untrimmed expression as the value
        errs += [
            errors.invalid(e.field, value_expression, e.detail) if e.type == "FieldValueInvalid" else e
            for e in found
        ]
    return errs


def policy_status(obj: Object, old: Object | None) -> Errs:
    """``ValidateValidatingAdmissionPolicyStatusUpdate``: expression warnings need a field ref and
    a warning."""
    errs: Errs = []
    checking = d(d(obj.get("status")).get("typeChecking"))
    for i, warning in enumerate(dl(checking.get("expressionWarnings"))):
        at = f"status.typeChecking.expressionWarnings[{i}]"
        if not s(warning, "warning"):
            errs.append(errors.required(f"{at}.warning"))
        if not s(warning, "fieldRef").strip():
            errs.append(errors.required(f"{at}.fieldRef"))
    return errs


def binding(obj: Object, old: Object | None) -> Errs:
    """``ValidateValidatingAdmissionPolicyBinding`` (create and update alike)."""
    spec = d(obj.get("spec"))
    path = "spec"
    errs: Errs = []
    name = s(spec, "policyName")
    if not name:
        errs.append(errors.required(f"{path}.policyName"))
    else:
        errs += [errors.invalid(f"{path}.policyName", name, m) for m in names.dns1123_subdomain_errors(name)]
    errs += _param_ref(spec.get("paramRef"), f"{path}.paramRef")
    if spec.get("matchResources") is not None:
        # upstream's path has this spelling (validateValidatingAdmissionPolicyBindingSpec)
        errs += match_resources(d(spec.get("matchResources")), f"{path}.matchResouces")
    errs += _actions(spec.get("validationActions"), f"{path}.validationActions")
    return errs


def _param_ref(ref: Any, path: str) -> Errs:
    if ref is None:
        return []
    ref = d(ref)
    errs: Errs = []
    name = s(ref, "name")
    selector = ref.get("selector")
    if name:
        errs += [errors.invalid(f"{path}.name", name, m) for m in rules.path_segment_errors(name)]
        if selector is not None:
            errs.append(errors.forbidden(f"{path}.name", "name and selector are mutually exclusive"))
    if selector is not None:
        errs += admissionregistration.label_selector(selector, f"{path}.selector")
        if name:
            errs.append(errors.forbidden(f"{path}.selector", "name and selector are mutually exclusive"))
    if not name and selector is None:
        errs.append(errors.required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(errors.required(f"{path}.parameterNotFoundAction"))
    elif action not in ("Deny", "Allow"):
        errs.append(errors.not_supported(f"{path}.parameterNotFoundAction", action, ["Deny", "Allow"]))
    return errs


def _actions(value: Any, path: str) -> Errs:
    errs: Errs = []
    actions = rules.strings(value)
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in ACTIONS:
            errs.append(errors.not_supported(f"{path}[{i}]", action, ACTIONS))
        if action in seen:
            errs.append(errors.FieldError("FieldValueDuplicate", f"{path}[{i}]", "", action))
        seen.add(action)
    if "Deny" in seen and "Warn" in seen:
        errs.append(
            errors.invalid(
                path,
                _GoActions(actions),
                "must not contain both Deny and Warn (repeating the same validation failure information "
                "in the API response and headers serves no purpose)",
            )
        )
    if not seen:
        errs.append(errors.required(path, "at least one validation action is required"))
    return errs


class _GoActions:
    def __init__(self, actions: list[str]) -> None:
        self.actions = actions

    def __str__(self) -> str:
        inner = ", ".join(errors.go_quote(a) for a in self.actions)
        return f"[]admissionregistration.ValidationAction{{{inner}}}"
