"""Server-side apply: ownership, re-apply, conflicts, force, field removal, list semantics."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from kplane.api import apply as ssa
from kplane.api import errors, schema
from kplane.api.apply import FieldSet

DEPLOY = schema.node_for_gvk("apps", "v1", "Deployment")
CONTAINERS = ("f:spec", "f:template", "f:spec", "f:containers")
T0, T1, T2, T3 = (f"2026-01-01T00:00:0{i}Z" for i in range(4))


def deployment(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
            },
        },
    }
    body["spec"].update(spec)
    return body


def do_apply(
    live: dict[str, Any] | None, cfg: dict[str, Any], manager: str = "kubectl", **kw: Any
) -> dict[str, Any]:
    kw.setdefault("force", False)
    kw.setdefault("now", T0)
    return ssa.apply(live, cfg, manager=manager, api_version="apps/v1", schema=DEPLOY, **kw)


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"] + "/" + e["operation"]: e for e in obj["metadata"]["managedFields"]}


def owned(obj: dict[str, Any], key: str) -> FieldSet:
    return FieldSet.from_fields_v1(entries(obj)[key]["fieldsV1"])


def test_create_records_apply_ownership() -> None:
    """Applying to nothing creates the object with one Apply entry owning what was applied."""
    obj = do_apply(None, deployment())
    [entry] = obj["metadata"]["managedFields"]
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert (entry["manager"], entry["operation"], entry["time"]) == ("kubectl", "Apply", T0)
    assert orjson.dumps(entry["fieldsV1"]).decode() == (
        '{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},'
        '"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":'
        '{"k:{\\"name\\":\\"nginx\\"}":{"f:image":{},"f:name":{},".":{}}}}}}}'
    )
    assert obj["spec"]["replicas"] == 3


def test_reapply_same_is_a_no_op() -> None:
    """Re-applying the same config changes neither the object nor the entry's time."""
    first = do_apply(None, deployment())
    again = do_apply(first, deployment(), now=T1)
    assert again == first


def test_conflict_with_other_manager() -> None:
    """A different value for a field another manager owns is a conflict naming field and manager."""
    obj = do_apply(None, deployment())
    scaled = ssa.update_managed_fields(
        obj,
        {**obj, "spec": {**obj["spec"], "replicas": 7}},
        manager="kubectl-client-side-apply",
        api_version="apps/v1",
        schema=DEPLOY,
        now=T1,
    )
    with pytest.raises(ssa.ApplyConflict) as info:
        do_apply(scaled, deployment(replicas=5), now=T2)
    err = info.value
    assert str(err) == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: '
        ".spec.replicas"
    )
    status = err.to_status()
    assert status["code"] == 409 and status["reason"] == "Conflict"
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
            "field": ".spec.replicas",
        }
    ]


def test_same_value_is_shared_not_a_conflict() -> None:
    """Applying the value another manager set shares ownership instead of conflicting."""
    obj = do_apply(None, deployment())
    other = do_apply(
        obj,
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}},
        manager="other",
        now=T1,
    )
    assert owned(other, "other/Apply").has(("f:spec", "f:replicas"))
    assert owned(other, "kubectl/Apply").has(("f:spec", "f:replicas"))


def test_force_moves_ownership() -> None:
    """With force the applier takes the field and the previous owner loses it."""
    obj = do_apply(None, deployment())
    cfg = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 9},
    }
    with pytest.raises(ssa.ApplyConflict) as info:
        do_apply(obj, cfg, manager="hpa")
    assert str(info.value) == 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
    forced = do_apply(obj, cfg, manager="hpa", force=True, now=T1)
    assert forced["spec"]["replicas"] == 9
    assert owned(forced, "hpa/Apply").has(("f:spec", "f:replicas"))
    assert not owned(forced, "kubectl/Apply").has(("f:spec", "f:replicas"))
    assert entries(forced)["hpa/Apply"]["time"] == T1


