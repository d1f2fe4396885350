"""Built-in Kubernetes 1.32 definitions and the schema navigator."""

from __future__ import annotations

import pytest

from kplane.api import schema


@pytest.mark.parametrize(
    ("gvk", "name"),
    [
        pytest.param(("apps", "v1", "Deployment"), "io.k8s.api.apps.v1.Deployment", id="deployment"),
        pytest.param(("", "v1", "Pod"), "io.k8s.api.core.v1.Pod", id="pod"),
        pytest.param(
            ("", "v1", "DeleteOptions"), "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", id="shared"
        ),
        pytest.param(
            ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            id="crd",
        ),
        pytest.param(("example.com", "v1", "Widget"), None, id="unknown"),
        pytest.param(("apps", "v1beta1", "Deployment"), None, id="removed-version"),
    ],
)
def test_definition_name_for_gvk(gvk: tuple[str, str, str], name: str | None) -> None:
    """Kinds map to their own definition; unknown kinds to None."""
    assert schema.definition_name_for_gvk(*gvk) == name


def test_definitions_cached_and_complete() -> None:
    """definitions() is loaded once and holds the 1.32 kinds with their extensions."""
    defs = schema.definitions()
    assert defs is schema.definitions()
    assert len(defs) > 600
    assert defs["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]


def test_navigate_deployment_patch_metadata() -> None:
    """The navigator resolves $ref and exposes merge keys, strategies and list types."""
    root = schema.node_for_gvk("apps", "v1", "Deployment")
    assert root is not None
    spec = root.property("spec")
    assert spec is not None
    pod = spec.property("template").property("spec")  # type: ignore[union-attr]
    assert pod is not None
    containers = pod.property("containers")
    assert containers is not None
    assert (containers.merge_key, containers.patch_strategy) == ("name", "merge")
    assert containers.list_type == "map" and containers.list_map_keys == ("name",)
    ports = containers.items().property("ports")  # type: ignore[union-attr]
    assert ports is not None and ports.merge_key == "containerPort"
    assert ports.list_map_keys == ("containerPort", "protocol")
    volumes = pod.property("volumes")
    assert volumes is not None and volumes.patch_strategies == frozenset({"merge", "retainKeys"})
    strategy = spec.property("strategy")
    assert strategy is not None and strategy.patch_strategy == "retainKeys"  # next to the $ref
    assert strategy.property("rollingUpdate") is not None
    assert pod.property("tolerations").list_type == "atomic"  # type: ignore[union-attr]
    assert pod.property("nodeSelector").map_type == "atomic"  # type: ignore[union-attr]


def test_navigate_maps_and_missing() -> None:
    """additional() gives map values; unknown properties and non-arrays give None."""
    meta = schema.node_for_gvk("", "v1", "ConfigMap").property("metadata")  # type: ignore[union-attr]
    assert meta is not None
    labels = meta.property("labels")
    assert labels is not None and labels.additional() is not None
    assert labels.additional().types == ("string",)  # type: ignore[union-attr]
    assert labels.field("anything") is labels.additional()
    assert meta.property("nope") is None
    assert meta.items() is None
    finalizers = meta.property("finalizers")
    assert finalizers is not None and finalizers.list_type == "set" and finalizers.merge_key is None


def test_children_are_cached() -> None:
    """Walking the same path twice returns the same node objects."""
    a = schema.node_for_gvk("apps", "v1", "Deployment")
    b = schema.node_for_gvk("apps", "v1", "Deployment")
    assert a is b and a is not None
    assert a.property("spec") is a.property("spec")


def test_node_without_defs() -> None:
    """A plain (CRD) schema navigates without $defs; dangling $refs degrade to the node itself."""
    node = schema.SchemaNode(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/Missing"},
                    "x-kubernetes-list-type": "set",
                }
            },
        }
    )
    items = node.property("items")
    assert items is not None and items.list_type == "set"
    assert items.items() is not None and items.items().resolved == {"$ref": "#/$defs/Missing"}  # type: ignore[union-attr]
    assert node.types == ("object",)


def test_public_surface() -> None:
    """The schema package exports exactly its curated names."""
    assert sorted(schema.__all__) == sorted(
        [
            "KUBERNETES_VERSION",
            "SchemaNode",
            "definition_name_for_gvk",
            "definitions",
            "node_for_definition",
            "node_for_gvk",
            "CompiledSchema",
            "Result",
            "SchemaError",
            "compile_schema",
            "compiled_for_gvk",
            "strict_decoding_message",
            "zero_object_for_gvk",
        ]
    )


def test_zero_object_has_the_non_pointer_structs() -> None:
    """A Deployment's zero value holds spec.strategy and the template (Go value fields), a null
    selector (a pointer without omitempty), no rollingUpdate (an omitempty pointer)."""
    zero = schema.zero_object_for_gvk("apps", "v1", "Deployment")
    assert zero["spec"]["strategy"] == {}
    assert zero["spec"]["selector"] is None
    assert zero["spec"]["template"]["metadata"] == {}
    assert "securityContext" not in zero["spec"]["template"]["spec"]
    assert schema.zero_object_for_gvk("example.com", "v1", "Widget") == {}


def test_enforced_enums_are_upstream_enums() -> None:
    """Every enum the compiled schemas enforce is one upstream's OpenAPI carries for that field."""
    from kplane.api.schema import builtin

    defs = builtin.validation_definitions()
    for name, prop in builtin._ENFORCED_ENUMS:
        where, values = builtin.enums(name)[prop]
        assert where == "scalar"
        assert defs[name]["properties"][prop]["enum"] == list(values)
    assert (
        "enum" not in builtin.definitions()["io.k8s.api.core.v1.Container"]["properties"]["imagePullPolicy"]
    )
