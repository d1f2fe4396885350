"""ValidatingAdmissionPolicy end to end, with the real kubectl and the official Python client:
write-time compilation errors, a policy with a ConfigMap param and bindings that deny, warn and
audit, matchConditions, the ``authorizer`` library backed by RBAC, and params read afresh.

Expected texts are upstream's: apiserver ``pkg/admission/plugin/policy/validating/dispatcher.go``
(``ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s``, the Warn text
``Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s``, the
``validation.policy.admission.k8s.io/validation_failure`` annotation), ``validator.go`` (message
fallbacks) and ``pkg/apis/admissionregistration/validation/validation.go`` (write-time errors).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from tests.e2e.conftest import Server, requires_kubectl, start_server
from tests.e2e.helpers import Kube, poll, unique

pytestmark = requires_kubectl

AUDIT_POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    verbs: [get, list, watch]
  - level: Metadata
"""


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("vap")
    (base / "audit.yaml").write_text(AUDIT_POLICY)
    server = start_server(
        base / "data",
        "--audit-policy-file",
        str(base / "audit.yaml"),
        "--audit-log-path",
        str(base / "audit.log"),
    )
    yield server
    server.stop()


def _audit_events(srv: Server) -> list[dict[str, Any]]:
    path = Path(srv.data_dir).parent / "audit.log"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _apply(srv: Server, *docs: dict[str, Any]) -> None:
    srv.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def _replica_policy(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["deployments"],
                    }
                ]
            },
            "matchConditions": [
                {
                    "name": "not-exempt",
                    "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)",
                }
            ],
            "variables": [{"name": "max", "expression": "int(params.data.max)"}],
            "validations": [
                {
                    "expression": "object.spec.replicas <= variables.max",
                    "messageExpression": "'replicas must be at most ' + string(variables.max)",
                    "reason": "Forbidden",
                }
            ],
            "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}],
        },
    }


def _binding(name: str, policy: str, actions: list[str], ns_label: str, params_ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": policy,
            "validationActions": actions,
            "paramRef": {"name": "limits", "namespace": params_ns, "parameterNotFoundAction": "Deny"},
            "matchResources": {"namespaceSelector": {"matchLabels": {"vap-test": ns_label}}},
        },
    }


def _api(srv: Server) -> Kube:
    return Kube.from_kubeconfig(srv.kubeconfig, srv.data_dir / "e2e-pki")


def _configmap_policy(
    srv: Server, name: str, ns: str, validations: list[dict[str, Any]], actions: list[str]
) -> None:
    """A policy on ConfigMap creates in namespace ``ns`` (selected by a label), bound once."""
    srv.kubectl("create", "namespace", ns)
    srv.kubectl("label", "namespace", ns, f"vap-test={name}")
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
    _apply(
        srv,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "matchConstraints": {
                    "resourceRules": [rule],
                    "namespaceSelector": {"matchLabels": {"vap-test": name}},
                },
                "validations": validations,
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": actions},
        },
    )


def test_compile_error_refused_at_write(srv: Server) -> None:
    """A policy whose expression does not compile, or is not boolean, is refused with upstream's
    422 (validation.go + plugin/cel/compile.go); kubectl shows the same causes."""
    policy = _replica_policy(unique("bad"))
    policy["spec"]["validations"] = [{"expression": "object.spec.replicas <="}, {"expression": "'x'"}]
    name = policy["metadata"]["name"]
    resp = _api(srv).post("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", policy)
    assert resp.status == 422
    assert resp.json()["message"] == (
        f'ValidatingAdmissionPolicy.admissionregistration.k8s.io "{name}" is invalid: '
        '[spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed: '
        "ERROR: <input>:1:24: Syntax error: mismatched input '<EOF>' expecting "
        "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, "
        "BYTES, IDENTIFIER}\n"
        " | object.spec.replicas <=\n"
        " | .......................^, "
        "spec.validations[1].expression: Invalid value: \"'x'\": must evaluate to bool]"
    )
    res = srv.kubectl("apply", "-f", "-", input=yaml.safe_dump(policy), check=False)
    assert res.returncode != 0
    assert "spec.validations[1].expression: Invalid value: \"'x'\": must evaluate to bool" in res.stderr


