"""The admission side of the engine: policy and webhook matchCondition variables, the authorizer
library, and variable composition (apiserver pkg/admission/plugin/cel, library/authz.go)."""

from __future__ import annotations

import pytest

from kplane.api.cel import CompileError, admission, authz

REQUEST = {
    "operation": "CREATE",
    "userInfo": {"username": "alice"},
    "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
    "namespace": "ns1",
    "name": "web",
}
DEPLOY = {"metadata": {"name": "web", "labels": {"env": "prod"}}, "spec": {"replicas": 5}}


def _req(**kw: object) -> admission.Request:
    return admission.Request(request=REQUEST, object=DEPLOY, **kw)  # type: ignore[arg-type]


def test_policy_validation_with_params_and_variables() -> None:
    scope = admission.POLICY
    variables = [
        ("replicas", admission.compile("object.spec.replicas", scope)),
        ("limit", admission.compile("params.maxReplicas", scope)),
        ("broken", admission.compile("object.spec.nope", scope)),
    ]
    rule = admission.compile("variables.replicas <= variables.limit", scope)
    message = admission.compile("'%d > %d'.format([variables.replicas, variables.limit])", scope)
    with admission.activation(scope, _req(params={"maxReplicas": 3})) as data:
        failures = admission.composite(variables, data)
        assert failures == {"broken": "no such key: nope"}
        assert rule.eval(data) is False
        assert message.eval(data) == "5 > 3"


def test_authorizer_checks_reach_the_callback() -> None:
    seen: list[authz.Attributes] = []

    def authorize(attrs: authz.Attributes) -> tuple[str, str]:
        seen.append(attrs)
        return ("allow", "") if attrs.verb == "get" else ("deny", "not allowed")

    scope = admission.WEBHOOK_MATCH
    expr = admission.compile(
        "authorizer.group('apps').resource('deployments').namespace('ns1').check('get').allowed() && "
        "!authorizer.requestResource.check('delete').allowed()",
        scope,
    )
    reason = admission.compile("authorizer.path('/metrics').check('post').reason()", scope)
    with admission.activation(scope, _req(), authorize) as data:
        assert expr.eval(data) is True
        assert reason.eval(data) == "not allowed"
    assert seen[1] == authz.Attributes(
        user="alice", verb="delete", group="apps", resource="deployments", namespace="ns1", name="web"
    )


def test_webhook_match_conditions_have_no_params() -> None:
    with pytest.raises(CompileError) as info:
        admission.compile("params.x == 1", admission.WEBHOOK_MATCH)
    assert "undeclared reference to 'params" in str(info.value)


def test_default_authorizer_allows() -> None:
    expr = admission.compile(
        "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').allowed()",
        admission.POLICY,
    )
    with admission.activation(admission.POLICY, _req()) as data:
        assert expr.eval(data) is True
