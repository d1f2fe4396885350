"""The API watch stream over storage: bookmark timing, selector transitions, slow consumers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from kplane._util import clock
from kplane.api.builtin import builtin_catalog
from kplane.api.catalog import ResourceRecord
from kplane.server.registry import watching
from kplane.server.storage import memory

NS = "default"


def _record() -> ResourceRecord:
    record = builtin_catalog().lookup("", "v1", "configmaps")
    assert record is not None
    return record


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "data": {"k": name},
    }


async def _items(
    batches: AsyncGenerator[list[watching.WatchItem], None],
) -> AsyncGenerator[watching.WatchItem, None]:
    """The batches' items one at a time."""
    try:
        async for batch in batches:
            for item in batch:
                yield item
    finally:
        await batches.aclose()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def _next(stream: AsyncGenerator[watching.WatchItem, None]) -> watching.WatchItem | None:
    try:
        return await asyncio.wait_for(anext(stream), 2)
    except StopAsyncIteration:
        return None


@pytest.mark.parametrize(
    ("timeout", "interval", "expected"),
    [
        pytest.param(300.0, 60.0, 60.0, id="periodic-first"),
        pytest.param(10.0, 60.0, 8.0, id="two-seconds-before-deadline"),
        pytest.param(2.0, 60.0, 0.0, id="deadline-in-two-seconds"),
        pytest.param(1.5, 60.0, None, id="too-short-for-any"),
    ],
)
def test_next_bookmark(timeout: float, interval: float, expected: float | None) -> None:
    """The next bookmark is due after the interval, but no later than two seconds before the deadline."""
    assert watching.next_bookmark(0.0, interval, timeout) == expected


async def test_bookmarks_on_the_fake_clock() -> None:
    """A 10 s watch allowing bookmarks gets one at 8 s carrying the store's revision, then ends at 10 s."""
    fake = clock.FakeClock()
    store = memory.MemoryStorage()
    record = _record()
    await store.create(record.key(NS, "a"), _cm("a"))
    await store.create(record.key("elsewhere", "b"), {**_cm("b"), "metadata": {"name": "b"}})
    opts = watching.WatchOptions(resource_version="1", allow_bookmarks=True, deadline=10.0)
    stream = _items(watching.watch_batches(store, record, NS, opts, fake))
    task = asyncio.ensure_future(_next(stream))
    await _settle()
    fake.step(7.9)
    await _settle()
    assert not task.done()
    fake.step(0.1)
    mark = await task
    assert mark is not None and mark.type == "BOOKMARK"
    assert mark.object["metadata"]["resourceVersion"] == "2"
    task = asyncio.ensure_future(_next(stream))
    await _settle()
    assert not task.done()
    fake.step(2.0)
    assert await task is None


