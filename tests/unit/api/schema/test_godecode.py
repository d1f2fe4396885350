"""Go decode errors from the built-in schemas, worded as encoding/json words them."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import patch as patches
from kplane.api.schema import builtin, godecode

_DEPLOYMENT_CASES = [
    pytest.param({"spec": {"replicas": 3}}, None, id="fine"),
    pytest.param({"spec": {"replicas": None}}, None, id="null-is-zero"),
    pytest.param(
        {"spec": {"replicas": "three"}},
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        id="string-into-int32",
    ),
    pytest.param(
        {"spec": {"replicas": 1.5}},
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
        id="fraction-into-int32",
    ),
    pytest.param(
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "ports": "80"}]}}}},
        "json: cannot unmarshal string into Go struct field Container.spec.template.spec.containers.ports"
        " of type []v1.ContainerPort",
        id="string-into-slice",
    ),
    pytest.param(
        {"metadata": {"labels": {"a": 1}}},
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        id="map-value",
    ),
    pytest.param(
        {"spec": "x"},
        "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec",
        id="string-into-struct",
    ),
    pytest.param(
        {"metadata": {"creationTimestamp": 5}},
        # Time.UnmarshalJSON decodes a string; the outer decoder adds the field's context
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp"
        " of type string",
        id="time",
    ),
    pytest.param({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}, None, id="int-or-string"),
    pytest.param(
        {"spec": {"strategy": {"rollingUpdate": {"maxSurge": True}}}},
        "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy"
        ".rollingUpdate.maxSurge of type int32",
        id="int-or-string-bool",
    ),
]


@pytest.mark.parametrize(("obj", "message"), _DEPLOYMENT_CASES)
def test_decode_error(obj: dict[str, Any], message: str | None) -> None:
    """The first value a Deployment's Go struct cannot hold gives encoding/json's message."""
    node = builtin.node_for_gvk("apps", "v1", "Deployment")
    assert node is not None
    assert godecode.decode_error(node, "Deployment", obj) == message


_STORED = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d", "labels": {"app": "d"}, "creationTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "d"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c"}]}},
    },
    "status": {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]},
}


@pytest.mark.parametrize(("patch", "message"), _DEPLOYMENT_CASES)
def test_decode_error_of_a_merge_patch_walks_only_what_it_set(
    patch: dict[str, Any], message: str | None
) -> None:
    """A merge patch applied to an object that decodes: checking only the members the patch set
    gives the whole walk's answer."""
    node = builtin.node_for_gvk("apps", "v1", "Deployment")
    assert node is not None
    patched = patches.merge_patch(_STORED, patch)
    assert godecode.decode_error(node, "Deployment", patched) == message
    assert godecode.decode_error(node, "Deployment", patched, touched=patch) == message


def _container(**fields: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", **fields}]}}


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(
            _container(resources={"limits": "x"}),
            "json: cannot unmarshal string into Go struct field ResourceRequirements.spec.containers"
            ".resources.limits of type v1.ResourceList",
            id="named-map",
        ),
        pytest.param(
            _container(ports=[{"containerPort": 80, "protocol": 6}]),
            "json: cannot unmarshal number into Go struct field ContainerPort.spec.containers.ports"
            ".protocol of type v1.Protocol",
            id="named-string",
        ),
        pytest.param(
            _container(securityContext={"capabilities": {"add": [1]}}),
            "json: cannot unmarshal number into Go struct field Capabilities.spec.containers"
            ".securityContext.capabilities.add of type v1.Capability",
            id="named-element",
        ),
        pytest.param(
            _container(resources={"limits": {"cpu": "lots"}}),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            id="quantity-format",
        ),
        pytest.param(
            _container(resources={"limits": {"cpu": "5ki"}}), "unable to parse quantity's suffix", id="suffix"
        ),
        pytest.param(_container(resources={"limits": {"cpu": 2, "memory": "1Gi"}}), None, id="quantities"),
    ],
)
def test_pod_decode_error(obj: dict[str, Any], message: str | None) -> None:
    """Named Go types (from the Go sources) and Quantity's own parser."""
    node = builtin.node_for_gvk("", "v1", "Pod")
    assert node is not None
    assert godecode.decode_error(node, "Pod", obj) == message
