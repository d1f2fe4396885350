"""The dynamic client against a real kplane server: every verb, options and typed errors."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from kplane.api import errors
from kplane.client import ALL, Config, dynamic, typed
from kplane.client.options import ListOptions

CM = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
DEPLOY = dynamic.Resource("apps", "v1", "deployments", "Deployment", namespaced=True)


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"t": "dyn"}}, "data": dict(data)}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def test_resource_paths() -> None:
    """Paths follow the API layout for core, grouped, namespaced and cluster-scoped resources."""
    ns = dynamic.Resource("", "v1", "namespaces", "Namespace", namespaced=False)
    assert CM.path("a", "b", "status") == "/api/v1/namespaces/a/configmaps/b/status"
    assert CM.path(None) == "/api/v1/configmaps"
    assert DEPLOY.path("a") == "/apis/apps/v1/namespaces/a/deployments"
    assert ns.path("ignored", "x") == "/api/v1/namespaces/x"


async def test_create_get_update_and_stale_update_conflicts(client: typed.Client, namespace: str) -> None:
    """Create then get round-trips; an update with a stale resourceVersion raises upstream's Conflict."""
    cms = client.resource(CM, namespace=namespace)
    created = await cms.create(cm("a", k="1"))
    assert created["kind"] == "ConfigMap" and created["metadata"]["namespace"] == namespace
    got = await cms.get("a")
    assert got["data"] == {"k": "1"}
    got["data"]["k"] = "2"
    updated = await cms.update(got)
    assert updated["data"]["k"] == "2"
    with pytest.raises(errors.Conflict) as info:
        await cms.update(got)  # Still carries the old resourceVersion.
    assert str(info.value) == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_no_namespace_means_the_context_namespace(client: typed.Client, namespace: str) -> None:
    """Without a namespace, verbs use the kubeconfig context's (as kubectl); ALL is explicit."""
    assert client.config.namespace == "default"
    await client.resource(CM, "default").create(cm("in-default"))
    await client.resource(CM, namespace).create(cm("elsewhere"))
    unbound = client.resource(CM)
    assert (await unbound.get("in-default"))["metadata"]["namespace"] == "default"
    here = {o["metadata"]["name"] for o in (await unbound.list())["items"]}
    everywhere = {o["metadata"]["name"] for o in (await unbound.list(namespace=ALL))["items"]}
    assert "in-default" in here and "elsewhere" not in here
    assert {"in-default", "elsewhere"} <= everywhere
    with pytest.raises(ValueError, match="namespace=ALL addresses a collection"):
        await unbound.get("in-default", namespace=ALL)


async def test_namespace_required_without_any_default(config: Config) -> None:
    """With no namespace anywhere (not even the context's) a namespaced get raises ValueError."""
    async with typed.Client(dataclasses.replace(config, namespace="")) as c:
        with pytest.raises(ValueError, match="namespace is required"):
            await c.resource(CM).get("x")


async def test_object_namespace_used_for_create(client: typed.Client, namespace: str) -> None:
    """An unbound client creates in the object's metadata.namespace."""
    obj = cm("fromobj")
    obj["metadata"]["namespace"] = namespace
    out = await client.resource(CM).create(obj)
    assert out["metadata"]["namespace"] == namespace


async def test_invalid_has_causes(client: typed.Client, namespace: str) -> None:
    """An invalid object raises Invalid whose causes name the offending field."""
    with pytest.raises(errors.Invalid) as info:
        await client.resource(CM, namespace=namespace).create(cm("Bad_Name"))
    assert any(c.field == "metadata.name" for c in info.value.causes)


@pytest.mark.parametrize(
    ("patch_type", "patch"),
    [
        ("merge", {"data": {"k": "patched"}}),
        ("json", [{"op": "replace", "path": "/data/k", "value": "patched"}]),
        ("strategic", {"data": {"k": "patched"}}),
    ],
    ids=["merge", "json", "strategic"],
)
async def test_patch_types(
    client: typed.Client, namespace: str, patch_type: dynamic.PatchType, patch: Any
) -> None:
    """Merge, JSON and strategic-merge patches each change the field they target."""
    cms = client.resource(CM, namespace=namespace)
    await cms.create(cm("p", k="v"))
    out = await cms.patch("p", patch, patch_type=patch_type)
    assert out["data"] == {"k": "patched"}


async def test_server_side_apply(client: typed.Client, namespace: str) -> None:
    """Apply creates the object, and a second apply by the same manager changes it."""
    cms = client.resource(CM, namespace=namespace)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"k": "one"}}
    out = await cms.patch("ssa", body, patch_type="apply", field_manager="alice")
    assert out["data"] == {"k": "one"}
    again = await cms.patch("ssa", {**body, "data": {"k": "two"}}, patch_type="apply", field_manager="alice")
    assert again["data"] == {"k": "two"}


async def test_server_side_apply_conflict(client: typed.Client, namespace: str) -> None:
    """Another manager changing an applied field conflicts unless it forces."""
    cms = client.resource(CM, namespace=namespace)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"k": "one"}}
    await cms.patch("ssa", body, patch_type="apply", field_manager="alice")
    other = {**body, "data": {"k": "two"}}
    with pytest.raises(errors.Conflict):
        await cms.patch("ssa", other, patch_type="apply", field_manager="bob")
    forced = await cms.patch("ssa", other, patch_type="apply", field_manager="bob", force=True)
    assert forced["data"] == {"k": "two"}


