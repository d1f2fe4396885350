"""Upstream's validation of Mutating/ValidatingWebhookConfigurations (kubernetes 1.32
``pkg/apis/admissionregistration/validation``, apiserver ``pkg/util/webhook/validation.go``).

On update, rules that older servers did not enforce are relaxed exactly as upstream does when the
stored object already breaks them (side effects, unknown review versions, duplicate webhook names,
unchanged matchConditions are not recompiled, stored expressions compile against the full library).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from kplane.api import errors, names
from kplane.api.cel import admission as celadmission
from kplane.api.validation import admissionrules
from kplane.api.validation.field import Errs, Object, d, dl, s

_ACCEPTED_REVIEW_VERSIONS = ("v1", "v1beta1")
_FAILURE_POLICIES = admissionrules.FAILURE_POLICIES
_MATCH_POLICIES = admissionrules.MATCH_POLICIES
_SIDE_EFFECTS_ALL = ["None", "NoneOnDryRun", "Some", "Unknown"]
_SIDE_EFFECTS_NONE = ["None", "NoneOnDryRun"]
_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_REINVOCATION = ["IfNeeded", "Never"]
_SCOPES = ["*", "Cluster", "Namespaced"]
_URL_FORM = "; desired format: https://host[/path]"


class _GoSlice(tuple[str, ...]):
    """A typed Go string slice as ``%#v`` prints it (``[]admissionregistration.OperationType{"*"}``)."""

    type_name = "string"

    def __str__(self) -> str:
        if not self:
            return f"[]{self.type_name}(nil)"
        return f"[]{self.type_name}{{" + ", ".join(errors.go_quote(x) for x in self) + "}"


class _Operations(_GoSlice):
    type_name = "admissionregistration.OperationType"


def _strings(value: Any) -> list[str]:
    return [x for x in value if isinstance(x, str)] if isinstance(value, list) else []


def fully_qualified_name(name: str, path: str) -> Errs:
    """``IsFullyQualifiedName``: a DNS subdomain of at least three dot-separated segments."""
    if not name:
        return [errors.required(path)]
    msgs = names.dns1123_subdomain_errors(name)
    if msgs:
        return [errors.invalid(path, name, ",".join(msgs))]
    if len(name.split(".")) < 3:
        return [
            errors.invalid(path, name, "should be a domain with at least three segments separated by dots")
        ]
    return []