def test_multiple_conflicts_message() -> None:
    """Several conflicts are grouped by manager, one "- path" line each."""
    obj = do_apply(None, deployment())
    cfg = deployment(replicas=1)
    cfg["metadata"]["labels"] = {"app": "other"}
    with pytest.raises(ssa.ApplyConflict) as info:
        do_apply(obj, cfg, manager="m2")
    assert (
        str(info.value) == 'Apply failed with 2 conflicts: conflicts with "kubectl":\n'
        "- .metadata.labels.app\n- .spec.replicas"
    )


def test_dropped_field_owned_alone_is_removed() -> None:
    """A field the applier alone owned and no longer applies is removed from the object."""
    obj = do_apply(None, deployment(paused=True))
    again = do_apply(obj, deployment(), now=T1)
    assert "paused" not in again["spec"]
    assert not owned(again, "kubectl/Apply").has(("f:spec", "f:paused"))
    assert entries(again)["kubectl/Apply"]["time"] == T1


def test_dropped_field_co_owned_is_kept() -> None:
    """A dropped field another manager also owns stays; only the applier's ownership goes."""
    obj = do_apply(None, deployment(paused=True))
    obj = do_apply(
        obj,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"paused": True},
        },
        manager="other",
        now=T1,
    )
    again = do_apply(obj, deployment(), now=T2)
    assert again["spec"]["paused"] is True
    assert not owned(again, "kubectl/Apply").has(("f:spec", "f:paused"))
    assert owned(again, "other/Apply").has(("f:spec", "f:paused"))


def test_list_map_entries_are_owned_per_entry() -> None:
    """Containers merge by name: each applier owns its own entry and others' entries survive."""
    obj = do_apply(None, deployment())
    sidecar = deployment()
    del sidecar["spec"]["replicas"], sidecar["spec"]["selector"]
    sidecar["spec"]["template"]["spec"]["containers"] = [{"name": "log", "image": "busybox"}]
    del sidecar["spec"]["template"]["metadata"], sidecar["metadata"]["labels"]
    both = do_apply(obj, sidecar, manager="injector", now=T1)
    names = [c["name"] for c in both["spec"]["template"]["spec"]["containers"]]
    assert names == ["nginx", "log"]
    assert owned(both, "injector/Apply").has((*CONTAINERS, 'k:{"name":"log"}'))
    assert owned(both, "kubectl/Apply").has((*CONTAINERS, 'k:{"name":"nginx"}', "f:image"))
    # The injector withdraws its container: it alone owned the entry, so the entry goes.
    sidecar["spec"]["template"]["spec"]["containers"] = []
    gone = do_apply(both, sidecar, manager="injector", now=T2)
    assert [c["name"] for c in gone["spec"]["template"]["spec"]["containers"]] == ["nginx"]


def test_set_list_finalizers() -> None:
    """Finalizers are a set: members are owned per value and union across managers."""
    obj = do_apply(None, {**deployment(), "metadata": {"name": "web", "finalizers": ["a"]}})
    cfg = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "finalizers": ["b"]}}
    both = do_apply(obj, cfg, manager="ctrl", now=T1)
    assert both["metadata"]["finalizers"] == ["a", "b"]
    assert owned(both, "ctrl/Apply").has(("f:metadata", "f:finalizers", 'v:"b"'))
    assert entries(both)["ctrl/Apply"]["fieldsV1"] == {"f:metadata": {"f:finalizers": {'v:"b"': {}}}}


