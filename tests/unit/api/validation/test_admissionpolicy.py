"""ValidatingAdmissionPolicy and binding validation: the texts of kubernetes
pkg/apis/admissionregistration/validation/validation.go (1.32)."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api.validation import admissionpolicy

_ONE_ITEM = "validations or auditAnnotations must contain at least one item"
RULES = [
    {
        "apiGroups": ["apps"],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["deployments"],
        "scope": "*",
    }
]


def _policy(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "matchPolicy": "Equivalent",
            "namespaceSelector": {},
            "objectSelector": {},
            "resourceRules": RULES,
        },
        "validations": [{"expression": "object.spec.replicas < 5"}],
    }
    base.update(spec)
    return {"metadata": {"name": "p"}, "spec": base}


def _texts(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_valid_policy() -> None:
    """A policy with params, variables, messageExpression and auditAnnotations is accepted."""
    obj = _policy(
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        variables=[{"name": "limit", "expression": "int(params.data.max)"}],
        validations=[
            {
                "expression": "object.spec.replicas <= variables.limit",
                "messageExpression": "'too many: ' + string(object.spec.replicas)",
                "reason": "Forbidden",
            }
        ],
        auditAnnotations=[{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}],
        matchConditions=[{"name": "not-system", "expression": "request.userInfo.username != 'system:admin'"}],
    )
    assert admissionpolicy.policy(obj, None) == []


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            {"validations": [], "auditAnnotations": []},
            [
                f"spec.validations: Required value: {_ONE_ITEM}",
                f"spec.auditAnnotations: Required value: {_ONE_ITEM}",
            ],
            id="nothing-to-do",
        ),
        pytest.param(
            {"validations": [{"expression": "'x'"}]},
            ["spec.validations[0].expression: Invalid value: \"'x'\": must evaluate to bool"],
            id="not-bool",
        ),
        pytest.param(
            {"validations": [{"expression": "params.x == 1"}]},
            [
                'spec.validations[0].expression: Invalid value: "params.x == 1": compilation failed: '
                "ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n"
                " | params.x == 1\n | ^"
            ],
            id="params-without-paramKind",
        ),
        pytest.param(
            {
                "validations": [
                    {"expression": "true", "messageExpression": "authorizer.path('/x').check('get').reason()"}
                ]
            },
            [
                "spec.validations[0].messageExpression: Invalid value: "
                "\"authorizer.path('/x').check('get').reason()\": compilation failed: "
                "ERROR: <input>:1:1: undeclared reference to 'authorizer' (in container '')\n"
                " | authorizer.path('/x').check('get').reason()\n | ^"
            ],
            id="no-authorizer-in-messageExpression",
        ),
        pytest.param(
            {"failurePolicy": "Sometimes"},
            ['spec.failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore"'],
            id="failurePolicy",
        ),
        pytest.param(
            {"validations": [{"expression": "true", "reason": "NotFound"}]},
            [
                'spec.validations[0].reason: Unsupported value: "NotFound": supported values: '
                '"Forbidden", "Invalid", "RequestEntityTooLarge"'
            ],
            id="reason",
        ),
        pytest.param(
            {"variables": [{"name": "in", "expression": "1"}]},
            ['spec.variables[0].name: Invalid value: "in": name is not a valid CEL identifier'],
            id="variable-name",
        ),
        pytest.param(
            {"auditAnnotations": [{"key": "a", "valueExpression": "1"}]},
            [
                'spec.auditAnnotations[0].valueExpression: Invalid value: "1": '
                "must evaluate to one of [string null_type]"
            ],
            id="audit-annotation-type",
        ),
    ],
)
def test_policy_errors(spec: dict[str, Any], want: list[str]) -> None:
    """Each invalid policy gets upstream's field errors, in order."""
    assert _texts(admissionpolicy.policy(_policy(**spec), None)) == want


def test_policy_without_rules() -> None:
    """matchConstraints needs at least one resourceRule (it gives the expressions their types)."""
    obj = _policy()
    obj["spec"]["matchConstraints"]["resourceRules"] = []
    assert _texts(admissionpolicy.policy(obj, None)) == [
        "spec.matchConstraints.resourceRules: Required value"
    ]


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param({"policyName": "p", "validationActions": ["Deny"]}, [], id="valid"),
        pytest.param(
            {"policyName": "p", "validationActions": []},
            ["spec.validationActions: Required value: at least one validation action is required"],
            id="no-actions",
        ),
        pytest.param(
            {"policyName": "p", "validationActions": ["Deny", "Deny"]},
            ['spec.validationActions[1]: Duplicate value: "Deny"'],
            id="duplicate-action",
        ),
        pytest.param(
            {
                "policyName": "p",
                "validationActions": ["Deny"],
                "paramRef": {"parameterNotFoundAction": "Deny"},
            },
            ["spec.paramRef: Required value: one of name or selector must be specified"],
            id="paramRef-empty",
        ),
        pytest.param(
            {
                "policyName": "p",
                "validationActions": ["Audit"],
                "paramRef": {"name": "a", "selector": {}, "parameterNotFoundAction": "Maybe"},
            },
            [
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
                'spec.paramRef.parameterNotFoundAction: Unsupported value: "Maybe": '
                'supported values: "Deny", "Allow"',
            ],
            id="paramRef-both",
        ),
        pytest.param(
            {"validationActions": ["Deny"]},
            ["spec.policyName: Required value"],
            id="no-policy",
        ),
    ],
)
def test_binding_errors(spec: dict[str, Any], want: list[str]) -> None:
    """Binding validation as upstream's validateValidatingAdmissionPolicyBindingSpec."""
    assert _texts(admissionpolicy.binding({"metadata": {"name": "b"}, "spec": spec}, None)) == want