def test_binding_refuses_deny_with_warn(srv: Server) -> None:
    """validationActions may not hold both Deny and Warn (validateValidationActions)."""
    binding = _binding(unique("b"), "p", ["Deny", "Warn"], "x", "default")
    resp = _api(srv).post("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", binding)
    assert resp.status == 422
    assert resp.json()["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: []admissionregistration.ValidationAction{"Deny", "Warn"}: must not '
            "contain both Deny and Warn (repeating the same validation failure information in the API "
            "response and headers serves no purpose)",
            "field": "spec.validationActions",
        }
    ]


def test_deny_warn_audit_with_param(srv: Server) -> None:
    """One policy with a ConfigMap param, bound twice: Deny in one namespace (403, upstream's
    message), Warn+Audit in another (a Warning kubectl prints, and the audit annotation)."""
    policy = unique("replicas")
    deny_ns, warn_ns, params_ns = unique("prod"), unique("test"), unique("params")
    for ns, label in ((deny_ns, "deny"), (warn_ns, "warn"), (params_ns, "")):
        srv.kubectl("create", "namespace", ns)
        if label:
            srv.kubectl("label", "namespace", ns, f"vap-test={label}")
    srv.kubectl("-n", params_ns, "create", "configmap", "limits", "--from-literal=max=3")
    _apply(
        srv,
        _replica_policy(policy),
        _binding(f"{policy}-deny", policy, ["Deny"], "deny", params_ns),
        _binding(f"{policy}-warn", policy, ["Warn", "Audit"], "warn", params_ns),
    )

    denied = srv.kubectl(
        "-n", deny_ns, "create", "deployment", "big", "--image=nginx", "--replicas=5", check=False
    )
    assert denied.returncode != 0
    assert (
        f"deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy '{policy}' with binding "
        f"'{policy}-deny' denied request: replicas must be at most 3"
    ) in denied.stderr
    srv.kubectl("-n", deny_ns, "create", "deployment", "small", "--image=nginx", "--replicas=2")
    # matchConditions false: the policy does not apply
    exempt = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "exempt", "namespace": deny_ns, "labels": {"exempt": "yes", "app": "x"}},
        "spec": {
            "replicas": 9,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    srv.kubectl("apply", "-f", "-", input=yaml.safe_dump(exempt))

    warned = srv.kubectl("-n", warn_ns, "create", "deployment", "big", "--image=nginx", "--replicas=5")
    assert (
        f"Warning: Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{policy}-warn': "
        "replicas must be at most 3"
    ) in warned.stderr

    # the param is read on each request: raising the limit admits the deployment
    srv.kubectl("-n", params_ns, "patch", "configmap", "limits", "-p", '{"data":{"max":"10"}}')
    srv.kubectl("-n", deny_ns, "create", "deployment", "big", "--image=nginx", "--replicas=5")

    events = [
        e
        for e in _audit_events(srv)
        if e.get("objectRef", {}).get("resource") == "deployments" and e["verb"] == "create"
    ]
    by_ns = {
        (e["objectRef"]["namespace"], e["objectRef"].get("name"), e["responseStatus"]["code"]): e
        for e in events
    }
    audited = by_ns[(warn_ns, "big", 201)]["annotations"]
    assert json.loads(audited["validation.policy.admission.k8s.io/validation_failure"]) == [
        {
            "message": "replicas must be at most 3",
            "policy": policy,
            "binding": f"{policy}-warn",
            "expressionIndex": 0,
            "validationActions": ["Warn", "Audit"],
        }
    ]
    assert audited[f"{policy}/replicas"] == "5"
    refused = by_ns[(deny_ns, "big", 403)]
    assert refused["responseStatus"]["reason"] == "Forbidden"
    assert "validation.policy.admission.k8s.io/validation_failure" not in refused["annotations"]


def test_reason_invalid_is_422_and_missing_param(srv: Server) -> None:
    """Without a reason a denial is 422 Invalid (still worded "is forbidden", with the message
    as a cause); a missing param under parameterNotFoundAction Deny is a configuration error."""
    api = _api(srv)
    policy, ns = unique("labels"), unique("ns")
    _configmap_policy(
        srv,
        policy,
        ns,
        [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels"}],
        ["Deny"],
    )
    resp = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "c"}})
    message = (
        f"ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request: failed expression: "
        "has(object.metadata.labels) && 'team' in object.metadata.labels"
    )
    assert resp.status == 422
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'configmaps "c" is forbidden: {message}',
        "reason": "Invalid",
        "details": {"name": "c", "kind": "configmaps", "causes": [{"message": message}]},
        "code": 422,
    }
    ok = api.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "d", "labels": {"team": "a"}}})
    assert ok.status == 201


