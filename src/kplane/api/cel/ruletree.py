"""Compiled CRD validation rules and their evaluation on each write.

A ``RuleTree`` mirrors the structural schema, holding only the nodes that have rules at or below
them (built by ``validations.compile_rules``). ``RuleTree.validate(obj, old)`` evaluates the rules
along the object and returns field errors as the custom resource strategy reports them: path of
the node (``<nil>`` at the root) plus ``fieldPath``, the schema's type name as the value,
``reason`` selecting the error type. Rules run over the plain object with ``self`` as dyn; at the
root and at embedded resources only ``apiVersion``, ``kind``, ``metadata.name`` and
``metadata.generateName`` are visible. Transition rules (those naming ``oldSelf``) run only where
an old value correlates: object properties, map values and ``list-type: map`` entries by key;
with ``optionalOldSelf`` they run on create too. Ratcheting as upstream's
CRDValidationRatcheting: on update, rules without ``oldSelf`` skip values left unchanged.

Run-time cost (apiextensions schema/cel/validation.go): rules whose static estimate passes the
per-call limit are measured against the object's sizes before they run; one past the per-call
limit, or a custom resource past its total budget, ends validation. Trees are immutable once
built and may be shared between requests; ``validate`` never modifies ``obj`` or ``old``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kplane.api import errors
from kplane.api.cel import cost, engine, schematypes

# The variable telling an ``optionalOldSelf`` rule whether ``oldSelf`` is set (see
# ``rulesource.optional_old_self``).
HAS_OLD = "__kplaneHasOldSelf"
_MESSAGE_LIMIT = 5 * 1024


@dataclass
class Rule:
    """One compiled rule: the program run over plain values, its message (or ``messageExpression``
    program), ``reason`` and ``fieldPath``, and whether it is a transition rule."""

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
                    data[HAS_OLD] = has_old
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


def walk_rules(tree: RuleTree) -> Iterator[Rule]:
    """Every rule of a tree (for benchmarks and diagnostics)."""
    yield from tree.rules
    for sub in tree.properties.values():
        yield from walk_rules(sub)
    for child in (tree.items, tree.additional):
        if child is not None:
            yield from walk_rules(child)
