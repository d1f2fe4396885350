"""Strategic merge patch against the real Kubernetes 1.32 Deployment schema."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kplane.api import patch, schema

DEPLOYMENT = schema.node_for_gvk("apps", "v1", "Deployment")


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "labels": {"app": "web"},
            "finalizers": ["a", "b"],
            "ownerReferences": [{"uid": "u1", "name": "o1", "kind": "X", "apiVersion": "v1"}],
        },
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.25",
                            "args": ["-a", "-b"],
                            "ports": [{"containerPort": 80, "name": "http"}],
                            "env": [{"name": "A", "value": "1"}],
                        },
                        {"name": "sidecar", "image": "busybox"},
                    ],
                    "tolerations": [{"key": "t1"}, {"key": "t2"}],
                    "volumes": [
                        {"name": "data", "emptyDir": {}},
                        {"name": "cfg", "configMap": {"name": "c"}},
                    ],
                },
            },
        },
    }


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


def names(items: list[dict[str, Any]]) -> list[str]:
    return [i["name"] for i in items]


def in_pod_spec(body: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": body}}}


CASES = [
    pytest.param(
        in_pod_spec(
            {
                "$setElementOrder/containers": [{"name": "nginx"}, {"name": "sidecar"}],
                "containers": [{"image": "nginx:1.26", "name": "nginx"}],
            }
        ),
        lambda d: (
            names(pod_spec(d)["containers"]) == ["nginx", "sidecar"]
            and pod_spec(d)["containers"][0]
            == {
                "name": "nginx",
                "image": "nginx:1.26",
                "args": ["-a", "-b"],
                "ports": [{"containerPort": 80, "name": "http"}],
                "env": [{"name": "A", "value": "1"}],
            }
        ),
        id="kubectl-edit-image-merged-by-name",
    ),
    pytest.param(
        in_pod_spec({"containers": [{"name": "new", "image": "x"}]}),
        lambda d: names(pod_spec(d)["containers"]) == ["new", "nginx", "sidecar"],
        id="new-container-without-order-goes-first",
    ),
    pytest.param(
        in_pod_spec(
            {
                "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "new"}, {"name": "nginx"}],
                "containers": [{"name": "new", "image": "x"}],
            }
        ),
        lambda d: names(pod_spec(d)["containers"]) == ["sidecar", "new", "nginx"],
        id="set-element-order-reorders",
    ),
    pytest.param(
        in_pod_spec(
            {
                "$setElementOrder/containers": [{"name": "nginx"}],
                "containers": [{"$patch": "delete", "name": "sidecar"}],
            }
        ),
        lambda d: names(pod_spec(d)["containers"]) == ["nginx"],
        id="patch-delete-container",
    ),
    pytest.param(
        in_pod_spec({"containers": [{"name": "only", "image": "x"}, {"$patch": "replace"}]}),
        lambda d: pod_spec(d)["containers"] == [{"name": "only", "image": "x"}],
        id="patch-replace-list",
    ),
    pytest.param(
        in_pod_spec(
            {
                "$setElementOrder/volumes": [{"name": "data"}, {"name": "cfg"}],
                "volumes": [
                    {"$retainKeys": ["name", "secret"], "name": "cfg", "secret": {"secretName": "s"}}
                ],
            }
        ),
        lambda d: (
            pod_spec(d)["volumes"]
            == [{"name": "data", "emptyDir": {}}, {"name": "cfg", "secret": {"secretName": "s"}}]
        ),
        id="retain-keys-volume-source-switch",
    ),
    pytest.param(
        {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
        lambda d: d["spec"]["strategy"] == {"type": "Recreate"},
        id="retain-keys-drops-rolling-update",
    ),
    pytest.param(
        {"spec": {"strategy": {"type": "Recreate"}}},
        lambda d: d["spec"]["strategy"] == {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}},
        id="without-retain-keys-map-merges",
    ),
    pytest.param(
        {"metadata": {"$setElementOrder/finalizers": ["a", "b", "c"], "finalizers": ["c"]}},
        lambda d: d["metadata"]["finalizers"] == ["a", "b", "c"],
        id="finalizers-primitive-union-ordered",
    ),
    pytest.param(
        {"metadata": {"finalizers": ["b", "c"]}},
        lambda d: d["metadata"]["finalizers"] == ["a", "b", "c"],
        id="finalizers-union-interleaves-with-live-order",
    ),
    pytest.param(
        {
            "metadata": {
                "$setElementOrder/finalizers": ["a", "c"],
                "$deleteFromPrimitiveList/finalizers": ["b"],
                "finalizers": ["c"],
            }
        },
        lambda d: d["metadata"]["finalizers"] == ["a", "c"],
        id="delete-from-primitive-list",
    ),
    pytest.param(
        {"metadata": {"labels": {"app": None}}, "spec": {"replicas": None}},
        lambda d: d["metadata"]["labels"] == {} and "replicas" not in d["spec"],
        id="null-deletes",
    ),
    pytest.param(
        {"spec": {"template": {"metadata": {"annotations": {"x": "1"}, "labels": {"v": "2"}}}}},
        lambda d: (
            d["spec"]["template"]["metadata"]
            == {"labels": {"app": "web", "v": "2"}, "annotations": {"x": "1"}}
        ),
        id="nested-maps-merge",
    ),
    pytest.param(
        in_pod_spec(
            {
                "$setElementOrder/containers": [{"name": "nginx"}, {"name": "sidecar"}],
                "containers": [
                    {
                        "name": "nginx",
                        "$setElementOrder/ports": [{"containerPort": 80}, {"containerPort": 443}],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
                    }
                ],
            }
        ),
        lambda d: (
            pod_spec(d)["containers"][0]["ports"]
            == [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}]
        ),
        id="ports-merged-by-container-port",
    ),
    pytest.param(
        in_pod_spec({"containers": [{"name": "nginx", "args": ["-c"]}], "tolerations": [{"key": "t3"}]}),
        lambda d: (
            pod_spec(d)["containers"][0]["args"] == ["-c"] and pod_spec(d)["tolerations"] == [{"key": "t3"}]
        ),
        id="lists-without-merge-strategy-replaced",
    ),
    pytest.param(
        {"spec": {"template": {"metadata": {"labels": {"$patch": "replace", "x": "y"}}}}},
        lambda d: d["spec"]["template"]["metadata"]["labels"] == {"x": "y"},
        id="patch-replace-map",
    ),
    pytest.param(
        {"spec": {"strategy": {"$patch": "delete"}}},
        lambda d: d["spec"]["strategy"] == {},
        id="patch-delete-map",
    ),
    pytest.param(
        in_pod_spec(
            {
                "$setElementOrder/initContainers": [{"name": "i"}],
                "initContainers": [{"name": "i", "image": "x", "env": [{"name": "E", "value": None}]}],
            }
        ),
        lambda d: pod_spec(d)["initContainers"] == [{"name": "i", "image": "x", "env": [{"name": "E"}]}],
        id="new-list-gets-no-directives-or-nulls",
    ),
    pytest.param(
        {"metadata": {"ownerReferences": [{"uid": "u1", "controller": True}, {"uid": "u2", "name": "o2"}]}},
        lambda d: (
            d["metadata"]["ownerReferences"]
            == [
                {"uid": "u1", "name": "o1", "kind": "X", "apiVersion": "v1", "controller": True},
                {"uid": "u2", "name": "o2"},
            ]
        ),
        id="owner-references-merged-by-uid",
    ),
    pytest.param(
        {
            "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "n"}]}}},
            "status": {"x": 1},
        },
        lambda d: d["status"] == {"x": 1} and len(pod_spec(d)["containers"]) == 2,
        id="new-top-level-key",
    ),
]


@pytest.mark.parametrize(("smp", "check"), CASES)
def test_strategic_merge_deployment(smp: dict[str, Any], check: Any) -> None:
    """SMP merges lists by merge key, honours directives and never mutates its inputs."""
    original = deployment()
    frozen_patch = copy.deepcopy(smp)
    result = patch.strategic_merge(original, smp, DEPLOYMENT)
    assert check(result), result
    assert original == deployment()
    assert smp == frozen_patch


def test_result_shares_nothing_with_inputs() -> None:
    """Mutating the result changes neither the original nor the patch."""
    original = deployment()
    smp = in_pod_spec({"containers": [{"name": "new", "image": "x", "env": [{"name": "E", "value": "v"}]}]})
    result = patch.strategic_merge(original, smp, DEPLOYMENT)
    pod_spec(result)["containers"][0]["env"].append({"name": "F"})
    pod_spec(result)["volumes"][0]["emptyDir"]["x"] = 1
    assert smp["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "E", "value": "v"}]
    assert pod_spec(original)["volumes"][0]["emptyDir"] == {}


def test_without_schema_lists_are_atomic() -> None:
    """With no schema every list is replaced, but map directives still apply."""
    original = deployment()
    smp = in_pod_spec({"containers": [{"name": "x"}], "$retainKeys": ["containers"]})
    result = patch.strategic_merge(original, smp, None)
    assert pod_spec(result) == {"containers": [{"name": "x"}]}


def test_replace_patch_strategy_from_schema() -> None:
    """A field with x-kubernetes-patch-strategy: replace (PDB selector) is replaced, not merged."""
    pdb = schema.node_for_gvk("policy", "v1", "PodDisruptionBudget")
    original = {"spec": {"selector": {"matchLabels": {"x": "y"}}, "minAvailable": 1}}
    result = patch.strategic_merge(original, {"spec": {"selector": {"matchLabels": {"a": "b"}}}}, pdb)
    assert result == {"spec": {"selector": {"matchLabels": {"a": "b"}}, "minAvailable": 1}}


@pytest.mark.parametrize(
    ("smp", "fragment"),
    [
        pytest.param({"spec": {"$patch": "frob"}}, "unknown patch type", id="unknown-map-directive"),
        pytest.param(
            in_pod_spec({"containers": [{"image": "x"}]}),
            "does not contain declared merge key: name",
            id="entry-without-merge-key",
        ),
        pytest.param(
            in_pod_spec({"containers": [{"$patch": "delete"}]}),
            "does not contain declared merge key: name",
            id="delete-without-merge-key",
        ),
        pytest.param(
            in_pod_spec({"containers": [{"$patch": "frob", "name": "x"}]}),
            "unknown patch type",
            id="unknown-list-directive",
        ),
        pytest.param(
            {"spec": {"$retainKeys": "type"}}, "$retainKeys must be a list", id="retain-keys-not-list"
        ),
        pytest.param(
            {"metadata": {"$setElementOrder/finalizers": "a"}}, "must be a list", id="set-order-not-list"
        ),
        pytest.param(in_pod_spec({"containers": ["x"]}), "is not an object", id="scalar-in-map-list"),
    ],
)
def test_errors(smp: dict[str, Any], fragment: str) -> None:
    """Malformed strategic patches raise PatchError naming the problem."""
    with pytest.raises(patch.PatchError) as info:
        patch.strategic_merge(deployment(), smp, DEPLOYMENT)
    assert fragment in str(info.value)


def test_patch_must_be_object() -> None:
    """A non-object strategic patch is rejected."""
    with pytest.raises(patch.PatchError):
        patch.strategic_merge({}, ["x"], None)  # type: ignore[arg-type]


def test_public_surface() -> None:
    """The patch package exports exactly its curated names."""
    assert sorted(patch.__all__) == ["PatchError", "json_patch", "merge_patch", "strategic_merge"]
