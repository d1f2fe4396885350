"""One evaluation of a compiled ValidatingAdmissionPolicy for one binding and one param
(apiserver ``pkg/admission/plugin/policy/validating/validator.go``, 1.32).

``evaluate(policy, data)`` runs, over the activation ``data`` (``api/cel/admission.activation``):
the matchConditions (any false: nothing applies; an error and no false: one error decision), then
each validation (false: a failure with the message of ``messageExpression``, ``message`` or
``failed expression: <expr>``, and the validation's ``reason``; an error: an error decision), then
the auditAnnotations (string: published, trimmed; empty or null: omitted; another type or an error:
an error decision). Error decisions are failures only under ``failurePolicy: Fail``. Variables are
evaluated when an expression needing them runs, once each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kplane.api.cel import cost, engine
from kplane.server.admission import policies

MESSAGE_LIMIT = 5 * 1024
ANNOTATION_VALUE_LIMIT = 10 * 1024


@dataclass(frozen=True, slots=True)
class Failure:
    """A denial (or, with ``error``, an evaluation error under failurePolicy Fail)."""

    index: int
    message: str
    reason: str = ""
    error: bool = False


@dataclass(slots=True)
class Result:
    failures: list[Failure] = field(default_factory=list)
    annotations: list[tuple[str, str]] = field(default_factory=list)


class _Variables:
    """The policy's variables of one evaluation, computed on demand."""

    def __init__(self, policy: policies.Policy, data: dict[str, Any]) -> None:
        self._defs = dict(policy.variables)
        self._data = data
        self._values: dict[str, Any] = {}
        self._errors: dict[str, str] = {}
        self.budget = cost.RUNTIME_BUDGET
        if policy.variables:
            data["variables"] = self._values

    def ensure(self, needs: tuple[str, ...]) -> str | None:
        """Evaluate ``needs`` (in declaration order); the first failure's message, if any."""
        for name in needs:
            if name not in self._values and name not in self._errors:
                try:
                    self._values[name] = self._defs[name].program.eval(self._data)
                except engine.EvalError as exc:
                    self._errors[name] = str(exc)
            if name in self._errors:
                return f'composited variable "{name}" fails to evaluate: {self._errors[name]}'
        return None


class OutOfBudget(Exception):
    """The evaluation's cost budget is spent (upstream's RuntimeCELCostBudget per binding)."""


def _run(expr: policies.Expression, variables: _Variables, data: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(value, None) or (None, upstream's error text). An iterating expression is first measured
    on the actual sizes of its inputs (``api/cel/cost``): past the per-call limit it is an
    error, and its cost is charged to the evaluation's budget."""
    failed = variables.ensure(expr.needs)
    if failed is None and expr.cost_tree is not None:
        actual = cost.estimate(expr.cost_tree, cost.value_sizes(dict(data)))
        if actual > cost.PER_CALL_LIMIT:
            failed = "operation cancelled: actual cost limit exceeded"
        else:
            variables.budget -= actual
            if variables.budget < 0:
                raise OutOfBudget
    if failed is None:
        try:
            return expr.program.eval(data), None
        except engine.EvalError as exc:
            failed = str(exc)
    return None, f"expression '{expr.source}' resulted in error: {failed}"


def _aggregate(messages: list[str]) -> str:
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


def _type_name(value: Any) -> str:
    match value:
        case bool():
            return "bool"
        case int():
            return "int"
        case float():
            return "double"
        case list() | tuple():
            return "list"
        case dict():
            return "map"
        case bytes():
            return "bytes"
    return type(value).__name__


def evaluate(policy: policies.Policy, data: dict[str, Any]) -> Result:
    """The failures and audit annotations of ``policy`` over ``data`` (see the module docstring)."""
    try:
        return _evaluate(policy, data)
    except OutOfBudget:
        result = Result()
        if policy.fail:
            message = (
                "validation failed due to running out of cost budget, no further validation rules will be run"
            )
            result.failures.append(Failure(-1, message, error=True))
        return result


def _evaluate(policy: policies.Policy, data: dict[str, Any]) -> Result:
    result = Result()
    variables = _Variables(policy, data)
    if policy.conditions:
        errs = []
        for _, cond in policy.conditions:
            value, err = _run(cond, variables, data)
            if err is not None:
                errs.append(err)
            elif value is False:
                return result
        if errs:
            if policy.fail:
                result.failures.append(Failure(-1, _aggregate(errs), error=True))
            return result
    for i, validation in enumerate(policy.validations):
        value, err = _run(validation.check, variables, data)
        if err is not None:
            if policy.fail:
                result.failures.append(Failure(i, err, error=True))
            continue
        if value is True:
            continue
        result.failures.append(Failure(i, _message(validation, variables, data), validation.reason))
    for annotation in policy.annotations:
        value, err = _run(annotation.value, variables, data)
        if err is None and value is not None and not isinstance(value, str):
            err = (
                f"valueExpression '{annotation.value.source}' resulted in unsupported return type: "
                f"{_type_name(value)}. Return type must be either string or null."
            )
        if err is not None:
            if policy.fail:
                result.failures.append(Failure(-1, err, error=True))
            continue
        text = (value or "").strip()
        if text:
            result.annotations.append((annotation.key, text[:ANNOTATION_VALUE_LIMIT]))
    return result


def _message(validation: policies.Validation, variables: _Variables, data: dict[str, Any]) -> str:
    if validation.message_expression is not None:
        # messageExpression has no authorizer (its scope does not declare one)
        value, err = _run(validation.message_expression, variables, data)
        if err is None and isinstance(value, str):
            text = value.strip()
            if text and len(text) <= MESSAGE_LIMIT and "\n" not in text:
                return text
    if validation.message:
        return validation.message
    return f"failed expression: {validation.check.source.strip()}"
