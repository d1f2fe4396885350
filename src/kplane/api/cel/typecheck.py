"""Type checking of ValidatingAdmissionPolicy expressions against the kinds they match
(apiserver ``pkg/admission/plugin/policy/validating/typechecking.go``, 1.32), for the policy's
``status.typeChecking``.

``check(policy, schema_for)`` compiles each ``spec.validations[i].expression`` and
``messageExpression`` with ``object``/``oldObject`` typed as each kind the policy's resource rules
name explicitly (no wildcard; at most 10 kinds) and ``params`` typed as its ``paramKind``; every
kind whose check fails adds ``<group/version>, Kind=<kind>: <cel-go issues>`` to the expression's
warning (lines joined by a newline). Warnings never block a write. ``schema_for(group, version,
resource)`` gives (kind, structural schema) of a served resource or None; ``builtin_schema``
builds one for a built-in kind from the 1.32 definitions (``$ref`` inlined, recursive types as
dyn). Variables stay dyn (upstream types them from their expressions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cel_expr_python import cel

from kplane.api.cel import admission, engine, schematypes
from kplane.api.schema import builtin

T = cel.Type
Object = dict[str, Any]
SchemaFor = Callable[[str, str, str], "tuple[str, Mapping[str, Any]] | None"]
MAX_KINDS = 10
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_SCALARS = ("string", "integer", "number", "boolean")


def _structural(defs: Mapping[str, Any], node: Any, seen: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(node, Mapping):
        return {}
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen or len(seen) > 12 or name not in defs:
            return {}  # a recursive type: dyn
        if name.endswith("IntOrString"):
            return {"x-kubernetes-int-or-string": True}
        return _structural(defs, defs[name], (*seen, name))
    kinds = node.get("type")
    kind = next((k for k in kinds if k != "null"), None) if isinstance(kinds, list) else kinds
    out: dict[str, Any] = {}
    if kind in _SCALARS:
        out["type"] = kind
        if isinstance(node.get("format"), str) and kind == "string":
            out["format"] = node["format"]
    elif kind == "array":
        out = {"type": "array", "items": _structural(defs, node.get("items"), seen)}
    elif kind == "object" or "properties" in node or "additionalProperties" in node:
        out["type"] = "object"
        if isinstance(node.get("properties"), Mapping):
            out["properties"] = {k: _structural(defs, v, seen) for k, v in node["properties"].items()}
        elif isinstance(node.get("additionalProperties"), Mapping):
            out["additionalProperties"] = _structural(defs, node["additionalProperties"], seen)
    return out


def builtin_schema(group: str, version: str, kind: str) -> dict[str, Any] | None:
    """A built-in kind's schema in structural form (for type checking only)."""
    name = builtin.definition_name_for_gvk(group, version, kind)
    defs = builtin.definitions()
    return _structural(defs, defs[name], (name,)) if name is not None else None


def with_object_meta(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A custom resource's schema as admission sees its objects: apiVersion, kind, full metadata."""
    props = dict(schema.get("properties") or {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    defs = builtin.definitions()
    props["metadata"] = _structural(defs, defs[_OBJECT_META], (_OBJECT_META,))
    return {**schema, "type": "object", "properties": props}


def _kinds(policy: Object, schema_for: SchemaFor) -> list[tuple[str, Mapping[str, Any]]]:
    spec = policy.get("spec") or {}
    found: list[tuple[str, Mapping[str, Any]]] = []
    for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or ():
        if not isinstance(rule, dict):
            continue
        for group in rule.get("apiGroups") or ():
            for version in rule.get("apiVersions") or ():
                for resource in rule.get("resources") or ():
                    if "*" in (group, version) or "*" in resource or "/" in resource:
                        continue
                    hit = schema_for(group, version, resource)
                    if hit is not None:
                        gv = f"{group}/{version}" if group else f"/{version}"
                        found.append((f"{gv}, Kind={hit[0]}", hit[1]))
    unique = list(dict(found).items())
    return unique if len(unique) <= MAX_KINDS else []


def check(policy: Object, schema_for: SchemaFor, param_schema: Mapping[str, Any] | None) -> list[Object]:
    """The ``expressionWarnings`` of ``policy`` (empty when nothing fails or nothing is typed)."""
    spec = policy.get("spec") or {}
    kinds = _kinds(policy, schema_for)
    if not kinds:
        return []
    checkers = [(gvk, _declarations(schema, param_schema, spec)) for gvk, schema in kinds]
    warnings: list[Object] = []
    for i, validation in enumerate(spec.get("validations") or ()):
        if not isinstance(validation, dict):
            continue
        for key in ("expression", "messageExpression"):
            source = validation.get(key)
            if not isinstance(source, str) or not source:
                continue
            issues = []
            for gvk, (decls, pool) in checkers:
                try:
                    engine.environment(stored=True).compile(source, decls, pool=pool)
                except engine.CompileError as exc:
                    issues.append(f"{gvk}: {exc}")
            if issues:
                warnings.append({"fieldRef": f"spec.validations[{i}].{key}", "warning": "\n".join(issues)})
    return warnings


def _declarations(
    schema: Mapping[str, Any], param_schema: Mapping[str, Any] | None, spec: Mapping[str, Any]
) -> tuple[dict[str, Any], Any]:
    holder: dict[str, Any] = {"type": "object", "properties": {"object": schema}}
    if param_schema is not None:
        holder["properties"]["params"] = param_schema
    types = schematypes.SchemaTypes(holder)
    scope = admission.policy_scope(
        params=spec.get("paramKind") is not None, variables=bool(spec.get("variables"))
    )
    decls = admission.declarations(scope)
    decls["object"] = decls["oldObject"] = types.cel_type(holder["properties"]["object"])
    if param_schema is not None and "params" in decls:
        decls["params"] = types.cel_type(holder["properties"]["params"])
    return decls, types.pool