async def test_selector_exit_is_deleted_with_the_last_matching_state() -> None:
    """An object whose labels stop matching is DELETED with its previous state at the new revision."""
    fake = clock.FakeClock()
    store = memory.MemoryStorage()
    record = _record()
    key = record.key(NS, "a")
    await store.create(key, _cm("a", app="web"))
    opts = watching.WatchOptions(resource_version="1", label_selector="app=web", deadline=60.0)
    stream = _items(watching.watch_batches(store, record, NS, opts, fake))

    def relabel(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["labels"] = {"app": "db"}
        obj["data"] = {"k": "after"}
        return obj

    moved = await store.guaranteed_update(key, relabel)
    item = await _next(stream)
    assert item is not None and item.type == "DELETED"
    assert item.object["metadata"]["labels"] == {"app": "web"}
    assert item.object["data"] == {"k": "a"}
    assert item.object["metadata"]["resourceVersion"] == moved["metadata"]["resourceVersion"]
    await stream.aclose()


def _capped_stream() -> tuple[
    memory.MemoryStorage, ResourceRecord, AsyncGenerator[watching.WatchItem, None], list[bool]
]:
    """A watch from "now" over a store whose watchers hold at most 10 events, and the list its
    ``on_terminated`` callback appends to."""
    store = memory.MemoryStorage(watcher_capacity=10)
    record = _record()
    opts = watching.WatchOptions(resource_version="0", deadline=60.0)
    gave_up: list[bool] = []
    stream = _items(
        watching.watch_batches(
            store, record, NS, opts, clock.FakeClock(), on_terminated=lambda: gave_up.append(True)
        )
    )
    return store, record, stream, gave_up


async def test_consumer_that_stops_reading_is_terminated() -> None:
    """A consumer that stops taking events is terminated once the storage watch overflows: the
    callback fires at once, the stream then ends without an event, and the writer never waits."""
    store, record, stream, gave_up = _capped_stream()
    await store.create(record.key(NS, "first"), _cm("first"))
    first = await _next(stream)  # the consumer now "writes" this item and never comes back
    assert first is not None and first.type == "ADDED"
    for i in range(11):
        await store.create(record.key(NS, f"c{i}"), _cm(f"c{i}"))
    assert gave_up == [True]
    assert await _next(stream) is None


async def test_slow_consumer_within_capacity_sees_everything() -> None:
    """A consumer that lags by less than the capacity loses nothing and is not terminated."""
    store, record, stream, gave_up = _capped_stream()
    task = asyncio.ensure_future(_next(stream))
    await _settle()
    for i in range(10):
        await store.create(record.key(NS, f"c{i}"), _cm(f"c{i}"))
    names = [(await task).object["metadata"]["name"]]  # type: ignore[union-attr]
    for _ in range(9):
        item = await _next(stream)
        assert item is not None
        names.append(item.object["metadata"]["name"])
    assert names == [f"c{i}" for i in range(10)] and gave_up == []
    await stream.aclose()


async def _next_batch(
    stream: AsyncGenerator[list[watching.WatchItem], None],
) -> list[watching.WatchItem] | None:
    try:
        return await asyncio.wait_for(anext(stream), 2)
    except StopAsyncIteration:
        return None


def _names(batch: list[watching.WatchItem] | None) -> list[str]:
    assert batch is not None
    return [item.object["metadata"]["name"] for item in batch]


async def test_queued_events_come_in_one_batch() -> None:
    """Events already queued for the watcher come out together, in order, at most MAX_BATCH at a
    time; the initial list is cut into batches the same way."""
    fake = clock.FakeClock()
    store = memory.MemoryStorage()
    record = _record()
    total = watching.MAX_BATCH + 5
    for i in range(total):
        await store.create(record.key(NS, f"i{i:03d}"), _cm(f"i{i:03d}"))
    opts = watching.WatchOptions(deadline=60.0)
    stream = watching.watch_batches(store, record, NS, opts, fake)
    initial = [await _next_batch(stream), await _next_batch(stream)]
    assert [len(b or []) for b in initial] == [watching.MAX_BATCH, 5]
    assert _names(initial[0]) + _names(initial[1]) == [f"i{i:03d}" for i in range(total)]
    for i in range(total):
        await store.create(record.key(NS, f"c{i:03d}"), _cm(f"c{i:03d}"))
    live = [await _next_batch(stream), await _next_batch(stream)]
    assert _names(live[0]) == [f"c{i:03d}" for i in range(watching.MAX_BATCH)]
    assert _names(live[1]) == [f"c{i:03d}" for i in range(watching.MAX_BATCH, total)]
    await stream.aclose()


async def test_deadline_ends_a_busy_watch() -> None:
    """The timeout ends the stream even while events keep coming (it is checked before each batch)."""
    fake = clock.FakeClock()
    store = memory.MemoryStorage()
    record = _record()
    await store.create(record.key(NS, "seed"), _cm("seed"))
    opts = watching.WatchOptions(resource_version="1", deadline=5.0)
    stream = watching.watch_batches(store, record, NS, opts, fake)
    for i in range(3):
        await store.create(record.key(NS, f"c{i}"), _cm(f"c{i}"))
    assert _names(await _next_batch(stream)) == ["c0", "c1", "c2"]
    for i in range(3, 6):
        await store.create(record.key(NS, f"c{i}"), _cm(f"c{i}"))
    fake.step(5.0)
    assert await _next_batch(stream) is None


async def test_bookmark_due_while_events_are_queued_carries_the_last_sent_revision() -> None:
    """A bookmark that falls due while events wait for this watcher carries the revision of the last
    event sent (the end of the batch taken before it), never one past events it has not sent yet."""
    fake = clock.FakeClock()
    store = memory.MemoryStorage()
    record = _record()
    await store.create(record.key(NS, "seed"), _cm("seed"))
    opts = watching.WatchOptions(resource_version="1", allow_bookmarks=True, deadline=300.0)
    stream = watching.watch_batches(store, record, NS, opts, fake)
    for i in range(3):
        await store.create(record.key(NS, f"c{i}"), _cm(f"c{i}"))
    first = await _next_batch(stream)
    assert _names(first) == ["c0", "c1", "c2"]
    assert first is not None and first[-1].object["metadata"]["resourceVersion"] == "4"
    for i in range(3, 5):
        await store.create(record.key(NS, f"c{i}"), _cm(f"c{i}"))
    fake.step(60.0)
    mark = await _next_batch(stream)
    assert mark is not None and [m.type for m in mark] == ["BOOKMARK"]
    assert mark[0].object["metadata"]["resourceVersion"] == "4"
    assert _names(await _next_batch(stream)) == ["c3", "c4"]
    await stream.aclose()


async def test_an_idle_watch_waits_without_a_task_per_event() -> None:
    """Waiting for the next event is one future the storage watch resolves: besides the consumer,
    only the sleeper for the deadline is a task, before and after events arrive."""
    fake = clock.FakeClock()
    store = memory.MemoryStorage()
    record = _record()
    await store.create(record.key(NS, "a"), _cm("a"))
    opts = watching.WatchOptions(resource_version="1", deadline=60.0)
    stream = _items(watching.watch_batches(store, record, NS, opts, fake))
    before = set(asyncio.all_tasks())
    for i in range(3):
        task = asyncio.ensure_future(anext(stream))
        await _settle()
        assert not task.done()
        assert len(asyncio.all_tasks() - before) == 2  # the consumer and the sleeper
        await store.create(record.key(NS, f"b{i}"), _cm(f"b{i}"))
        item = await asyncio.wait_for(task, 2)
        assert item.object["metadata"]["name"] == f"b{i}"
    await stream.aclose()
    await _settle()
    assert asyncio.all_tasks() == before  # the sleeper is gone with the stream
