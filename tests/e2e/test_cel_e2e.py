"""CRD ``x-kubernetes-validations`` end to end: every Kubernetes CEL library of 1.32 in one CRD,
transition rules, ``optionalOldSelf``, ``messageExpression``, ``reason`` and ``fieldPath``, refused
rules at CRD write, through kubectl, the official Python client and raw HTTP.

Expected texts come from upstream 1.32: rule failures from apiextensions-apiserver
pkg/apiserver/schema/cel/validation.go (``field.Invalid(path, <schema type>, message)``, default
message ``failed rule: <rule>``), compile failures from pkg/apiserver/schema/cel/compilation.go
(``compilation failed: `` + cel-go's issue text) and apiextensions validation.go.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, poll, unique

GROUP = "cel.kplane.dev"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _rule(rule: str, **extra: Any) -> dict[str, Any]:
    return {"rule": rule, **extra}


SPEC: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [
        # Kubernetes docs, "Validation rules" (custom-resource-definitions.md): min <= replicas <= max
        _rule(
            "self.minReplicas <= self.replicas",
            message="replicas should be greater than or equal to minReplicas.",
        ),
        _rule(
            "self.replicas <= self.maxReplicas",
            messageExpression=(
                "'replicas %d exceeds maxReplicas %d'.format([self.replicas, self.maxReplicas])"
            ),
        ),
        _rule(
            "!has(self.tier) || self.tier != 'gold' || has(self.memory)",
            message="gold needs memory",
            reason="FieldValueRequired",
            fieldPath=".memory",
        ),
    ],
    "properties": {
        "replicas": {
            "type": "integer",
            "x-kubernetes-validations": [
                _rule("self >= oldSelf", message="replicas may not decrease", reason="FieldValueForbidden")
            ],
        },
        "minReplicas": {"type": "integer"},
        "maxReplicas": {"type": "integer"},
        "ports": {
            "type": "array",
            "maxItems": 10,
            "items": {"type": "integer"},
            "x-kubernetes-validations": [
                _rule("self.isSorted()", message="ports must be sorted"),
                _rule(
                    "self.size() == 0 || (self.min() > 0 && self.max() < 65536)", message="port out of range"
                ),
                _rule("self.sum() <= 100000"),
                _rule("self.all(p, self.indexOf(p) == self.lastIndexOf(p))", message="ports must be unique"),
            ],
        },
        "name": {
            "type": "string",
            "maxLength": 63,
            "x-kubernetes-validations": [
                _rule("self.find('[a-z][a-z0-9]*') == self", message="name must be lowercase alphanumeric"),
                _rule("self.findAll('[0-9]').size() <= 3", message="at most three digits"),
                _rule("self.charAt(0) != 'x' && self.upperAscii().lowerAscii() == self"),
            ],
        },
        "endpoint": {
            "type": "string",
            "x-kubernetes-validations": [
                _rule(
                    "isURL(self) && url(self).getScheme() == 'https'", message="endpoint must be an https URL"
                ),
                _rule("url(self).getHostname() != 'localhost' && url(self).getPort() != '22'"),
            ],
        },
        "memory": {
            "type": "string",
            "x-kubernetes-validations": [
                _rule("isQuantity(self)", message="memory must be a quantity"),
                _rule(
                    "!isQuantity(self) || quantity(self).isLessThan(quantity('1Gi'))",
                    messageExpression="'memory ' + self + ' exceeds 1Gi'",
                ),
            ],
        },
        "address": {
            "type": "string",
            "x-kubernetes-validations": [
                _rule("isIP(self) && ip(self).family() == 4", message="address must be IPv4"),
                _rule(
                    "!isIP(self) || cidr('10.0.0.0/8').containsIP(ip(self))",
                    message="address outside 10.0.0.0/8",
                ),
            ],
        },
        "subnet": {
            "type": "string",
            "x-kubernetes-validations": [
                _rule(
                    "isCIDR(self) && cidr(self).prefixLength() >= 16 && cidr('10.0.0.0/8').containsCIDR(self)"
                ),
            ],
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-validations": [
                _rule("sets.contains(['a', 'b', 'c'], self)", message="tags must be a, b or c"),
            ],
        },
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "x-kubernetes-validations": [
                _rule("self.all(k, k.lowerAscii() == k)", message="label keys must be lower case"),
            ],
        },
        "tier": {
            "type": "string",
            "x-kubernetes-validations": [_rule("self in ['free', 'gold']")],
        },
        "mode": {
            "type": "string",
            "x-kubernetes-validations": [
                _rule(
                    "oldSelf.orValue('') == '' || oldSelf.value() == self",
                    optionalOldSelf=True,
                    message="mode is immutable once set",
                )
            ],
        },
        "host": {
            "type": "string",
            "maxLength": 253,
            "x-kubernetes-validations": [
                # apiserver library/format.go: validate gives optional.none() or the validator's
                # messages (here apimachinery's IsDNS1123Subdomain)
                _rule(
                    "!format.dns1123Subdomain().validate(self).hasValue()",
                    messageExpression=(
                        "'host: ' + format.dns1123Subdomain().validate(self).value().join('; ')"
                    ),
                ),
                _rule("format.named('uuid').hasValue() && !format.named('nope').hasValue()"),
            ],
        },
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gizmos.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            _rule("self.metadata.name.startsWith('g')", message="name must start with g")
                        ],
                        "properties": {"spec": SPEC},
                    }
                },
            }
        ],
    },
}

GOOD = {
    "replicas": 2,
    "minReplicas": 1,
    "maxReplicas": 5,
    "ports": [80, 443],
    "name": "web1",
    "endpoint": "https://example.com:8443/x",
    "memory": "512Mi",
    "address": "10.1.2.3",
    "subnet": "10.1.0.0/16",
    "tags": ["a", "c"],
    "labels": {"app": "web"},
    "tier": "gold",
    "mode": "fast",
    "host": "api.example.com",
}


def _gizmo(name: str, /, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gizmo",
        "metadata": {"name": name},
        "spec": {**GOOD, **spec},
    }


@pytest.fixture(scope="module")
def gizmos(server: Server, api: Kube) -> Iterator[str]:
    """The Gizmo CRD, written through kubectl; yields its collection path in a fresh namespace."""
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump(CRD))
    poll(lambda: api.get(f"/apis/{GROUP}/v1").status == 200)
    ns = unique("cel")
    api.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    yield f"/apis/{GROUP}/v1/namespaces/{ns}/gizmos"


def _causes(st: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c.get("field", ""), c["message"]) for c in st["details"]["causes"]]


def test_valid_object_accepted(api: Kube, gizmos: str) -> None:
    made = api.ok("POST", gizmos, _gizmo("g-ok"))
    assert made["spec"]["memory"] == "512Mi"


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        # validation.go: field.Invalid(fldPath, sts.Type, ruleMessageOrDefault(rule))
        (
            {"replicas": 9},
            ("FieldValueInvalid", "spec", 'Invalid value: "object": replicas 9 exceeds maxReplicas 5'),
        ),
        (
            {"replicas": 0},
            (
                "FieldValueInvalid",
                "spec",
                'Invalid value: "object": replicas should be greater than or equal to minReplicas.',
            ),
        ),
        (
            {"ports": [443, 80]},
            ("FieldValueInvalid", "spec.ports", 'Invalid value: "array": ports must be sorted'),
        ),
        (
            {"ports": [0, 80]},
            ("FieldValueInvalid", "spec.ports", 'Invalid value: "array": port out of range'),
        ),
        (
            {"ports": [80, 80]},
            ("FieldValueInvalid", "spec.ports", 'Invalid value: "array": ports must be unique'),
        ),
        (
            {"ports": [60000, 60001]},
            ("FieldValueInvalid", "spec.ports", 'Invalid value: "array": failed rule: self.sum() <= 100000'),
        ),
        (
            {"name": "web-1"},
            (
                "FieldValueInvalid",
                "spec.name",
                'Invalid value: "string": name must be lowercase alphanumeric',
            ),
        ),
        (
            {"name": "a12345"},
            ("FieldValueInvalid", "spec.name", 'Invalid value: "string": at most three digits'),
        ),
        (
            {"endpoint": "http://example.com"},
            ("FieldValueInvalid", "spec.endpoint", 'Invalid value: "string": endpoint must be an https URL'),
        ),
        (
            {"endpoint": "https://localhost/"},
            (
                "FieldValueInvalid",
                "spec.endpoint",
                'Invalid value: "string": failed rule: '
                "url(self).getHostname() != 'localhost' && url(self).getPort() != '22'",
            ),
        ),
        (
            {"memory": "2Gi"},
            ("FieldValueInvalid", "spec.memory", 'Invalid value: "string": memory 2Gi exceeds 1Gi'),
        ),
        (
            {"address": "not-an-ip"},
            ("FieldValueInvalid", "spec.address", 'Invalid value: "string": address must be IPv4'),
        ),
        (
            {"address": "192.168.0.1"},
            ("FieldValueInvalid", "spec.address", 'Invalid value: "string": address outside 10.0.0.0/8'),
        ),
        (
            {"tags": ["a", "z"]},
            ("FieldValueInvalid", "spec.tags", 'Invalid value: "array": tags must be a, b or c'),
        ),
        (
            {"labels": {"App": "x"}},
            ("FieldValueInvalid", "spec.labels", 'Invalid value: "object": label keys must be lower case'),
        ),
        (
            {"tier": "silver"},
            (
                "FieldValueInvalid",
                "spec.tier",
                "Invalid value: \"string\": failed rule: self in ['free', 'gold']",
            ),
        ),
        (
            {"host": "Bad_Host"},
            (
                "FieldValueInvalid",
                "spec.host",
                'Invalid value: "string": host: a lowercase RFC 1123 subdomain must consist of lower case '
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ),
        ),
        # reason: FieldValueRequired and fieldPath: the cause is Required at spec.memory
        ({"memory": None}, ("FieldValueRequired", "spec.memory", "Required value: gold needs memory")),
    ],
)
def test_rule_failures(api: Kube, gizmos: str, spec: dict[str, Any], cause: tuple[str, str, str]) -> None:
    obj = _gizmo(unique("g"), **spec)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    st = assert_status(api.post(gizmos, obj), 422, "Invalid")
    assert _causes(st) == [(cause[0], cause[1], cause[2])], st
    name = obj["metadata"]["name"]
    assert st["message"] == f'Gizmo.{GROUP} "{name}" is invalid: {cause[1]}: {cause[2]}', st


def test_root_rule_reports_nil_path(api: Kube, gizmos: str) -> None:
    """A rule on the root schema validates with a nil field path: the cause's field is ``<nil>``."""
    st = assert_status(api.post(gizmos, _gizmo("bad-name")), 422, "Invalid")
    assert _causes(st) == [("FieldValueInvalid", "<nil>", 'Invalid value: "object": name must start with g')]