def test_atomic_list_is_replaced_and_owned_whole() -> None:
    """An atomic list (container args) is replaced as a whole and conflicts as one field."""
    cfg = deployment()
    cfg["spec"]["template"]["spec"]["containers"][0]["args"] = ["a", "b"]
    obj = do_apply(None, cfg)
    args = (*CONTAINERS, 'k:{"name":"nginx"}', "f:args")
    assert owned(obj, "kubectl/Apply").has(args)
    cfg2 = copy.deepcopy(cfg)
    cfg2["spec"]["template"]["spec"]["containers"][0]["args"] = ["c"]
    with pytest.raises(ssa.ApplyConflict) as info:
        do_apply(obj, cfg2, manager="other")
    assert [c.field for c in info.value.conflicts] == ['.spec.template.spec.containers[name="nginx"].args']
    assert do_apply(obj, cfg2, now=T1)["spec"]["template"]["spec"]["containers"][0]["args"] == ["c"]


def test_update_after_apply_takes_ownership() -> None:
    """An Update that changes an applied field takes it; the applier then conflicts with it."""
    obj = do_apply(None, deployment())
    edited = copy.deepcopy(obj)
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    obj = ssa.update_managed_fields(
        obj, edited, manager="kubectl-edit", api_version="apps/v1", schema=DEPLOY, now=T1
    )
    image = (*CONTAINERS, 'k:{"name":"nginx"}', "f:image")
    assert owned(obj, "kubectl-edit/Update").has(image)
    assert not owned(obj, "kubectl/Apply").has(image)
    with pytest.raises(ssa.ApplyConflict) as info:
        do_apply(obj, deployment(), now=T2)
    assert str(info.value).endswith(
        'conflict with "kubectl-edit" using apps/v1: .spec.template.spec.containers[name="nginx"].image'
    )


def test_apply_to_untracked_object_attributes_before_first_apply() -> None:
    """A live object without managedFields gets a before-first-apply Update entry first."""
    live = deployment()
    with pytest.raises(ssa.ApplyConflict) as info:
        do_apply(live, deployment(replicas=2), manager="m")
    assert 'conflict with "before-first-apply" using apps/v1: .spec.replicas' in str(info.value)


def test_kubectl_migrates_from_client_side_apply() -> None:
    """kubectl may take fields whose live value still equals the last-applied annotation."""
    old_cfg = deployment()
    created = ssa.update_managed_fields(
        None,
        {
            **old_cfg,
            "metadata": {
                **old_cfg["metadata"],
                "annotations": {ssa.LAST_APPLIED_ANNOTATION: orjson.dumps(old_cfg).decode()},
            },
        },
        manager="kubectl-client-side-apply",
        api_version="apps/v1",
        schema=DEPLOY,
        now=T0,
    )
    result = do_apply(created, deployment(replicas=5), now=T1)
    assert result["spec"]["replicas"] == 5
    assert owned(result, "kubectl/Apply").has(("f:spec", "f:replicas"))
    last = orjson.loads(result["metadata"]["annotations"][ssa.LAST_APPLIED_ANNOTATION])
    assert last["spec"]["replicas"] == 5
    with pytest.raises(ssa.ApplyConflict):
        do_apply(created, deployment(replicas=5), manager="not-kubectl", now=T1)


def test_apply_rejects_managed_fields_in_config() -> None:
    """An apply config that carries managedFields is a 400."""
    cfg = {**deployment(), "metadata": {"name": "web", "managedFields": []}}
    with pytest.raises(errors.BadRequest) as info:
        do_apply(None, cfg)
    assert info.value.code == 400


def test_fields_of_schemaless_treats_lists_atomic() -> None:
    """Without a schema, maps are granular and lists atomic."""
    s = ssa.fields_of({"spec": {"a": [1, 2], "b": {"c": 1}}}, None)
    assert set(s.paths()) == {("f:spec",), ("f:spec", "f:a"), ("f:spec", "f:b"), ("f:spec", "f:b", "f:c")}


def test_inputs_are_not_modified() -> None:
    """apply never modifies the live object or the config."""
    live = do_apply(None, deployment(paused=True))
    cfg = deployment()
    before_live, before_cfg = copy.deepcopy(live), copy.deepcopy(cfg)
    do_apply(live, cfg, now=T3)
    assert live == before_live and cfg == before_cfg
