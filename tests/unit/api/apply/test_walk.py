"""``walk.created``: a create's field set, compared with the kind's Go zero value."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import schema
from kplane.api.apply import walk

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {"name": "c", "image": "i", "ports": [{"containerPort": 80}], "resources": {}}
                ],
                "securityContext": {},
            },
        },
    },
}
SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "s"},
    "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "selector": {"a": "b"}, "type": "ClusterIP"},
}


@pytest.mark.parametrize(
    ("obj", "gvk"),
    [(DEPLOYMENT, ("apps", "v1", "Deployment")), (SERVICE, ("", "v1", "Service"))],
    ids=["deployment", "service"],
)
def test_created_equals_compare_with_the_zero_value(obj: dict[str, Any], gvk: tuple[str, str, str]) -> None:
    """One pass over the new object gives what compare(zero, new) reports as added or modified."""
    node = schema.node_for_gvk(*gvk)
    zero = schema.zero_object_for_gvk(*gvk)
    assert walk.created(obj, node, zero) == walk.compare(dict(zero), obj, node).changed()


def test_members_only_where_the_zero_value_lacks_the_node() -> None:
    """spec, strategy and template exist in a zero Deployment: no "."; rollingUpdate is a pointer."""
    fields = walk.created(DEPLOYMENT, schema.node_for_gvk("apps", "v1", "Deployment"), {}).to_fields_v1()
    assert "." in fields["f:spec"]  # compared with {} (a custom resource) every object is a member
    zero = schema.zero_object_for_gvk("apps", "v1", "Deployment")
    fields = walk.created(DEPLOYMENT, schema.node_for_gvk("apps", "v1", "Deployment"), zero).to_fields_v1()
    spec = fields["f:spec"]
    assert "." not in spec and "." not in spec["f:strategy"] and "." not in spec["f:template"]
    assert "." in spec["f:strategy"]["f:rollingUpdate"]
    assert "." not in spec["f:template"]["f:spec"]["f:containers"]  # null in the zero value
    assert spec["f:template"]["f:spec"]["f:securityContext"] == {}