def test_transition_rules(api: Kube, gizmos: str) -> None:
    """``oldSelf`` rules run on update only; ``optionalOldSelf`` rules run on create too."""
    name = unique("g")
    made = api.ok("POST", gizmos, _gizmo(name, replicas=3))
    made["spec"]["replicas"] = 2
    st = assert_status(api.put(f"{gizmos}/{name}", made), 422, "Invalid")
    assert _causes(st) == [("FieldValueForbidden", "spec.replicas", "Forbidden: replicas may not decrease")]
    made["spec"]["replicas"] = 4
    made = api.ok("PUT", f"{gizmos}/{name}", made)
    made["spec"]["mode"] = "slow"
    st = assert_status(api.put(f"{gizmos}/{name}", made), 422, "Invalid")
    assert _causes(st) == [
        ("FieldValueInvalid", "spec.mode", 'Invalid value: "string": mode is immutable once set')
    ]


def test_several_failures_aggregate(api: Kube, gizmos: str) -> None:
    st = assert_status(api.post(gizmos, _gizmo("g-many", ports=[2, 1], tags=["q"])), 422, "Invalid")
    assert [c[1] for c in _causes(st)] == ["spec.ports", "spec.tags"]


def test_schema_errors_skip_cel(api: Kube, gizmos: str) -> None:
    """apiextensions strategy.go: OpenAPI errors of these types suppress CEL, with one more cause."""
    st = assert_status(api.post(gizmos, _gizmo("g-type", replicas="many", ports=[2, 1])), 422, "Invalid")
    assert _causes(st)[-1] == (
        "FieldValueInvalid",
        "<nil>",
        'Invalid value: "null": some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation",
    )


