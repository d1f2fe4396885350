"""Reflector: list/watch/relist semantics, against a scripted fake and against a real server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import watch as watch_mod
from kplane.client.options import ListOptions
from kplane.informers import reflector as reflector_mod
from kplane.informers import store as store_mod
from kplane.testing import ControlPlane
from tests.unit.informers import _fake, _live


@contextlib.asynccontextmanager
async def running(r: reflector_mod.Reflector) -> AsyncIterator[None]:
    task = asyncio.get_running_loop().create_task(r.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _state(store: store_mod.Store[Any]) -> dict[str, tuple[str, Any]]:
    return {store.key(o): (o["metadata"]["resourceVersion"], o.get("data")) for o in store.list()}


async def test_first_sync_uses_watch_list_and_then_follows_the_same_stream() -> None:
    """With WatchList the initial state arrives as one replace, and later events on the same stream."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a", k="1")
    store: store_mod.Store[Any] = store_mod.Store()
    r = reflector_mod.Reflector(lw, reflector_mod.StoreWriter(store), clock=clock_mod.FakeClock())
    async with running(r):
        await r.wait_for_sync()
        assert store.list_keys() == ["default/a"] and lw.lists == []
        lw.upsert("b", k="2")
        await _fake.until(lambda: len(store) == 2)
    assert lw.watches == [""] and r.relists == 1


async def test_falls_back_to_list_when_the_server_ignores_watch_list() -> None:
    """A stream that ends without the initial-events-end bookmark turns WatchList off for good."""
    lw = _fake.FakeListerWatcher()
    lw.support_watch_list = False
    lw.upsert("a")
    store: store_mod.Store[Any] = store_mod.Store()
    r = reflector_mod.Reflector(lw, reflector_mod.StoreWriter(store), clock=clock_mod.FakeClock())
    async with running(r):
        await r.wait_for_sync()
    assert lw.lists == ["0"] and store.list_keys() == ["default/a"]


class CutsWatchLists(_fake.FakeListerWatcher):
    """A server whose WatchList streams are cut after the first event (plain watches are not)."""

    async def watch(self, options: ListOptions) -> AsyncIterator[watch_mod.WatchEvent[dict[str, Any]]]:
        async for event in super().watch(options):
            yield event
            if options.send_initial_events:
                raise ConnectionResetError("cut mid-way through the initial events")


async def test_a_failed_watch_list_falls_back_to_list_for_that_round() -> None:
    """A WatchList cut mid-sync is followed by a LIST in the same round (client-go), not a retry loop."""
    lw = CutsWatchLists()
    lw.upsert("a")
    lw.upsert("b")
    store: store_mod.Store[Any] = store_mod.Store()
    r = reflector_mod.Reflector(lw, reflector_mod.StoreWriter(store), clock=clock_mod.FakeClock())
    async with running(r):
        await r.wait_for_sync()
        assert store.list_keys() == ["default/a", "default/b"]
        assert lw.watches[0] == "" and len(lw.lists) == 1  # one WatchList attempt, then one LIST
        lw.upsert("c")
        await _fake.until(lambda: len(store) == 3)


