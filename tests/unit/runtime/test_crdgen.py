"""Types → CRD and RBAC manifests (``kplane.runtime.crdgen``, ``schemagen``, ``rbac``, ``kplane generate``).

Expected shapes follow controller-gen's output rules (reference/controllers.md §7.2-7.3, CT
pkg/crd/schema.go, pkg/crd/markers/*.go, pkg/rbac/parser.go).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest
import yaml

from kplane.cli import main as cli
from kplane.runtime import crdgen, markers, naming, rbac, schemagen
from kplane.runtime.webhook import conversion
from tests.unit.runtime.crdtypes import widgets


class Node(msgspec.Struct):
    children: list[Node]


def spec_schema() -> dict[str, Any]:
    crd = crdgen.crds([widgets.Widget, widgets.WidgetV1beta1])[0]
    v1 = crd["spec"]["versions"][0]
    assert v1["name"] == "v1"
    result: dict[str, Any] = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return result


def test_crd_names_versions_and_subresources() -> None:
    [crd] = crdgen.crds([widgets.WidgetV1beta1, widgets.Widget])
    assert crd["metadata"] == {"name": "widgets.gen.kplane.dev"}
    spec = crd["spec"]
    assert spec["group"] == "gen.kplane.dev"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "Widget",
        "listKind": "WidgetList",
        "plural": "widgets",
        "singular": "widget",
        "shortNames": ["wdg"],
        "categories": ["all"],
    }
    v1, v1beta1 = spec["versions"]  # version priority: GA before beta
    assert (v1["name"], v1["storage"], v1["served"]) == ("v1", True, True)
    assert (v1beta1["name"], v1beta1["storage"]) == ("v1beta1", False)
    assert v1["subresources"] == {
        "status": {},
        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
    }
    assert "subresources" not in v1beta1
    assert v1["additionalPrinterColumns"] == [
        {"jsonPath": ".spec.image", "name": "Image", "type": "string"},
        {"jsonPath": ".spec.replicas", "name": "Replicas", "type": "integer"},
    ]
    root = v1["schema"]["openAPIV3Schema"]
    # controller-gen: metadata is only `type: object`; the root's description is the type's doc.
    assert root["properties"]["metadata"] == {"type": "object"}
    assert root["description"] == "A widget: an image run a number of times."
    assert root["required"] == ["spec"]
    assert root["properties"]["apiVersion"]["type"] == "string"
    assert root["properties"]["status"] == {
        "type": "object",
        "properties": {"observedGeneration": {"type": "integer"}, "replicas": {"type": "integer"}},
    }
    assert v1beta1["schema"]["openAPIV3Schema"]["properties"]["spec"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


def test_field_markers() -> None:
    props = spec_schema()["properties"]
    assert props["image"] == {
        "type": "string",
        "minLength": 1,
        "pattern": "^[a-z]",
        "description": "The container image.",
    }
    assert props["replicas"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 10,
        "default": 1,
        "description": "How many copies run.",
    }
    assert props["mode"] == {"type": "string", "enum": ["Fast", "Slow"], "description": "How a widget runs."}
    assert props["tier"] == {"type": "string", "enum": ["gold", "silver"]}
    assert props["ports"] == {
        "type": "array",
        "maxItems": 4,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            "type": "object",
            "description": "A named port.",
            "required": ["name", "number"],
            "properties": {
                "name": {"type": "string", "maxLength": 15},
                "number": {"type": "integer", "minimum": 1, "maximum": 65535},
            },
        },
    }
    assert props["tags"] == {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "x-kubernetes-list-type": "set",
    }
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert props["extra"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["size"] == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    assert props["ratio"] == {
        "type": "integer",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 100,
        "exclusiveMaximum": True,
    }
    assert props["started"] == {"type": "string", "format": "date-time"}
    assert props["template"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-embedded-resource": True,
    }
    assert props["note"] == {"type": "string", "default": "none"}
    assert spec_schema()["required"] == ["image", "note"]


def test_default_cel_message_and_presence_markers() -> None:
    class S(msgspec.Struct, kw_only=True):
        a: Annotated[int, markers.XValidation("self > 1")]
        b: Annotated[int, markers.Optional]
        c: Annotated[str | None, markers.Required] = None
        d: Annotated[int, markers.XValidation("self % 2 == 0", message="must be even")] = 0

    schema = schemagen.schema_of(S)
    # controller-tools' default CEL message is "failed rule: <rule>"; an explicit one is kept.
    assert schema["properties"]["a"]["x-kubernetes-validations"] == [
        {"rule": "self > 1", "message": "failed rule: self > 1"}
    ]
    assert schema["properties"]["d"]["x-kubernetes-validations"] == [
        {"rule": "self % 2 == 0", "message": "must be even"}
    ]
    assert schema["required"] == ["a", "c"]


def test_refused_types() -> None:
    class Floaty(msgspec.Struct):
        x: float

    with pytest.raises(schemagen.SchemaError, match="float"):
        schemagen.schema_of(Floaty)
    assert schemagen.schema_of(Floaty, schemagen.Options(allow_dangerous_types=True))["properties"]["x"] == {
        "type": "number"
    }

    with pytest.raises(schemagen.SchemaError, match="recursive"):
        schemagen.schema_of(Node)
    with pytest.raises(schemagen.SchemaError, match="unions"):
        schemagen.schema_of(int | bool)


def test_storage_version_rules() -> None:
    @markers.kind(group="x.dev", version="v1", kind="Thing")
    class A(msgspec.Struct):
        pass

    @markers.kind(group="x.dev", version="v2", kind="Thing")
    class B(msgspec.Struct):
        pass

    # controller-gen: "CRD for %s has no storage version" when several versions name none.
    with pytest.raises(crdgen.CRDError, match="has no storage version"):
        crdgen.crds([A, B])
    [single] = crdgen.crds([A])
    assert single["spec"]["versions"][0]["storage"] is True

    @markers.kind(group="x.dev", version="v3", kind="Thing", scope="Cluster")
    class C(msgspec.Struct):
        pass

    with pytest.raises(crdgen.CRDError, match="scope"):
        crdgen.crds([A, C])


def test_conversion_stanza_for_kinds_with_a_hub() -> None:
    @markers.kind(group="x.dev", version="v1", kind="Hubbed", storage=True)
    @conversion.hub
    class H1(msgspec.Struct):
        pass

    @markers.kind(group="x.dev", version="v2", kind="Hubbed")
    class H2(msgspec.Struct):
        pass

    service = crdgen.ConversionService("ops-system", "ops-webhook-service")
    [hubbed] = crdgen.crds([H1, H2], conversion=service)
    # The stanza kubebuilder's webhook_in_<plural>.yaml patch adds (apiextensions.k8s.io/v1
    # CustomResourceConversion: strategy Webhook, clientConfig.service, conversionReviewVersions).
    assert hubbed["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "name": "ops-webhook-service",
                    "namespace": "ops-system",
                    "path": "/convert",
                    "port": 443,
                }
            },
            "conversionReviewVersions": ["v1"],
        },
    }
    # Without a hub, or with one version only, no stanza (conversion None: only apiVersion changes).
    assert "conversion" not in crdgen.crds([H1], conversion=service)[0]["spec"]
    assert (
        "conversion"
        not in crdgen.crds([widgets.Widget, widgets.WidgetV1beta1], conversion=service)[0]["spec"]
    )


def test_kind_sets_gvk_and_names() -> None:
    assert widgets.Widget.gvk == ("gen.kplane.dev", "v1", "Widget")  # type: ignore[attr-defined]
    assert [naming.pluralize(w) for w in ("policy", "class", "box", "key", "person", "mesh", "widget")] == [
        "policies",
        "classes",
        "boxes",
        "keys",
        "people",
        "meshes",
        "widgets",
    ]


def test_rbac_rules_merged_as_controller_tools() -> None:
    rules = rbac.declared([widgets.WidgetReconciler, widgets.reconcile_other, widgets.Mode])
    [role] = rbac.roles(rules)
    assert role["kind"] == "ClusterRole" and role["metadata"] == {"name": "manager-role"}
    assert role["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["create", "get", "list", "patch", "watch"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "get", "list", "watch"]},
        {"apiGroups": ["gen.kplane.dev"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["gen.kplane.dev"],
            "resources": ["widgets/status"],
            "verbs": ["get", "patch", "update"],
        },
    ]


def test_rbac_merges_resources_then_groups_and_star_verbs() -> None:
    rules = [
        rbac.Rule(groups=("a",), resources=("x",), verbs=("get",)),
        rbac.Rule(groups=("a",), resources=("y",), verbs=("get",)),
        rbac.Rule(groups=("b",), resources=("x", "y"), verbs=("get",)),
        rbac.Rule(groups=("c",), resources=("z",), verbs=("get", "*")),
        rbac.Rule(groups=("c",), resources=("z",), verbs=("list",), namespace="ns"),
    ]
    cluster, namespaced = rbac.roles(rules)
    assert cluster["rules"] == [
        {"apiGroups": ["a", "b"], "resources": ["x", "y"], "verbs": ["get"]},
        {"apiGroups": ["c"], "resources": ["z"], "verbs": ["*"]},
    ]
    assert namespaced["kind"] == "Role" and namespaced["metadata"] == {
        "name": "manager-role",
        "namespace": "ns",
    }


def test_cli_generate_writes_manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).parents[3])
    out = tmp_path / "crd"
    assert (
        cli.main(["generate", "crds", "--paths", "tests.unit.runtime.crdtypes", "--output-dir", str(out)])
        == 0
    )
    path = out / "gen.kplane.dev_widgets.yaml"
    text = path.read_text()
    assert text.startswith("---\napiVersion: apiextensions.k8s.io/v1\n")
    assert yaml.safe_load(text) == crdgen.crds([widgets.Widget, widgets.WidgetV1beta1])[0]
    role_dir = tmp_path / "rbac"
    assert (
        cli.main(
            [
                "generate",
                "rbac",
                "--paths",
                "tests/unit/runtime/crdtypes/widgets.py",
                "--output-dir",
                str(role_dir),
            ]
        )
        == 0
    )
    role = yaml.safe_load((role_dir / "role.yaml").read_text())
    assert role["rules"] == rbac.roles(rbac.declared(vars(widgets).values()))[0]["rules"]