@requires_kubectl
def test_kubectl_apply_shows_rule_message(server: Server, gizmos: str) -> None:
    ns = gizmos.split("/")[5]
    res = server.kubectl(
        "apply", "-n", ns, "-f", "-", input=yaml.safe_dump(_gizmo("g-kubectl", memory="4Gi")), check=False
    )
    assert res.returncode == 1
    assert (
        'The Gizmo "g-kubectl" is invalid: spec.memory: Invalid value: "string": memory 4Gi exceeds 1Gi'
        in res.stderr
    ), res.stderr


def test_python_client_sees_causes(k8s: k8s_client.ApiClient, gizmos: str) -> None:
    ns = gizmos.split("/")[5]
    co = k8s_client.CustomObjectsApi(k8s)
    with pytest.raises(ApiException) as info:
        co.create_namespaced_custom_object(GROUP, "v1", ns, "gizmos", _gizmo("g-py", ports=[3, 2]))
    assert info.value.status == 422
    body = json.loads(info.value.body)
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "array": ports must be sorted',
            "field": "spec.ports",
        }
    ]


def _crd_with(rules: list[dict[str, Any]], plural: str = "badgizmos") -> dict[str, Any]:
    crd = json.loads(json.dumps(CRD))
    crd["metadata"]["name"] = f"{plural}.{GROUP}"
    crd["spec"]["names"] = {"plural": plural, "singular": plural[:-1], "kind": plural.capitalize()[:-1]}
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"] = {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "x-kubernetes-validations": rules,
    }
    return crd