async def test_normal_watch_end_resumes_without_relisting() -> None:
    """A watch the server ends is reopened from the last resourceVersion; nothing is listed again."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a")
    store: store_mod.Store[Any] = store_mod.Store()
    fake = clock_mod.FakeClock()
    r = reflector_mod.Reflector(
        lw, reflector_mod.StoreWriter(store), reflector_mod.ReflectorOptions(use_watch_list=False), clock=fake
    )
    async with running(r):
        await r.wait_for_sync()
        lw.upsert("b")
        await _fake.until(lambda: len(store) == 2)
        fake.step(5)  # the watch lasted long enough not to count as a very short one
        lw.end_watches()
        lw.upsert("c")
        await _fake.until(lambda: len(store) == 3)
    assert r.relists == 1 and lw.watches == ["2", "4"] and lw.lists == ["0"]


async def test_gone_relists_and_reports_deletions_from_the_gap() -> None:
    """After 410 the reflector relists; objects deleted meanwhile leave the store."""
    lw = _fake.FakeListerWatcher()
    for name in "abc":
        lw.upsert(name)
    store: store_mod.Store[Any] = store_mod.Store()
    fake = clock_mod.FakeClock()
    r = reflector_mod.Reflector(
        lw, reflector_mod.StoreWriter(store), reflector_mod.ReflectorOptions(use_watch_list=False), clock=fake
    )
    async with running(r):
        await r.wait_for_sync()
        fake.step(5)
        lw.end_watches()
        lw.remove("a")
        lw.upsert("b", x="y")
        lw.expire_below = lw.rv + 1  # everything so far is compacted
        lw.log.clear()
        await _fake.until(lambda: r.relists == 2, fake)
    assert _state(store) == {"default/b": (str(lw.rv), {"x": "y"}), "default/c": ("4", {})}
    assert lw.lists[0] == "0" and lw.lists[1] == "4"  # relist "not older than" the last synced RV


async def test_transform_runs_once_before_the_store() -> None:
    """The transform sees every listed and watched object, and the store keeps what it returns."""
    lw = _fake.FakeListerWatcher()
    lw.upsert("a")
    seen: list[str] = []

    def transform(obj: Any) -> Any:
        seen.append(obj["metadata"]["name"])
        return {**obj, "data": {"t": "1"}}

    store: store_mod.Store[Any] = store_mod.Store()
    opts = reflector_mod.ReflectorOptions(transform=transform)
    r = reflector_mod.Reflector(lw, reflector_mod.StoreWriter(store), opts, clock=clock_mod.FakeClock())
    async with running(r):
        await r.wait_for_sync()
        lw.upsert("b")
        await _fake.until(lambda: len(store) == 2)
    assert seen == ["a", "b"] and all(o["data"] == {"t": "1"} for o in store.list())


def test_strip_managed_fields_removes_only_managed_fields() -> None:
    """strip_managed_fields drops metadata.managedFields and keeps the rest."""
    obj = {"metadata": {"name": "a", "managedFields": [{"manager": "x"}]}, "data": {"k": "v"}}
    assert reflector_mod.strip_managed_fields(obj) == {"metadata": {"name": "a"}, "data": {"k": "v"}}


class GatedListWatch:
    """Wraps a real ``ListWatch``: while closed, open watches fail and new ones wait for it to open."""

    def __init__(self, inner: watch_mod.ListWatch) -> None:
        self.inner = inner
        self.open = asyncio.Event()
        self.open.set()
        self.gone_seen = 0

    async def list(self, options: ListOptions) -> dict[str, Any]:
        return await self.inner.list(options)

    async def watch(self, options: ListOptions) -> AsyncIterator[watch_mod.WatchEvent[dict[str, Any]]]:
        await self.open.wait()
        try:
            async for event in self.inner.watch(options):
                if not self.open.is_set():
                    raise ConnectionResetError("cut by the test")
                yield event
        except errors.Gone:
            self.gone_seen += 1
            raise


async def test_forced_410_relists_to_the_servers_state(tmp_path: Path) -> None:
    """Real server, tiny history window: a watch cut past the window relists, deletions included."""
    async with ControlPlane(history_window=20) as srv, _live.clients(srv) as dc:
        await _live.make_namespace(dc, "r410")
        cms = dc.resource(_live.CONFIGMAPS, "r410")
        for i in range(10):
            await cms.create({"metadata": {"name": f"cm-{i}"}, "data": {"v": "0"}})
        lw = GatedListWatch(watch_mod.ListWatch(cms))
        store: store_mod.Store[Any] = store_mod.Store()
        fake = clock_mod.FakeClock()
        r = reflector_mod.Reflector(
            lw,
            reflector_mod.StoreWriter(store),
            reflector_mod.ReflectorOptions(use_watch_list=False),
            clock=fake,
        )
        async with running(r):
            await r.wait_for_sync()
            assert len(store) == 10
            lw.open.clear()
            await cms.patch("cm-0", {"data": {"v": "cut"}})  # the open watch fails on this event
            for i in range(5):
                await cms.delete(f"cm-{i}")
            for i in range(10, 40):
                await cms.create({"metadata": {"name": f"cm-{i}"}, "data": {"v": "new"}})
            for i in range(5, 10):
                await cms.patch(f"cm-{i}", {"data": {"v": "changed"}})
            lw.open.set()
            await _fake.until(lambda: r.relists >= 2, fake)
            items, _ = await cms.list_all()
            server = {
                f"r410/{o['metadata']['name']}": (o["metadata"]["resourceVersion"], o["data"]) for o in items
            }
            await _fake.until(lambda: _state(store) == server, fake)
        assert lw.gone_seen >= 1 and "r410/cm-0" not in store and len(store) == 35


class CountingListWatch:
    """A ListWatch that counts LIST calls, so a test can tell WatchList from LIST syncs."""

    def __init__(self, inner: watch_mod.ListWatch) -> None:
        self.inner = inner
        self.listed = 0

    async def list(self, options: ListOptions) -> dict[str, Any]:
        self.listed += 1
        return await self.inner.list(options)

    def watch(self, options: ListOptions) -> AsyncIterator[watch_mod.WatchEvent[dict[str, Any]]]:
        return self.inner.watch(options)


@pytest.fixture(scope="module")
def srv() -> Iterator[_live.Server]:
    yield from _live.module_server()


@pytest.mark.parametrize("use_watch_list", [True, False], ids=["watchlist", "list"])
async def test_real_server_sync_then_follow(srv: _live.Server, use_watch_list: bool) -> None:
    """Real server: the store syncs (by WatchList or LIST) and then follows creates and deletes."""
    async with _live.clients(srv) as dc:
        ns = f"sync-{use_watch_list}".lower()
        await _live.make_namespace(dc, ns)
        cms = dc.resource(_live.CONFIGMAPS, ns)
        for i in range(20):
            await cms.create({"metadata": {"name": f"s-{i}"}})
        lw = CountingListWatch(watch_mod.ListWatch(cms))
        store: store_mod.Store[Any] = store_mod.Store()
        opts = reflector_mod.ReflectorOptions(use_watch_list=use_watch_list)
        r = reflector_mod.Reflector(lw, reflector_mod.StoreWriter(store), opts)
        async with running(r):
            await r.wait_for_sync()
            assert len(store) == 20
            await cms.delete("s-0")
            await cms.create({"metadata": {"name": "s-new"}})
            await _fake.until(lambda: f"{ns}/s-new" in store and f"{ns}/s-0" not in store)
        assert lw.listed == (0 if use_watch_list else 1)
        assert all(o["kind"] == "ConfigMap" for o in store.list())
