"""Generated models and the typed client, against a real kplane server."""

from __future__ import annotations

import asyncio
import datetime
import pathlib

import msgspec
import pytest

from kplane.api import errors
from kplane.api.gvk import GroupVersionKind
from kplane.client import _modelgen, typed
from kplane.client.models import apps_v1, core_v1, meta_v1
from kplane.client.options import ListOptions


def make_deployment(name: str) -> apps_v1.Deployment:
    labels = {"app": name}
    container = core_v1.Container(
        name="c", image="nginx", resources=core_v1.ResourceRequirements(limits={"cpu": "500m"})
    )
    return apps_v1.Deployment(
        metadata=meta_v1.ObjectMeta(name=name),
        spec=apps_v1.DeploymentSpec(
            replicas=2,
            selector=meta_v1.LabelSelector(match_labels=labels),
            template=core_v1.PodTemplateSpec(
                metadata=meta_v1.ObjectMeta(labels=labels), spec=core_v1.PodSpec(containers=[container])
            ),
        ),
    )


def test_models_use_wire_names_and_omit_none() -> None:
    """Snake-case attributes encode to camelCase wire names and unset fields are omitted."""
    meta = meta_v1.ObjectMeta(name="x", resource_version="5", owner_references=[])
    assert msgspec.json.encode(meta) == b'{"name":"x","ownerReferences":[],"resourceVersion":"5"}'
    assert apps_v1.Deployment.gvk == GroupVersionKind("apps", "v1", "Deployment")


def test_decode_types() -> None:
    """Times decode to aware datetimes, int-or-string keeps either, quantities stay strings."""
    data = (
        b'{"metadata":{"creationTimestamp":"2026-01-02T03:04:05Z"},'
        b'"spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":1}},'
        b'"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1"}}}]}}}}'
    )
    dep = msgspec.json.decode(data, type=apps_v1.Deployment)
    assert dep.metadata is not None and dep.spec is not None
    assert dep.metadata.creation_timestamp == datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    assert dep.spec.strategy is not None and dep.spec.strategy.rolling_update is not None
    assert (dep.spec.strategy.rolling_update.max_surge, dep.spec.strategy.rolling_update.max_unavailable) == (
        "25%",
        1,
    )
    assert dep.spec.template is not None and dep.spec.template.spec is not None
    assert dep.spec.template.spec.containers is not None
    assert dep.spec.template.spec.containers[0].resources == core_v1.ResourceRequirements(limits={"cpu": "1"})


def test_generated_models_are_up_to_date(tmp_path: pathlib.Path) -> None:
    """Regenerating the models reproduces the committed modules' classes (ignoring formatting)."""
    _modelgen.generate(tmp_path)
    committed = pathlib.Path(_modelgen.__file__).parent / "models"
    fresh = sorted(p.name for p in tmp_path.glob("*.py"))
    assert fresh == sorted(p.name for p in committed.glob("*.py"))
    for name in fresh:

        def classes(path: pathlib.Path) -> list[str]:
            return [line.split("(")[0] for line in path.read_text().splitlines() if line.startswith("class ")]

        assert classes(tmp_path / name) == classes(committed / name), name


async def test_typed_create_get_list(client: typed.Client, namespace: str) -> None:
    """create/get/list return models; create fills in apiVersion and kind."""
    deps = client.resource(apps_v1.Deployment, namespace=namespace)
    created = await deps.create(make_deployment("web"))
    assert isinstance(created, apps_v1.Deployment)
    assert created.kind == "Deployment" and created.api_version == "apps/v1"
    assert created.metadata is not None and created.metadata.uid
    got = await deps.get("web")
    assert got.spec is not None and got.spec.replicas == 2
    page = await deps.list()
    assert isinstance(page, typed.ObjectList)
    assert [d.metadata.name for d in page.items if d.metadata] == ["web"]
    items, rv = await deps.list_all()
    assert rv and items[0].kind == "Deployment"


async def test_typed_update_conflict_and_not_found(client: typed.Client, namespace: str) -> None:
    """A typed update with a stale resourceVersion raises Conflict; a missing name raises NotFound."""
    cms = client.resource(core_v1.ConfigMap, namespace=namespace)
    first = await cms.create(core_v1.ConfigMap(metadata=meta_v1.ObjectMeta(name="c"), data={"a": "1"}))
    await cms.update(msgspec.structs.replace(first, data={"a": "2"}))
    with pytest.raises(errors.Conflict):
        await cms.update(msgspec.structs.replace(first, data={"a": "3"}))
    with pytest.raises(errors.NotFound):
        await cms.get("absent")


async def test_typed_watch(client: typed.Client, namespace: str) -> None:
    """A typed watch yields WatchEvents holding models."""
    cms = client.resource(core_v1.ConfigMap, namespace=namespace)
    _, rv = await cms.list_all()
    seen: list[typed.WatchEvent[core_v1.ConfigMap]] = []

    async def consume() -> None:
        async for ev in cms.watch(ListOptions(resource_version=rv, timeout_seconds=5, allow_bookmarks=False)):
            if ev.object.metadata and ev.object.metadata.name == "w":
                seen.append(ev)
                return

    task = asyncio.create_task(consume())
    await cms.create(core_v1.ConfigMap(metadata=meta_v1.ObjectMeta(name="w")))
    await asyncio.wait_for(task, 5)
    assert seen[0].type == "ADDED" and isinstance(seen[0].object, core_v1.ConfigMap)


async def test_cluster_scoped_typed(client: typed.Client, name: str) -> None:
    """Cluster-scoped kinds need no namespace."""
    nss = client.resource(core_v1.Namespace)
    created = await nss.create(core_v1.Namespace(metadata=meta_v1.ObjectMeta(name=name)))
    assert created.metadata is not None and created.metadata.name == name
    assert (await typed.TypedClient(client.rest).resource(core_v1.Namespace).resource()).namespaced is False
