"""The resource model as upstream serves it: OpenAPI enums, events in two versions, timestamps,
CRD defaults, managedFields placement and generated Job selectors (issue 7)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, assert_status, unique


@pytest.fixture
def ns(api: Kube) -> str:
    """A fresh namespace."""
    name = unique("rm")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _deployment(name: str, strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    }
    if strategy is not None:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


# --- 1. OpenAPI enums --------------------------------------------------------------------------


@requires_kubectl
def test_explain_shows_upstream_enum(server: Server) -> None:
    """``kubectl explain`` lists the enum upstream's OpenAPI carries for DeploymentStrategy.type."""
    # Upstream (k8s.io/api apps/v1 types.go): `// +enum type DeploymentStrategyType string` with
    # constants "Recreate" and "RollingUpdate"; kube-apiserver 1.32's explain output shows
    #   type	<string>
    #   enum: Recreate, RollingUpdate
    out = server.kubectl("explain", "deployment.spec.strategy").stdout
    assert "enum: Recreate, RollingUpdate" in out, out
    out = server.kubectl("explain", "service.spec.type").stdout
    assert "ClusterIP\n    ExternalName\n    LoadBalancer\n    NodePort" in out, out


def test_openapi_v3_enum_values(api: Kube) -> None:
    """The v3 document carries upstream's enum values on scalars and on list items."""
    doc = api.ok("GET", "/openapi/v3/api/v1")
    schemas = doc["components"]["schemas"]
    pod_spec = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]
    # Upstream: core/v1 RestartPolicy (+enum) consts Always, OnFailure, Never (sorted in the spec).
    assert pod_spec["restartPolicy"]["enum"] == ["Always", "Never", "OnFailure"]
    assert "Possible enum values:" in pod_spec["restartPolicy"]["description"]
    pvc = schemas["io.k8s.api.core.v1.PersistentVolumeClaimSpec"]["properties"]
    assert pvc["accessModes"]["items"]["enum"] == [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ]


def test_unknown_strategy_type_refused_as_upstream(api: Kube, ns: str) -> None:
    """An unknown Deployment strategy type gets upstream's hand-written validation error."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    resp = api.post(path, _deployment("bad", {"type": "Foo"}))
    body = assert_status(resp, 422, "Invalid")
    # Upstream pkg/apis/apps/validation ValidateDeploymentStrategy: field.NotSupported(fldPath,
    # strategy, validValues) prints the internal struct with %#v.
    assert body["message"] == (
        'Deployment.apps "bad" is invalid: spec.strategy: Unsupported value: '
        'apps.DeploymentStrategy{Type:"Foo", RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: '
        'supported values: "Recreate", "RollingUpdate"'
    )
