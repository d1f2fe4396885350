"""CRD ``x-kubernetes-validations``: rules compiled once per schema (evaluated by ``ruletree``).

``compile_rules(schema, path)`` walks a structural schema, compiles every rule (and
``messageExpression``) of every node against the node's declared CEL type, and returns the CRD
write errors with upstream's texts (apiextensions-apiserver validation.go, schema/cel/
compilation.go) plus a ``ruletree.RuleTree`` holding only the nodes that have rules at or below
them. Rules are type-checked against the schema's declared types (``schematypes``) and compiled a
second time with ``self`` (and ``oldSelf``) as dyn, the program that runs. Each expression's cost
is estimated (``cost``) against the schema's bounds: per rule, times the node's cardinality, and
for the whole schema. New expressions compile in the previous minor's environment, those already
stored in the CRD in the full one. Compilation never modifies the schema.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cel_expr_python import cel

from kplane.api import errors
from kplane.api.cel import cost, engine, rulesource, ruletree, schematypes

T = cel.Type
log = logging.getLogger("kplane.api.cel")
_REASONS = {
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
}
_TYPE_NAMES = {"object", "array", "string", "integer", "number", "boolean"}


def _has_rules(node: Any) -> bool:
    if isinstance(node, Mapping):
        return "x-kubernetes-validations" in node or any(_has_rules(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_rules(v) for v in node)
    return False


class _Envs:
    """New expressions compile in the previous minor's environment, stored ones in the full one;
    rules are checked against the schema's declared types (``types``)."""

    def __init__(self, stored: frozenset[str] | bool, schema_types: schematypes.SchemaTypes) -> None:
        self.stored = stored
        self.types = schema_types
        self.costs: list[tuple[str, int]] = []  # (field path, expression cost x cardinality)

    def for_source(self, source: str) -> engine.Environment:
        old = self.stored is True or (not isinstance(self.stored, bool) and source in self.stored)
        return engine.environment(stored=old)


def compile_rules(
    schema: Mapping[str, Any], path: str, *, stored: frozenset[str] | bool = frozenset()
) -> tuple[list[errors.FieldError], ruletree.RuleTree | None]:
    """CRD write errors of every rule in ``schema`` (at ``path``) and the compiled tree (None when
    the schema has no rules). ``stored`` are the expression texts already stored in the CRD being
    updated (they may use what the 1.32 set adds), or True to compile everything as stored (the
    read side: rules of a CRD in storage)."""
    errs: list[errors.FieldError] = []
    if not _has_rules(schema):
        return errs, None  # the usual CRD: no protobuf types to build
    env = _Envs(stored, schematypes.SchemaTypes(schema))
    tree = _compile_node(schema, path, env, errs, root=True, correlatable=True, cardinality=1)
    if stored is not True:
        errs += _total_cost_errors(env.costs, path)
    return errs, (None if tree is None or tree.empty() else tree)


