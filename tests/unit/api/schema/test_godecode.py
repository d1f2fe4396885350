"""Go decode errors from the built-in schemas, worded as encoding/json words them."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api.schema import builtin, godecode


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param({"spec": {"replicas": 3}}, None, id="fine"),
        pytest.param({"spec": {"replicas": None}}, None, id="null-is-zero"),
        pytest.param(
            {"spec": {"replicas": "three"}},
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            id="string-into-int32",
        ),
        pytest.param(
            {"spec": {"replicas": 1.5}},
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas"
            " of type int32",
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
            "json: cannot unmarshal number into Go value of type string",
            id="time",
        ),
        pytest.param({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}, None, id="int-or-string"),
    ],
)
def test_decode_error(obj: dict[str, Any], message: str | None) -> None:
    """The first value a Deployment's Go struct cannot hold gives encoding/json's message."""
    node = builtin.node_for_gvk("apps", "v1", "Deployment")
    assert node is not None
    assert godecode.decode_error(node, "Deployment", obj) == message
