"""SharedIndexInformer: handler delivery, late handlers, resync, tombstones, and a 10k-object storm."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from kplane._util import clock as clock_mod
from kplane.client import watch as watch_mod
from kplane.informers import handlers as handlers_mod
from kplane.informers import informer as informer_mod
from kplane.testing import AutoAdvancingClock, ControlPlane, eventually
from tests.unit.informers import _fake, _live


class Recorder:
    """A handler that logs every notification as a tuple."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.seen.append(("add", obj["metadata"]["name"], is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self.seen.append(("update", new["metadata"]["name"], old is new))

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, handlers_mod.DeletedFinalStateUnknown):
            self.seen.append(("tombstone", obj.key))
        else:
            self.seen.append(("delete", obj["metadata"]["name"]))


def _informer(
    lw: _fake.FakeListerWatcher, clock: clock_mod.Clock | None = None, **opts: Any
) -> informer_mod.SharedIndexInformer[Any]:
    return informer_mod.SharedIndexInformer(lw, informer_mod.InformerOptions(**opts), clock=clock)


async def test_handlers_see_every_change_in_order() -> None:
    """Adds (initial and later), updates and deletes reach the handler in server order."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a")
    inf = _informer(lw)
    rec = Recorder()
    reg = inf.add_event_handler(rec)
    inf.start()
    try:
        await inf.wait_for_sync()
        lw.upsert("b")
        lw.upsert("a", k="v")
        lw.remove("b")
        await _fake.until(lambda: len(rec.seen) == 4)
        assert reg.has_synced()
    finally:
        await inf.stop()
    assert rec.seen == [("add", "a", True), ("add", "b", False), ("update", "a", False), ("delete", "b")]


async def test_handler_added_after_start_gets_the_cache_first() -> None:
    """A late handler first receives on_add(obj, True) for every cached object, then live changes."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a")
    lw.upsert("b")
    inf = _informer(lw)
    inf.start()
    try:
        await inf.wait_for_sync()
        rec = Recorder()
        reg = inf.add_event_handler(rec)
        lw.upsert("c")
        await _fake.until(lambda: len(rec.seen) == 3)
        await _fake.until(reg.has_synced)
    finally:
        await inf.stop()
    assert sorted(rec.seen[:2]) == [("add", "a", True), ("add", "b", True)]
    assert rec.seen[2] == ("add", "c", False)


async def test_async_and_failing_handlers() -> None:
    """Async handlers are awaited in order; a handler that raises does not stop itself or others."""
    lw = _fake.FakeListerWatcher()
    inf = _informer(lw)
    got: list[str] = []

    async def slow_add(obj: Any) -> None:
        await asyncio.sleep(0)
        got.append(obj["metadata"]["name"])

    def bad_add(obj: Any) -> None:
        raise RuntimeError("boom")

    inf.add_event_handler(handlers_mod.HandlerFuncs(add=slow_add))
    inf.add_event_handler(handlers_mod.HandlerFuncs(add=bad_add))
    inf.start()
    try:
        await inf.wait_for_sync()
        for name in ("x", "y", "z"):
            lw.upsert(name)
        await _fake.until(lambda: len(got) == 3)
    finally:
        await inf.stop()
    assert got == ["x", "y", "z"]


async def test_relist_sends_tombstones_and_skips_unchanged_objects() -> None:
    """A relist after 410 deletes vanished objects as tombstones and is silent about unchanged ones."""
    lw = _fake.FakeListerWatcher()
    for name in "abc":
        lw.upsert(name)
    fake = clock_mod.FakeClock()
    inf = _informer(lw, fake, use_watch_list=False)
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start()
    try:
        await inf.wait_for_sync()
        fake.step(5)
        lw.end_watches()
        lw.remove("a")
        lw.upsert("b", k="v")
        lw.expire_below = lw.rv + 1
        lw.log.clear()
        await _fake.until(lambda: len(rec.seen) == 5, fake)
    finally:
        await inf.stop()
    assert rec.seen[3:] == [("tombstone", "default/a"), ("update", "b", False)]


