"""Upstream's hand-written validation of built-in kinds through a real server: a sample of the
unit tables (``tests/unit/api/validation``) sent as creates, each answered with one aggregated 422
whose message and causes are kube-apiserver 1.32's (apimachinery ``errors.NewInvalid``: ``<Kind>.<group>
"<name>" is invalid: <e>`` or ``[e1, e2]``), and the valid edge cases accepted; kubectl shows the
issue's three-cause Pod as upstream's kubectl does.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, unique
from tests.unit.api.validation import cases

PATHS = {
    "Pod": ("v1", "/api/v1/namespaces/{ns}/pods", "Pod"),
    "Deployment": ("apps/v1", "/apis/apps/v1/namespaces/{ns}/deployments", "Deployment.apps"),
    "Job": ("batch/v1", "/apis/batch/v1/namespaces/{ns}/jobs", "Job.batch"),
}


@pytest.fixture(scope="module")
def ns(api: Kube) -> str:
    name = unique("validation")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _send(api: Kube, ns: str, kind: str, obj: dict[str, Any]) -> Any:
    api_version, path, _ = PATHS[kind]
    body = {"apiVersion": api_version, "kind": kind, **obj}
    return api.post(path.format(ns=ns) + "?dryRun=All", body)


INVALID = [
    pytest.param(kind, mutate, want, id=f"{kind}-{name}")
    for kind in PATHS
    for name, mutate, want in cases.POD_SPEC_INVALID
]
VALID = [
    pytest.param(kind, mutate, id=f"{kind}-{name}") for kind in PATHS for name, mutate in cases.POD_SPEC_VALID
]


@pytest.mark.parametrize(("kind", "mutate", "want"), INVALID)
def test_invalid_create_is_one_422(api: Kube, ns: str, kind: str, mutate: cases.Mutate, want: Any) -> None:
    prefix, shown = cases.HOSTS[kind][2], PATHS[kind][2]
    st = assert_status(_send(api, ns, kind, cases.embed(kind, mutate)), 422, "Invalid")
    expected = [
        {"reason": reason, "message": body, "field": f"{prefix}.{path}"} for reason, path, body in want
    ]
    assert st["details"]["causes"] == expected
    texts = [f"{c['field']}: {c['message']}" for c in expected]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    assert st["message"] == f'{shown} "x" is invalid: {joined}'


@pytest.mark.parametrize(("kind", "mutate"), VALID)
def test_valid_edge_case_is_accepted(api: Kube, ns: str, kind: str, mutate: cases.Mutate) -> None:
    resp = _send(api, ns, kind, cases.embed(kind, mutate))
    assert resp.status == 201, resp.body[:600]


def test_metadata_and_spec_errors_aggregate(api: Kube, ns: str) -> None:
    """ValidatePodCreate = ValidateObjectMeta + ValidatePodSpec: both in one answer, metadata first."""
    pod = cases.embed("Pod", lambda spec: spec["containers"][0].update(image=""))
    pod["metadata"]["labels"] = {"a": "-x"}
    st = assert_status(_send(api, ns, "Pod", pod), 422, "Invalid")
    assert [(c["field"], c["reason"]) for c in st["details"]["causes"]] == [
        ("metadata.labels", "FieldValueInvalid"),
        ("spec.containers[0].image", "FieldValueRequired"),
    ]


@requires_kubectl
def test_kubectl_shows_the_three_causes(server: Server, ns: str) -> None:
    """The issue's Pod: upstream answers three causes, kubectl prints them in one line."""
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: three\nspec:\n  restartPolicy: Sometimes\n"
        "  containers:\n  - name: Bad_Name\n"
    )
    res = server.kubectl("create", "-n", ns, "-f", "-", input=manifest, check=False)
    assert res.returncode != 0
    assert res.stderr.strip() == (
        'The Pod "three" is invalid: \n'
        f'* spec.containers[0].name: Invalid value: "Bad_Name": {cases.LABEL}\n'
        "* spec.containers[0].image: Required value\n"
        '* spec.restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "Always", "OnFailure", "Never"'
    ), res.stderr