def label_selector(raw: Any, path: str) -> Errs:
    """``metav1validation.ValidateLabelSelector`` (strict label values)."""
    sel = d(raw)
    errs: Errs = []
    for i, expr in enumerate(dl(sel.get("matchExpressions"))):
        at = f"{path}.matchExpressions[{i}]"
        op = s(expr, "operator")
        values = _strings(expr.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(
                    errors.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    errors.forbidden(
                        f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    )
                )
        else:
            errs.append(errors.invalid(f"{at}.operator", op, "not a valid selector operator"))
        key = s(expr, "key")
        errs += [errors.invalid(f"{at}.key", key, m) for m in names.qualified_name_errors(key)]
        for j, v in enumerate(values):
            errs += [errors.invalid(f"{at}.values[{j}]", v, m) for m in names.label_value_errors(v)]
    match_labels = sel.get("matchLabels")
    if isinstance(match_labels, dict):
        at = f"{path}.matchLabels"
        for k, v in match_labels.items():
            errs += [errors.invalid(at, k, m) for m in names.qualified_name_errors(str(k))]
            errs += [errors.invalid(at, v, m) for m in names.label_value_errors(str(v))]
    return errs


def _resources(resources: list[str], path: str) -> Errs:
    errs: Errs = []
    if not resources:
        errs.append(errors.required(path))
    wildcard_sub: set[str] = set()
    wildcard_res: set[str] = set()
    double = single = plain = False
    for i, text in enumerate(resources):
        if text == "":
            errs.append(errors.required(f"{path}[{i}]"))
            continue
        double = double or text == "*/*"
        single = single or text == "*"
        res, slash, sub = text.partition("/")
        if not slash:
            plain = text != "*"
            continue
        if res in wildcard_sub:
            errs.append(
                errors.invalid(f"{path}[{i}]", text, f"if '{res}/*' is present, must not specify {text}")
            )
        if sub in wildcard_res:
            errs.append(
                errors.invalid(f"{path}[{i}]", text, f"if '*/{sub}' is present, must not specify {text}")
            )
        if sub == "*":
            wildcard_sub.add(res)
        if res == "*":
            wildcard_res.add(sub)
    if len(resources) > 1 and double:
        errs.append(
            errors.invalid(path, _GoSlice(resources), "if '*/*' is present, must not specify other resources")
        )
    if single and plain:
        errs.append(
            errors.invalid(
                path,
                _GoSlice(resources),
                "if '*' is present, must not specify other resources without subresources",
            )
        )
    return errs


def _wildcard_list(
    rule: Object, key: str, path: str, what: str, slice_type: type[_GoSlice]
) -> tuple[list[str], Errs]:
    """A rule's list field: required, and ``*`` only alone."""
    items = _strings(rule.get(key))
    errs: Errs = []
    if not items:
        errs.append(errors.required(f"{path}.{key}"))
    if len(items) > 1 and "*" in items:
        detail = f"if '*' is present, must not specify other {what}"
        errs.append(errors.invalid(f"{path}.{key}", slice_type(items), detail))
    return items, errs


def rule_with_operations(rule: Object, path: str) -> Errs:
    """``validateRuleWithOperations`` (subresources allowed)."""
    ops, errs = _wildcard_list(rule, "operations", path, "operations", _Operations)
    for i, op in enumerate(ops):
        if op not in _OPERATIONS:
            errs.append(errors.not_supported(f"{path}.operations[{i}]", op, _OPERATIONS))
    errs += _wildcard_list(rule, "apiGroups", path, "API groups", _GoSlice)[1]
    versions, version_errs = _wildcard_list(rule, "apiVersions", path, "API versions", _GoSlice)
    errs += version_errs
    for i, v in enumerate(versions):
        if v == "":
            errs.append(errors.required(f"{path}.apiVersions[{i}]"))
    errs += _resources(_strings(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if isinstance(scope, str) and scope not in _SCOPES:
        errs.append(errors.not_supported(f"{path}.scope", scope, _SCOPES))
    return errs


def webhook_url(url: str, path: str) -> Errs:
    """``ValidateWebhookURL`` with https required."""
    try:
        u = urllib.parse.urlsplit(url)
    except ValueError as exc:
        return [errors.required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errs: Errs = []
    if u.scheme != "https":
        errs.append(errors.invalid(path, u.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    host = u.netloc.rpartition("@")[2]
    if not host:
        errs.append(errors.invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in u.netloc:
        errs.append(
            errors.invalid(path, u.netloc.rpartition("@")[0], "user information is not permitted in the URL")
        )
    if u.fragment:
        errs.append(errors.invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.query:
        errs.append(errors.invalid(path, u.query, "query parameters are not permitted in the URL"))
    return errs


def webhook_service(svc: Object, path: str) -> Errs:
    """``ValidateWebhookService``."""
    errs: Errs = []
    if not s(svc, "name"):
        errs.append(errors.required(f"{path}.name", "service name is required"))
    if not s(svc, "namespace"):
        errs.append(errors.required(f"{path}.namespace", "service namespace is required"))
    port = svc.get("port", 443)
    if not (type(port) is int and 1 <= port <= 65535):
        errs.append(
            errors.invalid(f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive")
        )
    url_path = svc.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return errs
    if url_path == "//":
        return [*errs, errors.invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errs.append(errors.invalid(f"{path}.path", url_path, "must start with a '/'"))
    rest = url_path[1:]
    if rest.endswith("/"):
        rest = rest[:-1]
    for i, step in enumerate(rest.split("/")):
        if not step:
            errs.append(errors.invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        for msg in names.dns1123_subdomain_errors(step):
            errs.append(errors.invalid(f"{path}.path", url_path, f"segment[{i}]: {msg}"))
    return errs


def match_conditions(raw: Any, path: str, stored: frozenset[str]) -> Errs:
    """``validateMatchConditions`` of a webhook (no ``params``; those already stored compile
    against the full library)."""
    return admissionrules.match_conditions(raw, path, celadmission.WEBHOOK_MATCH, stored)


def _review_versions(raw: Any, path: str, require_known: bool) -> Errs:
    versions = _strings(raw)
    if not versions:
        return [errors.required(path, "must specify one of v1, v1beta1")]
    errs: Errs = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if v in seen:
            errs.append(errors.invalid(f"{path}[{i}]", v, "duplicate version"))
            continue
        seen.add(v)
        errs += [errors.invalid(f"{path}[{i}]", v, m) for m in names.dns1035_label_errors(v)]
    if require_known and not any(v in _ACCEPTED_REVIEW_VERSIONS for v in versions):
        errs.append(errors.invalid(path, _GoSlice(versions), "must include at least one of v1, v1beta1"))
    return errs


def _webhook(
    hook: Object, path: str, mutating: bool, no_side_effects: bool, stored: frozenset[str] | None
) -> Errs:
    errs = fully_qualified_name(s(hook, "name"), f"{path}.name")
    for i, rule in enumerate(dl(hook.get("rules"))):
        errs += rule_with_operations(rule, f"{path}.rules[{i}]")
    for key, allowed in (("failurePolicy", _FAILURE_POLICIES), ("matchPolicy", _MATCH_POLICIES)):
        value = hook.get(key)
        if isinstance(value, str) and value not in allowed:
            errs.append(errors.not_supported(f"{path}.{key}", value, allowed))
    allowed_effects = _SIDE_EFFECTS_NONE if no_side_effects else _SIDE_EFFECTS_ALL
    effects = hook.get("sideEffects")
    if effects is None:
        errs.append(
            errors.required(f"{path}.sideEffects", "must specify one of " + ", ".join(allowed_effects))
        )
    elif effects not in allowed_effects:
        errs.append(errors.not_supported(f"{path}.sideEffects", effects, allowed_effects))
    timeout = hook.get("timeoutSeconds")
    if type(timeout) is int and not 1 <= timeout <= 30:
        errs.append(
            errors.invalid(
                f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 seconds"
            )
        )
    for key in ("namespaceSelector", "objectSelector"):
        if isinstance(hook.get(key), dict):
            errs += label_selector(hook[key], f"{path}.{key}")
    if mutating:
        policy = hook.get("reinvocationPolicy")
        if isinstance(policy, str) and policy not in _REINVOCATION:
            errs.append(errors.not_supported(f"{path}.reinvocationPolicy", policy, _REINVOCATION))
    cc = d(hook.get("clientConfig"))
    url, svc = cc.get("url"), cc.get("service")
    if (url is None) == (svc is None):
        errs.append(errors.required(f"{path}.clientConfig", "exactly one of url or service is required"))
    elif isinstance(url, str):
        errs += webhook_url(url, f"{path}.clientConfig.url")
    elif isinstance(svc, dict):
        errs += webhook_service(svc, f"{path}.clientConfig.service")
    if stored is not None:
        errs += match_conditions(hook.get("matchConditions"), f"{path}.matchConditions", stored)
    return errs


def _configuration(obj: Object, old: Object | None, mutating: bool) -> Errs:
    hooks = dl(obj.get("webhooks"))
    old_hooks = dl(old.get("webhooks")) if old is not None else []
    if old is None:
        no_side_effects = require_known = unique = True
        stored: frozenset[str] | None = frozenset()
    else:
        no_side_effects = all(h.get("sideEffects") in _SIDE_EFFECTS_NONE for h in old_hooks)
        require_known = all(
            not _strings(h.get("admissionReviewVersions"))
            or any(v in _ACCEPTED_REVIEW_VERSIONS for v in _strings(h.get("admissionReviewVersions")))
            for h in old_hooks
        )
        old_names = [s(h, "name") for h in old_hooks]
        unique = len(set(old_names)) == len(old_names)
        unchanged = len(hooks) == len(old_hooks) and all(
            h.get("matchConditions") == o.get("matchConditions")
            for h, o in zip(hooks, old_hooks, strict=True)
        )
        stored = (
            None
            if unchanged
            else frozenset(s(c, "expression") for h in old_hooks for c in dl(h.get("matchConditions")))
        )
    errs: Errs = []
    names: set[str] = set()
    for i, hook in enumerate(hooks):
        path = f"webhooks[{i}]"
        errs += _webhook(hook, path, mutating, no_side_effects, stored)
        errs += _review_versions(
            hook.get("admissionReviewVersions"), f"{path}.admissionReviewVersions", require_known
        )
        name = s(hook, "name")
        if unique and name:
            if name in names:
                errs.append(errors.FieldError("FieldValueDuplicate", f"{path}.name", "", name))
            names.add(name)
    return errs


def mutating_webhook_configuration(obj: Object, old: Object | None) -> Errs:
    return _configuration(obj, old, mutating=True)


def validating_webhook_configuration(obj: Object, old: Object | None) -> Errs:
    return _configuration(obj, old, mutating=False)