def test_authorizer_library_uses_rbac(srv: Server) -> None:
    """``authorizer`` checks are answered by the server's RBAC for the requesting user: an
    impersonated user without access to Secrets is refused, the admin is not."""
    policy, ns = unique("authz"), unique("ns")
    check = "authorizer.group('').resource('secrets').namespace(request.namespace).check('list').allowed()"
    message = "only users who may list secrets may create configmaps here"
    _configmap_policy(
        srv, policy, ns, [{"expression": check, "message": message, "reason": "Forbidden"}], ["Deny"]
    )
    srv.kubectl("-n", ns, "create", "role", "cm-writer", "--verb=create,get", "--resource=configmaps")
    srv.kubectl("-n", ns, "create", "rolebinding", "jane", "--role=cm-writer", "--user=jane")
    res = srv.kubectl("--as=jane", "-n", ns, "create", "configmap", "c1", check=False)
    assert (
        f"configmaps \"c1\" is forbidden: ValidatingAdmissionPolicy '{policy}' with binding '{policy}' "
        "denied request: only users who may list secrets may create configmaps here"
    ) in res.stderr
    srv.kubectl("-n", ns, "create", "configmap", "c2")


def test_python_client_sees_warning(srv: Server) -> None:
    """The official Python client receives the Warn action's Warning header."""
    policy, ns = unique("warn"), unique("ns")
    _configmap_policy(
        srv, policy, ns, [{"expression": "size(object.data) > 0", "message": "empty ConfigMap"}], ["Warn"]
    )
    api_client = k8s_config.new_client_from_config(config_file=str(srv.kubeconfig))
    try:
        core = k8s_client.CoreV1Api(api_client)
        resp = core.create_namespaced_config_map(
            ns, {"metadata": {"name": "c"}, "data": {}}, _preload_content=False
        )
        assert resp.status == 201
        assert resp.headers["Warning"] == (
            f"299 - \"Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{policy}': "
            'empty ConfigMap"'
        )
    finally:
        api_client.close()


def test_status_type_checking(srv: Server) -> None:
    """The status controller type-checks validations against the matched kinds (typechecking.go):
    a misspelt field is a warning ``<gv>, Kind=<kind>: <cel-go issue>`` at its fieldRef, the write
    itself succeeds; a correct policy gets an empty typeChecking and its observedGeneration."""
    api = _api(srv)
    name, good = unique("typo"), unique("typed")
    policy = _replica_policy(name)
    policy["spec"]["validations"] = [
        {"expression": "object.spec.replicas >= 0"},
        {"expression": "object.spec.replicass <= 5"},
    ]
    _apply(srv, policy)
    path = f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}"

    def status_of(path: str) -> dict[str, Any]:
        return dict(api.get(path).json().get("status") or {})

    poll(lambda: status_of(path).get("observedGeneration") == 1)
    assert status_of(path) == {
        "observedGeneration": 1,
        "typeChecking": {
            "expressionWarnings": [
                {
                    "fieldRef": "spec.validations[1].expression",
                    "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicass'\n"
                    " | object.spec.replicass <= 5\n"
                    " | ...........^",
                }
            ]
        },
    }
    _apply(srv, _replica_policy(good))
    good_path = f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{good}"
    poll(lambda: status_of(good_path).get("observedGeneration") == 1)
    assert status_of(good_path) == {"observedGeneration": 1, "typeChecking": {}}


def test_delete_is_validated_with_old_object(srv: Server) -> None:
    """DELETE requests are admitted with ``oldObject`` the object being deleted (``object`` null):
    a Warn binding's warning reaches ``kubectl delete``."""
    policy, ns = unique("del"), unique("ns")
    _configmap_policy(
        srv,
        policy,
        ns,
        [
            {
                "expression": "!has(oldObject.metadata.labels) || !('keep' in oldObject.metadata.labels)",
                "message": "labelled keep",
            }
        ],
        ["Warn"],
    )
    path = f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{policy}"
    body = _api(srv).get(path).json()
    body["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = ["DELETE"]
    assert _api(srv).put(path, body).status == 200
    srv.kubectl("-n", ns, "create", "configmap", "c1")
    srv.kubectl("-n", ns, "label", "configmap", "c1", "keep=yes")
    res = srv.kubectl("-n", ns, "delete", "configmap", "c1")
    assert (
        f"Warning: Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{policy}': "
        "labelled keep"
    ) in res.stderr
