"""One evaluation of a ValidatingAdmissionPolicy (apiserver policy/validating/validator.go, 1.32):
message fallbacks, lazy variables, matchConditions, audit annotation types, failurePolicy and
the run-time cost limit."""

from __future__ import annotations

from typing import Any

from kplane.api.cel import admission as celadmission
from kplane.server.admission import policies, policyeval


def _policy(**spec: Any) -> policies.Policy:
    rules = [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
    ]
    return policies.compile_policy(
        {"metadata": {"name": "p"}, "spec": {"matchConstraints": {"resourceRules": rules}, **spec}}
    )


def _run(policy: policies.Policy, obj: dict[str, Any]) -> policyeval.Result:
    scope = celadmission.policy_scope(params=False, variables=bool(policy.variables))
    with celadmission.activation(
        scope, celadmission.Request(request={"operation": "CREATE"}, object=obj)
    ) as data:
        return policyeval.evaluate(policy, data)


def test_message_fallbacks() -> None:
    """messageExpression, then message, then ``failed expression: <expr>``; reason defaults to Invalid."""
    policy = _policy(
        validations=[
            {"expression": "false", "messageExpression": "'from ' + 'expression'", "message": "m"},
            {"expression": "false", "messageExpression": "''", "message": "plain", "reason": "Forbidden"},
            {"expression": " false "},
        ]
    )
    assert [(f.message, f.reason) for f in _run(policy, {}).failures] == [
        ("from expression", "Invalid"),
        ("plain", "Forbidden"),
        ("failed expression: false", "Invalid"),
    ]


def test_variables_are_lazy() -> None:
    """A failing variable no expression reads is never evaluated; one that is read fails the
    expression with upstream's composition error."""
    policy = _policy(
        variables=[
            {"name": "bad", "expression": "object.missing"},
            {"name": "n", "expression": "size(object)"},
        ],
        validations=[{"expression": "variables.n == 1"}, {"expression": "variables.bad == 1"}],
    )
    (failure,) = _run(policy, {"a": 1}).failures
    assert failure.error and failure.index == 1
    assert failure.message == (
        "expression 'variables.bad == 1' resulted in error: composited variable \"bad\" fails to evaluate: "
        "no such key: missing"
    )


def test_match_conditions_and_ignore() -> None:
    """A false matchCondition skips the policy; with failurePolicy Ignore errors are dropped."""
    skipped = _policy(
        matchConditions=[{"name": "never", "expression": "false"}], validations=[{"expression": "false"}]
    )
    assert _run(skipped, {}).failures == []
    ignored = _policy(failurePolicy="Ignore", validations=[{"expression": "object.missing == 1"}])
    assert _run(ignored, {}).failures == []


def test_audit_annotation_types() -> None:
    """Strings are published trimmed, null and empty omitted, other types are errors."""
    policy = _policy(
        auditAnnotations=[
            {"key": "a", "valueExpression": "' yes '"},
            {"key": "b", "valueExpression": "null"},
            {"key": "c", "valueExpression": "1"},
        ]
    )
    result = _run(policy, {})
    assert result.annotations == [("a", "yes")]
    assert [f.message for f in result.failures] == [
        "valueExpression '1' resulted in unsupported return type: int. "
        "Return type must be either string or null."
    ]


def test_runtime_cost_limit() -> None:
    """A quadratic expression over a large list passes the per-call limit: an evaluation error
    (failurePolicy Fail), with cel-go's text; the same on a small list runs."""
    policy = _policy(validations=[{"expression": "object.items.all(x, object.items.all(y, x == y || true))"}])
    assert _run(policy, {"items": list(range(10))}).failures == []
    (failure,) = _run(policy, {"items": list(range(1500))}).failures
    assert failure.message == (
        "expression 'object.items.all(x, object.items.all(y, x == y || true))' resulted in error: "
        "operation cancelled: actual cost limit exceeded"
    )