async def test_per_handler_resync() -> None:
    """Only handlers with a resync period get on_update(obj, obj), at their own period (min 1 s)."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a")
    async with AutoAdvancingClock() as clock:
        inf = _informer(lw, clock, resync_period=10.0)
        fast, slow, none = Recorder(), Recorder(), Recorder()
        inf.add_event_handler(fast, resync_period=0.1)  # raised to 1 s; lowers the check period to 1 s
        inf.add_event_handler(slow)  # the informer's 10 s
        inf.add_event_handler(none, resync_period=0)
        inf.start()
        try:
            await inf.wait_for_sync()
            await clock.sleep(10.5)  # ten resync checks of fake time, at once
            await eventually(lambda: len(slow.seen) >= 2 and len(fast.seen) >= 11)
        finally:
            await inf.stop()
    resyncs = [len([s for s in r.seen if s[0] == "update"]) for r in (fast, slow, none)]
    assert resyncs == [10, 1, 0]
    assert all(s == ("update", "a", True) for s in fast.seen[1:])


async def test_transform_and_custom_index() -> None:
    """A transform shapes cached objects, a custom index answers by_index; no handlers after stop."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a", team="red")
    lw.upsert("b", team="blue")
    inf = _informer(lw, indexers={"team": lambda o: [o["data"].get("team", "")]})
    inf.set_transform(lambda o: {**o, "metadata": {**o["metadata"], "managedFields": None}})
    inf.start()
    try:
        await inf.wait_for_sync()
        with pytest.raises(informer_mod.InformerStateError):
            inf.set_transform(lambda o: o)
        assert [o["metadata"]["name"] for o in inf.store.by_index("team", "red")] == ["a"]
        assert inf.lister().namespaced("default").get("b")["metadata"]["managedFields"] is None
    finally:
        await inf.stop()
    with pytest.raises(informer_mod.InformerStateError):
        inf.add_event_handler(Recorder())


async def _bounded(coros: list[Any], limit: int = 32) -> None:
    sem = asyncio.Semaphore(limit)

    async def one(c: Any) -> None:
        async with sem:
            await c

    await asyncio.gather(*(one(c) for c in coros))


@pytest.mark.slow
async def test_informer_over_10000_objects_survives_a_storm() -> None:
    """Real server: an informer over 10,000 ConfigMaps equals the server after a storm of writes."""
    async with ControlPlane() as srv, _live.clients(srv) as dc:
        await _live.make_namespace(dc, "storm")
        cms = dc.resource(_live.CONFIGMAPS, "storm")
        await _bounded(
            [cms.create({"metadata": {"name": f"cm-{i}"}, "data": {"v": "0"}}) for i in range(10_000)]
        )
        inf: informer_mod.SharedIndexInformer[Any] = informer_mod.SharedIndexInformer(
            watch_mod.ListWatch(cms), informer_mod.InformerOptions()
        )
        view: dict[str, str] = {}  # what a handler reconstructs from notifications alone

        def put(obj: Any) -> None:
            view[obj["metadata"]["name"]] = obj["metadata"]["resourceVersion"]

        def drop(obj: Any) -> None:
            if isinstance(obj, handlers_mod.DeletedFinalStateUnknown):
                obj = obj.obj
            view.pop(obj["metadata"]["name"], None)

        inf.add_event_handler(handlers_mod.HandlerFuncs(add=put, update=lambda _o, n: put(n), delete=drop))
        inf.start()
        try:
            async with asyncio.timeout(30):
                await inf.wait_for_sync()
            assert len(inf.store) == 10_000
            rng = random.Random(7)
            ops: list[Any] = []
            chosen = rng.sample(range(10_000), 2500)
            for i in chosen[:1500]:
                ops.append(cms.patch(f"cm-{i}", {"data": {"v": "1"}}))
            for i in chosen[1500:]:
                ops.append(cms.delete(f"cm-{i}"))
            for i in range(10_000, 11_000):
                ops.append(cms.create({"metadata": {"name": f"cm-{i}"}, "data": {"v": "new"}}))
            rng.shuffle(ops)
            await _bounded(ops)
            items, _ = await cms.list_all()
            server = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in items}

            def cached() -> dict[str, str]:
                return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in inf.store.list()}

            await _fake.until(lambda: cached() == server and view == server, limit=30)
        finally:
            await inf.stop()
        assert len(server) == 10_000 and "cm-10999" in server
