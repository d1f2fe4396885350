"""SharedInformerFactory: one informer per resource whatever the ref, start/sync/shutdown."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kplane.client import dynamic, rest
from kplane.client.models import core_v1
from kplane.informers import factory as factory_mod
from kplane.informers import handlers as handlers_mod
from kplane.informers import informer as informer_mod
from kplane.testing import AutoAdvancingClock, ControlPlane, DropWatches, FaultPlan, Match, eventually
from tests.unit.informers import _fake, _live


async def test_factory_shares_informers_and_strips_managed_fields(tmp_path: Path) -> None:
    """Two requests for the same resource share one informer; cached objects lack managedFields."""
    async with ControlPlane() as srv, _live.clients(srv) as dc:
        await _live.make_namespace(dc, "fac")
        cms = dc.resource(_live.CONFIGMAPS, "fac")
        await cms.create({"metadata": {"name": "one"}, "data": {"k": "v"}})
        factory = factory_mod.SharedInformerFactory(dc, factory_mod.FactoryOptions(namespace="fac"))
        first = await factory.informer(_live.CONFIGMAPS)
        again = await factory.informer(dynamic.Resource("", "v1", "configmaps", "ConfigMap", True))
        other = await factory.informer(_live.LEASES)
        assert first is again and first is not other
        factory.start()
        async with asyncio.timeout(10):
            await factory.wait_for_cache_sync()
        obj = (await factory.lister(_live.CONFIGMAPS)).namespaced("fac").get("one")
        assert obj["data"] == {"k": "v"} and "managedFields" not in obj["metadata"]
        await cms.create({"metadata": {"name": "two"}})
        await _fake.until(lambda: len(first.store) == 2)
        await factory.shutdown()
        with pytest.raises(informer_mod.InformerStateError):
            await factory.informer(_live.EVENTS)


async def test_informers_over_model_classes_and_resource_names() -> None:
    """A model class gives typed objects in cache, lister and handlers; names share the dict informer."""
    async with ControlPlane() as cp:
        dc = cp.client.dynamic
        await dc.resource("configmaps", "default").create({"metadata": {"name": "one"}, "data": {"k": "v"}})
        factory = factory_mod.SharedInformerFactory(dc)
        typed_inf = await factory.informer(core_v1.ConfigMap)
        by_plural = await factory.informer("configmaps")
        assert by_plural is await factory.informer("ConfigMap") is await factory.informer(_live.CONFIGMAPS)
        assert typed_inf is not by_plural and typed_inf is await factory.informer(core_v1.ConfigMap)
        handled: list[core_v1.ConfigMap] = []
        typed_inf.add_event_handler(handlers_mod.HandlerFuncs(add=handled.append))
        factory.start()
        async with asyncio.timeout(10):
            await factory.wait_for_cache_sync()
        cached = (await factory.lister(core_v1.ConfigMap)).namespaced("default").get("one")
        assert isinstance(cached, core_v1.ConfigMap) and cached.data == {"k": "v"}
        assert cached.metadata is not None and cached.metadata.managed_fields is None
        await eventually(lambda: [h.metadata.name for h in handled if h.metadata] == ["one"])
        assert isinstance(by_plural.store.get_by_key("default/one"), dict)
        await factory.shutdown()
    with pytest.raises(TypeError, match="not a kplane model class"):
        await factory_mod.SharedInformerFactory(dc).informer(int)  # type: ignore[call-overload]


async def test_typed_informer_tracks_resource_versions_across_dropped_watches(
    kplane_clock: AutoAdvancingClock,
) -> None:
    """A model-class informer reads ``metadata.resourceVersion`` of its typed objects: a cut watch
    resumes from the last event seen, so no older state is replayed into the cache or handlers."""
    plan = FaultPlan(DropWatches(after_lines=(2, 2), match=Match(verbs=("watch",))), seed=1)
    async with ControlPlane(faults=plan) as cp, rest.RESTClient(cp.config, _clock=kplane_clock) as rc:
        dc = dynamic.DynamicClient(rc, cp.client.mapper)
        cms = dc.resource("configmaps", "default")
        await cms.create({"metadata": {"name": "one"}, "data": {"n": "0"}})
        factory = factory_mod.SharedInformerFactory(dc, clock=kplane_clock)
        inf = await factory.informer(core_v1.ConfigMap)
        updates: list[tuple[int, int]] = []

        def rv(obj: core_v1.ConfigMap) -> int:
            assert obj.metadata is not None and obj.metadata.resource_version
            return int(obj.metadata.resource_version)

        def on_update(old: core_v1.ConfigMap, new: core_v1.ConfigMap) -> None:
            updates.append((rv(old), rv(new)))

        inf.add_event_handler(handlers_mod.HandlerFuncs(update=on_update))
        factory.start()
        async with asyncio.timeout(10):
            await factory.wait_for_cache_sync()
        last = ""
        for n in range(1, 9):
            cm = await cms.update({**await cms.get("one"), "data": {"n": str(n)}})
            last = cm["metadata"]["resourceVersion"]
        await eventually(lambda: inf.last_sync_resource_version == last, timeout=20)
        await eventually(lambda: len(updates) == 8, timeout=5)
        cached = (await factory.lister(core_v1.ConfigMap)).namespaced("default").get("one")
        assert cached.data == {"n": "8"}
        assert plan.count(DropWatches) >= 3  # cut and resumed several times
        assert all(new > old for old, new in updates), updates  # never back in time
        await factory.shutdown()
    assert len(updates) == 8, updates  # each write seen once: nothing replayed