async def test_dry_run_does_not_persist(client: typed.Client, namespace: str) -> None:
    """A dry-run create returns the object but stores nothing."""
    cms = client.resource(CM, namespace=namespace)
    out = await cms.create(cm("dry"), dry_run=True)
    assert out["metadata"]["name"] == "dry"
    with pytest.raises(errors.NotFound):
        await cms.get("dry")


async def test_field_validation_strict_rejects_unknown_field(client: typed.Client, namespace: str) -> None:
    """fieldValidation=Strict turns an unknown field into a BadRequest naming it."""
    obj = {**cm("strict"), "bogus": 1}
    with pytest.raises(errors.BadRequest, match="bogus"):
        await client.resource(CM, namespace=namespace).create(obj, field_validation="Strict")


async def test_delete_preconditions(client: typed.Client, namespace: str) -> None:
    """A delete whose uid precondition does not match raises Conflict and keeps the object."""
    cms = client.resource(CM, namespace=namespace)
    await cms.create(cm("pre"))
    with pytest.raises(errors.Conflict, match="the UID in the precondition"):
        await cms.delete("pre", preconditions={"uid": "not-the-uid"})
    assert (await cms.get("pre"))["metadata"]["name"] == "pre"
    status = await cms.delete("pre", propagation_policy="Background")
    assert status.get("status") == "Success" or status.get("kind") == "ConfigMap"
    with pytest.raises(errors.NotFound):
        await cms.get("pre")


async def test_list_paging_and_list_all(client: typed.Client, namespace: str) -> None:
    """``list`` returns one page with a continue token; ``list_all`` follows tokens to every item."""
    cms = client.resource(CM, namespace=namespace)
    for i in range(5):
        await cms.create(cm(f"item-{i}"))
    page = await cms.list(ListOptions(limit=2, label_selector="t=dyn"))
    assert len(page["items"]) == 2 and page["metadata"]["continue"]
    items, rv = await cms.list_all(ListOptions(limit=2, label_selector="t=dyn"))
    assert sorted(i["metadata"]["name"] for i in items) == [f"item-{i}" for i in range(5)]
    assert rv and all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in items)


async def test_delete_collection_by_label(client: typed.Client, namespace: str) -> None:
    """delete_collection removes exactly the labelled objects."""
    cms = client.resource(CM, namespace=namespace)
    await cms.create(cm("gone-1"))
    keep = cm("kept")
    keep["metadata"]["labels"] = {"t": "keep"}
    await cms.create(keep)
    await cms.delete_collection(ListOptions(label_selector="t=dyn"))
    items, _ = await cms.list_all()
    assert [i["metadata"]["name"] for i in items if i["metadata"]["name"] != "kube-root-ca.crt"] == ["kept"]


async def test_watch_sees_changes(client: typed.Client, namespace: str) -> None:
    """A watch from a list's resourceVersion reports ADDED, MODIFIED and DELETED in order."""
    cms = client.resource(CM, namespace=namespace)
    _, rv = await cms.list_all()
    events: list[tuple[str, str]] = []

    async def consume() -> None:
        async for ev in cms.watch(ListOptions(resource_version=rv, timeout_seconds=5, allow_bookmarks=False)):
            events.append((ev.type, ev.object["metadata"]["name"]))
            if ev.type == "DELETED":
                return

    task = asyncio.create_task(consume())
    await cms.create(cm("w"))
    await cms.patch("w", {"data": {"x": "y"}})
    await cms.delete("w")
    await asyncio.wait_for(task, 5)
    assert [e for e in events if e[1] == "w"] == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_status_and_scale_subresources(client: typed.Client, namespace: str) -> None:
    """Scale reads the replica count; a status update changes status only."""
    deps = client.resource(DEPLOY, namespace=namespace)
    await deps.create(deployment("d", replicas=2))
    scale = await deps.get_subresource("d", "scale")
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 2
    await deps.patch("d", {"spec": {"replicas": 3}}, subresource="scale")
    assert (await deps.get("d"))["spec"]["replicas"] == 3
    current = await deps.get("d")
    current["status"] = {"observedGeneration": 99}
    current["spec"]["replicas"] = 7
    out = await deps.update(current, subresource="status")
    assert out["status"]["observedGeneration"] == 99 and out["spec"]["replicas"] == 3


async def test_resolves_names_through_mapper(client: typed.Client, namespace: str) -> None:
    """A client built from a short name resolves it on first use."""
    cms = client.resource("cm", namespace=namespace)
    await cms.create(cm("via-short"))
    assert (await cms.resource()) == CM
    assert (await cms.get("via-short"))["metadata"]["name"] == "via-short"


async def test_pages_iterate_with_async_for(client: typed.Client, namespace: str) -> None:
    """``pages`` yields each page's items, following continue tokens, in the server's order."""
    cms = client.resource(CM, namespace)
    for i in range(5):
        obj = cm(f"p{i}")
        obj["metadata"]["labels"] = {"t": "pages"}
        await cms.create(obj)
    sizes: list[int] = []
    names: list[str] = []
    async for items in cms.pages(ListOptions(limit=2, label_selector="t=pages")):
        sizes.append(len(items))
        names += [o["metadata"]["name"] for o in items]
        assert all(o["kind"] == "ConfigMap" for o in items)
    assert sizes == [2, 2, 1]
    assert names == [f"p{i}" for i in range(5)]