def _total_cost_errors(costs: list[tuple[str, int]], path: str) -> list[errors.FieldError]:
    """The whole schema's estimated cost against ``StaticEstimatedCRDCostLimit``: the biggest
    contributors (at least 1 % of the limit, at most 4) are blamed, then the schema."""
    total = sum(c for _, c in costs)
    if total <= cost.STATIC_CRD_LIMIT:
        return []
    blamed = sorted((c for c in costs if c[1] >= cost.STATIC_CRD_LIMIT // 100), key=lambda c: -c[1])[:4]
    out = [
        errors.forbidden(
            p, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
        )
        for p, _ in blamed
    ]
    message = cost.exceeds_message(
        "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
        total,
        cost.STATIC_CRD_LIMIT,
    )
    return [*out, errors.forbidden(path, message)]


def _compile_node(
    node: Any,
    path: str,
    env: _Envs,
    errs: list[errors.FieldError],
    *,
    root: bool = False,
    correlatable: bool,
    cardinality: int,
) -> ruletree.RuleTree | None:
    """``cardinality``: how many values this node may have in one object (the product of the
    enclosing lists' and maps' sizes), which multiplies its rules' estimated cost."""
    if not isinstance(node, Mapping):
        return None
    kind = node.get("type")
    tree = ruletree.RuleTree(
        type_name=kind if kind in _TYPE_NAMES else "object",
        root_like=root or bool(node.get("x-kubernetes-embedded-resource")),
    )
    rules = node.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        tree.convert = schematypes.converter(node)
        for i, raw in enumerate(rules):
            rule = _compile_rule(
                raw, f"{path}.x-kubernetes-validations[{i}]", node, env, errs, path, correlatable, cardinality
            )
            if rule is not None:
                tree.rules.append(rule)
    for name, child in (node.get("properties") or {}).items():
        sub = _compile_node(
            child, f"{path}.properties[{name}]", env, errs, correlatable=correlatable, cardinality=cardinality
        )
        if sub is not None and not sub.empty():
            tree.properties[name] = sub
    items = node.get("items")
    if isinstance(items, Mapping):
        map_keys = node.get("x-kubernetes-list-map-keys") or ()
        is_map = node.get("x-kubernetes-list-type") == "map"
        sub = _compile_node(
            items,
            f"{path}.items",
            env,
            errs,
            correlatable=correlatable and is_map,
            cardinality=cardinality * cost.cardinality(node),
        )
        if sub is not None and not sub.empty():
            tree.items = sub
            tree.map_keys = tuple(map_keys) if is_map else ()
    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        sub = _compile_node(
            additional,
            f"{path}.additionalProperties",
            env,
            errs,
            correlatable=correlatable,
            cardinality=cardinality * cost.cardinality(node),
        )
        if sub is not None and not sub.empty():
            tree.additional = sub
    return tree


def _compile_rule(
    raw: Any,
    path: str,
    node: Mapping[str, Any],
    env: _Envs,
    errs: list[errors.FieldError],
    node_path: str,
    correlatable: bool,
    cardinality: int = 1,
) -> ruletree.Rule | None:
    if not isinstance(raw, Mapping):
        errs.append(errors.invalid(path, raw, "must be an object"))
        return None
    source = raw.get("rule")
    if not isinstance(source, str) or not source.strip():
        errs.append(errors.required(f"{path}.rule", "rule is not specified"))
        return None
    failed = False
    message = raw.get("message")
    if message is not None:
        if not isinstance(message, str) or not message.strip():
            errs.append(errors.invalid(f"{path}.message", message, "message must be non-empty if specified"))
            failed = True
        elif "\n" in message:
            errs.append(errors.invalid(f"{path}.message", message, "message must not contain line breaks"))
            failed = True
    elif "\n" in source:
        errs.append(
            errors.required(f"{path}.message", "message must be specified if rule contains line breaks")
        )
        failed = True
    reason = raw.get("reason")
    if reason is not None and reason not in _REASONS:
        errs.append(errors.not_supported(f"{path}.reason", reason, sorted(_REASONS)))
        failed = True
    transition = rulesource.uses_old_self(source)
    optional_old = bool(raw.get("optionalOldSelf"))
    if optional_old and not transition:
        errs.append(
            errors.forbidden(f"{path}.optionalOldSelf", "may not be set if oldSelf is not used in rule")
        )
        failed = True
    if transition and not correlatable:
        errs.append(
            errors.invalid(
                f"{path}.rule",
                rulesource.go_rule(raw),
                f"oldSelf cannot be used on the uncorrelatable portion of the schema within {node_path}",
            )
        )
        failed = True
    if optional_old:
        source = rulesource.optional_old_self(source)
    checked = {"self": env.types.cel_type(node)}
    variables = {"self": T.DYN}
    if transition:
        checked["oldSelf"] = checked["self"]
        variables["oldSelf"] = T.DYN
        if optional_old:
            checked[ruletree.HAS_OLD] = variables[ruletree.HAS_OLD] = T.BOOL
    program = _compile_pair(env, source, checked, variables, raw, f"{path}.rule", "compilation failed", errs)
    if program is None:
        failed = True
    elif program[0].result_type not in ("bool", "dyn"):
        errs.append(
            errors.invalid(f"{path}.rule", rulesource.go_rule(raw), "cel expression must evaluate to a bool")
        )
        failed = True
    rule_cost = 0
    tree: cost.Node | None = None
    if program is not None:
        rule_cost, tree = _estimate(
            program[0], node, env, f"{path}.rule", "estimated rule cost", cardinality, errs
        )
    message_program = None
    expression = raw.get("messageExpression")
    if expression is not None:
        if not isinstance(expression, str) or not expression.strip():
            errs.append(
                errors.required(
                    f"{path}.messageExpression", "messageExpression must be non-empty if specified"
                )
            )
            failed = True
        else:
            if optional_old:
                expression = rulesource.optional_old_self(expression)
            pair = _compile_pair(
                env,
                expression,
                checked,
                variables,
                raw,
                f"{path}.messageExpression",
                "messageExpression compilation failed",
                errs,
            )
            if pair is None:
                failed = True
            elif pair[0].result_type not in ("string", "dyn"):
                errs.append(
                    errors.invalid(
                        f"{path}.messageExpression",
                        rulesource.go_rule(raw),
                        "messageExpression must evaluate to a string",
                    )
                )
                failed = True
            else:
                message_program = pair[1]
                _estimate(
                    pair[0],
                    node,
                    env,
                    f"{path}.messageExpression",
                    "estimated messageExpression cost",
                    cardinality,
                    errs,
                )
    field_path = raw.get("fieldPath") or ""
    if field_path and not rulesource.valid_field_path(field_path):
        errs.append(errors.invalid(f"{path}.fieldPath", field_path, "fieldPath must be a valid path"))
        failed = True
    if failed or program is None:
        return None
    return ruletree.Rule(
        program=program[1],
        source=raw["rule"],
        message=message if isinstance(message, str) else "",
        message_program=message_program,
        reason=reason or "FieldValueInvalid",
        field_path=field_path,
        transition=transition,
        optional_old=optional_old,
        static_cost=rule_cost,
        cost_tree=tree,
    )


def _estimate(
    program: engine.Program,
    node: Mapping[str, Any],
    env: _Envs,
    path: str,
    description: str,
    cardinality: int,
    errs: list[errors.FieldError],
) -> tuple[int, cost.Node | None]:
    """The expression's estimated cost (one evaluation) and tree; at CRD write, its cost times the
    node's cardinality is checked against ``StaticEstimatedCostLimit`` and counted in the schema's
    total."""
    try:
        tree = cost.decode(program.serialize())
    except (ValueError, IndexError, StopIteration):  # an AST this reader does not know: no estimate
        return 0, None
    sizes = cost.schema_sizes({"self": node, "oldSelf": node}, _property_named)
    one = cost.estimate(tree, sizes)
    if env.stored is not True:
        total = one * cardinality
        if total > cost.STATIC_RULE_LIMIT:
            errs.append(
                errors.forbidden(path, cost.exceeds_message(description, total, cost.STATIC_RULE_LIMIT))
            )
        env.costs.append((path, total))
    return one, tree


def _property_named(node: Any, cel_name: str) -> str | None:
    """The property a CEL field name selects (names are escaped: ``a-b`` is ``a__dash__b``)."""
    props = node.get("properties") if isinstance(node, Mapping) else None
    if not isinstance(props, Mapping):
        return None
    if cel_name in props and schematypes.escape(cel_name) == cel_name:
        return cel_name
    return next((k for k in props if schematypes.escape(k) == cel_name), None)


def _compile_pair(
    env: _Envs,
    source: str,
    checked: dict[str, Any],
    variables: dict[str, Any],
    raw: Mapping[str, Any],
    path: str,
    what: str,
    errs: list[errors.FieldError],
) -> tuple[engine.Program, engine.Program] | None:
    """(program checked against the schema's types, program run over plain values), or None after
    reporting the compile error."""
    environment = env.for_source(source)
    try:
        try:
            typed: engine.Program | None = environment.compile(source, checked, pool=env.types.pool)
        except engine.CompileError as exc:
            if f"of type '{env.types.package}." not in str(exc):
                raise
            # A schema shape this module's message encoding cannot express: check with dyn
            # rather than refuse a rule upstream would accept.
            log.debug("CEL rule checked as dyn (%s): %s", source, exc)
            typed = None
        runnable = environment.compile(source, variables)
    except engine.CompileError as exc:
        errs.append(errors.invalid(path, rulesource.go_rule(raw), f"{what}: {exc}"))
        return None
    if typed is None:
        return runnable, runnable
    return typed, runnable