def test_compile_failure_refused_at_crd_write(api: Kube) -> None:
    """admission.md §4.5, compilation.go: ``compilation failed: `` + cel-go's issue with caret line."""
    st = assert_status(api.post(CRD_PATH, _crd_with([_rule("self.replica > 0")])), 422, "Invalid")
    field = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert _causes(st) == [
        (
            "FieldValueInvalid",
            field,
            'Invalid value: apiextensions.ValidationRule{Rule:"self.replica > 0", Message:"", '
            'MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), '
            'FieldPath:"", OptionalOldSelf:(*bool)(nil)}: '
            "compilation failed: ERROR: <input>:1:5: undefined field 'replica'\n"
            " | self.replica > 0\n | ....^",
        )
    ], st
    assert st["message"].startswith(
        f'CustomResourceDefinition.apiextensions.k8s.io "badgizmos.{GROUP}" is invalid: '
    )
    assert_status(api.get(f"{CRD_PATH}/badgizmos.{GROUP}"), 404, "NotFound")


@pytest.mark.parametrize(
    ("rule", "field", "detail"),
    [
        (
            _rule("self.replicas + 'a' > 0"),
            "rule",
            "compilation failed: ERROR: <input>:1:15: "
            "found no matching overload for '_+_' applied to '(int, string)'\n"
            " | self.replicas + 'a' > 0\n | ..............^",
        ),
        (_rule("self.replicas"), "rule", "cel expression must evaluate to a bool"),
        (_rule("self.replicas > 0", message=" "), "message", "message must be non-empty if specified"),
        (
            _rule("self.replicas > 0", reason="Nope"),
            "reason",
            'Unsupported value: "Nope": supported values: "FieldValueDuplicate", '
            '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
        ),
        (
            _rule("self.replicas > 0", optionalOldSelf=True),
            "optionalOldSelf",
            "may not be set if oldSelf is not used in rule",
        ),
        # two-variable comprehensions are introduced in 1.32: new rules compile against 1.31's set
        (_rule("self.labels.all(k, v, v != '')"), "rule", "compilation failed: "),
    ],
)
def test_crd_rule_errors(api: Kube, rule: dict[str, Any], field: str, detail: str) -> None:
    st = assert_status(api.post(CRD_PATH, _crd_with([rule])), 422, "Invalid")
    (cause,) = st["details"]["causes"]
    assert cause["field"].endswith(f"x-kubernetes-validations[0].{field}"), st
    assert detail in cause["message"], st


def test_cost_exceeded_refused_at_crd_write(api: Kube) -> None:
    """apiextensions validation.go getCostErrorMessage: a rule quadratic in an unbounded map is
    refused at CRD write (estimated cost over StaticEstimatedCostLimit, Forbidden on the rule)."""
    rule = _rule("self.labels.all(k, self.labels.all(j, self.labels[k] == self.labels[j]))")
    st = assert_status(api.post(CRD_PATH, _crd_with([rule])), 422, "Invalid")
    field = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert (
        "FieldValueForbidden",
        field,
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the "
        "rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are "
        "declared)",
    ) in _causes(st), st
