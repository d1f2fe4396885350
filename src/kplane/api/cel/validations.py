"""CRD ``x-kubernetes-validations``: rules compiled once per schema, evaluated on each write.

``compile_rules(schema, path)`` walks a structural schema, compiles every rule (and
``messageExpression``) of every node against the node's declared CEL type, and returns the CRD
write errors with upstream's texts (apiextensions-apiserver validation.go, schema/cel/
compilation.go) plus a ``RuleTree`` holding only the nodes that have rules at or below them.
``RuleTree.validate(obj, old)`` evaluates the rules along the object and returns field errors as
the custom resource strategy reports them: path of the node (``<nil>`` at the root) plus
``fieldPath``, the schema's type name as the value, ``reason`` selecting the error type.

Rules are type-checked against the schema's declared types (``schematypes``) and run over the
plain object with ``self`` as dyn. At the root and at embedded resources only ``apiVersion``,
``kind``, ``metadata.name`` and ``metadata.generateName`` are visible. Transition rules (those
naming ``oldSelf``) run only where an old value correlates: object properties, map values and
``list-type: map`` entries by key; with ``optionalOldSelf`` they run on create too, with
``oldSelf`` an optional (``optional.none()`` on create). Ratcheting as upstream's
CRDValidationRatcheting: on update, rules without ``oldSelf`` skip values left unchanged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

from kplane.api import errors
from kplane.api.cel import cost, engine, schematypes

T = cel.Type
log = logging.getLogger("kplane.api.cel")
_REASONS = {
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
}
_TYPE_NAMES = {"object", "array", "string", "integer", "number", "boolean"}
_SKIP_CEL = {
    "FieldValueRequired",
    "FieldValueNotSupported",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
}
_MESSAGE_LIMIT = 5 * 1024


class GoValue:
    """A value rendered verbatim in a field error (a Go ``%#v`` struct)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _go_rule(rule: Mapping[str, Any]) -> GoValue:
    def q(key: str) -> str:
        return errors.go_quote(str(rule.get(key) or ""))

    reason = "(*apiextensions.FieldValueErrorReason)(nil)"
    if rule.get("reason") is not None:
        reason = "(*apiextensions.FieldValueErrorReason)(0xc000a1b2c0)"
    oos = "(*bool)(nil)" if rule.get("optionalOldSelf") is None else "(*bool)(0xc000a1b2c8)"
    return GoValue(
        f"apiextensions.ValidationRule{{Rule:{q('rule')}, Message:{q('message')}, "
        f"MessageExpression:{q('messageExpression')}, Reason:{reason}, FieldPath:{q('fieldPath')}, "
        f"OptionalOldSelf:{oos}}}"
    )


@dataclass
class Rule:
    program: engine.Program
    source: str
    message: str
    message_program: engine.Program | None
    reason: str
    field_path: str
    transition: bool
    optional_old: bool
    static_cost: int = 0
    """The estimated cost of one evaluation; above ``cost.PER_CALL_LIMIT`` the rule's actual cost
    is estimated from the object's sizes before it runs."""
    cost_tree: cost.Node | None = None


@dataclass
class RuleTree:
    """Compiled rules of one schema node and of its descendants that have any."""

    type_name: str
    rules: list[Rule] = field(default_factory=list)
    properties: dict[str, RuleTree] = field(default_factory=dict)
    items: RuleTree | None = None
    additional: RuleTree | None = None
    map_keys: tuple[str, ...] = ()
    root_like: bool = False
    convert: schematypes.Convert | None = None

    def empty(self) -> bool:
        return not (self.rules or self.properties or self.items or self.additional)

    def validate(self, obj: Any, old: Any) -> list[errors.FieldError]:
        """Field errors of every failing rule under this node (``obj`` already schema-valid)."""
        out: list[errors.FieldError] = []
        budget = [cost.RUNTIME_BUDGET]
        try:
            self._walk(obj, old, old is not None, "", out, budget)
        except _Stop:
            pass
        return out

    def _walk(
        self, value: Any, old: Any, has_old: bool, path: str, out: list[errors.FieldError], budget: list[int]
    ) -> None:
        if value is None:
            return
        if self.rules:
            self._run(value, old, has_old, path, out, budget)
        if self.properties and isinstance(value, dict):
            olds: dict[str, Any] = old if has_old and isinstance(old, dict) else _NO_OLD
            for name, sub in self.properties.items():
                if name in value:
                    child_has = name in olds
                    sub._walk(value[name], olds.get(name), child_has, _join(path, name), out, budget)
        if self.additional is not None and isinstance(value, dict):
            olds = old if has_old and isinstance(old, dict) else _NO_OLD
            for key, v in value.items():
                self.additional._walk(v, olds.get(key), key in olds, f"{path}[{key}]", out, budget)
        if self.items is not None and isinstance(value, list):
            by_key = _index_old(old, self.map_keys) if has_old and self.map_keys else {}
            for i, v in enumerate(value):
                previous = by_key.get(_key_of(v, self.map_keys), _MISSING) if by_key else _MISSING
                found = previous is not _MISSING
                self.items._walk(v, previous if found else None, found, f"{path}[{i}]", out, budget)

    def _run(
        self, value: Any, old: Any, has_old: bool, path: str, out: list[errors.FieldError], budget: list[int]
    ) -> None:
        visible = _visible(value) if self.root_like else value
        old_visible = _visible(old) if self.root_like and has_old else old
        if self.convert is not None:
            visible = self.convert(visible)
            old_visible = self.convert(old_visible) if has_old else None
        # CRDValidationRatcheting (on in 1.32): a rule without oldSelf is not run on a value that
        # an update left as it was (correlated through the same paths as transition rules).
        unchanged = has_old and value == old
        for rule in self.rules:
            if rule.transition and not has_old and not rule.optional_old:
                continue
            if unchanged and not rule.transition:
                continue
            data = {"self": visible}
            if rule.transition:
                data["oldSelf"] = old_visible if has_old else None
                if rule.optional_old:
                    data[_HAS_OLD] = has_old
            target = (path + rule.field_path).lstrip(".") if rule.field_path else path or "<nil>"
            if rule.static_cost > cost.PER_CALL_LIMIT and rule.cost_tree is not None:
                _charge(rule, data, target, self.type_name, out, budget)
            try:
                ok = rule.program.eval(data)
            except engine.EvalError as exc:
                out.append(errors.invalid(target, self.type_name, _eval_failure(str(exc), rule)))
                continue
            if ok is True:
                continue
            out.append(_failure(rule, target, self.type_name, data))


class _Stop(Exception):
    """No further rules run (a cost limit was reached)."""


def _charge(
    rule: Rule,
    data: dict[str, Any],
    target: str,
    type_name: str,
    out: list[errors.FieldError],
    budget: list[int],
) -> None:
    """The run-time cost limits (apiextensions schema/cel/validation.go): a rule whose estimate
    over the object's actual sizes passes the per-call limit, or a CR past its total budget, ends
    validation with upstream's errors. Only rules whose static estimate passes the per-call limit
    are measured (the others cannot reach it)."""
    assert rule.cost_tree is not None
    actual = cost.estimate(rule.cost_tree, cost.value_sizes(data))
    shown = rule.message or rule.source
    if actual > cost.PER_CALL_LIMIT:
        out.append(
            errors.invalid(
                target,
                type_name,
                "'operation cancelled: actual cost limit exceeded': no further validation rules will be run "
                f"due to call cost exceeds limit for rule: {shown}",
            )
        )
        raise _Stop
    budget[0] -= actual
    if budget[0] < 0:
        out.append(
            errors.invalid(
                target,
                type_name,
                "validation failed due to running out of cost budget, no further validation rules will be "
                "run",
            )
        )
        raise _Stop


def _eval_failure(error: str, rule: Rule) -> str:
    """apiextensions-apiserver schema/cel/validation.go's wording of an evaluation error."""
    shown = rule.message or rule.source
    if error.startswith("no such overload"):
        return (
            f"'{error}': call arguments did not match a supported operator, function or macro "
            f"signature for rule: {shown}"
        )
    return f"{error} evaluating rule: {shown}"


_MISSING = object()
_NO_OLD: dict[str, Any] = {}


def _failure(rule: Rule, path: str, type_name: str, data: dict[str, Any]) -> errors.FieldError:
    message = rule.message or f"failed rule: {rule.source}"
    if rule.message_program is not None:
        try:
            text = rule.message_program.eval(data)
        except engine.EvalError:
            text = None
        if isinstance(text, str) and text.strip() and "\n" not in text and len(text) <= _MESSAGE_LIMIT:
            message = text
    if rule.reason == "FieldValueForbidden":
        return errors.forbidden(path, message)
    if rule.reason == "FieldValueRequired":
        return errors.required(path, message)
    if rule.reason == "FieldValueDuplicate":
        return errors.FieldError("FieldValueDuplicate", path, message, type_name)
    return errors.invalid(path, type_name, message)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _visible(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    out = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    for k, v in obj.items():
        if k not in ("apiVersion", "kind", "metadata"):
            out[k] = v
    return out


def _key_of(item: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(item, dict):
        return None
    return tuple(repr(item.get(k)) for k in keys)


def _index_old(old: Any, keys: tuple[str, ...]) -> dict[Any, Any]:
    if not isinstance(old, list):
        return {}
    return {_key_of(item, keys): item for item in old}


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
) -> tuple[list[errors.FieldError], RuleTree | None]:
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
) -> RuleTree | None:
    """``cardinality``: how many values this node may have in one object (the product of the
    enclosing lists' and maps' sizes), which multiplies its rules' estimated cost."""
    if not isinstance(node, Mapping):
        return None
    kind = node.get("type")
    tree = RuleTree(
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
) -> Rule | None:
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
    transition = _uses_old_self(source)
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
                _go_rule(raw),
                f"oldSelf cannot be used on the uncorrelatable portion of the schema within {node_path}",
            )
        )
        failed = True
    if optional_old:
        source = _optional_old_self(source)
    checked = {"self": env.types.cel_type(node)}
    variables = {"self": T.DYN}
    if transition:
        checked["oldSelf"] = checked["self"]
        variables["oldSelf"] = T.DYN
        if optional_old:
            checked[_HAS_OLD] = variables[_HAS_OLD] = T.BOOL
    program = _compile_pair(env, source, checked, variables, raw, f"{path}.rule", "compilation failed", errs)
    if program is None:
        failed = True
    elif program[0].result_type not in ("bool", "dyn"):
        errs.append(errors.invalid(f"{path}.rule", _go_rule(raw), "cel expression must evaluate to a bool"))
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
                expression = _optional_old_self(expression)
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
                        _go_rule(raw),
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
    if field_path and not _valid_field_path(field_path):
        errs.append(errors.invalid(f"{path}.fieldPath", field_path, "fieldPath must be a valid path"))
        failed = True
    if failed or program is None:
        return None
    return Rule(
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
        errs.append(errors.invalid(path, _go_rule(raw), f"{what}: {exc}"))
        return None
    if typed is None:
        return runnable, runnable
    return typed, runnable


_HAS_OLD = "__kplaneHasOldSelf"
_TOKENS = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\boldSelf\b""")


def _uses_old_self(source: str) -> bool:
    """Whether ``source`` names ``oldSelf`` outside string literals (a transition rule)."""
    return any(m.group(0) == "oldSelf" for m in _TOKENS.finditer(source))


def _optional_old_self(source: str) -> str:
    """``source`` with ``oldSelf`` made an optional (``optionalOldSelf: true``): the engine takes
    no optional-typed variables, so each reference becomes an expression that builds one."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) != "oldSelf":
            return m.group(0)
        return f"({_HAS_OLD} ? optional.of(oldSelf) : optional.none())"

    return _TOKENS.sub(one, source)


_FIELD_PATH = re.compile(r"^(?:\.[A-Za-z_$][A-Za-z0-9_$-]*|\['[^']*'\])+$")


def _valid_field_path(text: str) -> bool:
    return bool(_FIELD_PATH.match(text))


def walk_rules(tree: RuleTree) -> Iterator[Rule]:
    """Every rule of a tree (for benchmarks and diagnostics)."""
    yield from tree.rules
    for sub in tree.properties.values():
        yield from walk_rules(sub)
    for child in (tree.items, tree.additional):
        if child is not None:
            yield from walk_rules(child)
