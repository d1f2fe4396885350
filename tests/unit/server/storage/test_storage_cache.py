"""Cache-only properties: indexing, waiting for revisions, the event window, resync."""

from __future__ import annotations

import asyncio

import pytest

from kplane._util import clock
from kplane.server.storage import cacher, interface, memory
from kplane.server.storage.cacher import fanout, index
from kplane.server.storage.testing import fixtures


def test_public_surface() -> None:
    """The cacher package exports exactly its documented names."""
    assert sorted(cacher.__all__) == ["CachedStorage", "KeyedStorage"]


@pytest.mark.parametrize(
    ("key", "bucket"),
    [
        ("/registry/core/pods/ns/name", "/registry/core/pods/"),
        ("/registry/core/nodes/n1", "/registry/core/nodes/"),
        ("/registry/core/pods/", "/registry/core/pods/"),
        ("/registry/core/", "/registry/core/"),
        ("/a/b", "/a/"),
    ],
)
def test_resource_prefix(key: str, bucket: str) -> None:
    """Keys are bucketed by their first four path segments."""
    assert index.resource_prefix(key) == bucket


async def _started(backend: memory.MemoryStorage, **kwargs: object) -> cacher.CachedStorage:
    c = cacher.CachedStorage(backend, **kwargs)  # type: ignore[arg-type]
    await c.start()
    return c


async def test_start_indexes_existing_objects() -> None:
    """A cache started over a populated backend serves its objects, across resources."""
    backend = memory.MemoryStorage()
    await backend.create(fixtures.key("b"), fixtures.pod("b"))
    await backend.create("/registry/apps/deployments/a/d", fixtures.pod("d"))
    await backend.create(fixtures.key("a", namespace="z"), fixtures.pod("a", namespace="z"))
    c = await _started(backend)
    try:
        assert c.current_revision() == 3
        assert fixtures.names(await c.list("/registry/")) == ["d", "b", "a"]
        assert fixtures.names(await c.list(fixtures.PODS)) == ["b", "a"]
        assert (await c.get("/registry/apps/deployments/a/d"))["metadata"]["name"] == "d"
        pairs, rev = await c.list_keyed("/registry/apps/")
        assert [k for k, _ in pairs] == ["/registry/apps/deployments/a/d"] and rev == 3
    finally:
        await c.close()


async def test_not_started_cache_refuses() -> None:
    """Using a cache before start raises StorageError."""
    c = cacher.CachedStorage(memory.MemoryStorage())
    with pytest.raises(interface.StorageError, match="not started"):
        await c.get(fixtures.key("a"))


async def test_wait_for_revision_times_out() -> None:
    """wait_for_revision raises TooLargeRevision after its timeout, on the injected clock."""
    fake = clock.FakeClock()
    c = await _started(memory.MemoryStorage(), clock=fake)
    try:
        waiting = asyncio.ensure_future(c.wait_for_revision(5, timeout=3.0))
        await fixtures.eventually(fake.has_waiters)
        fake.step(3.0)
        with pytest.raises(interface.TooLargeRevision):
            await waiting
    finally:
        await c.close()


async def test_wait_for_revision_returns_when_reached() -> None:
    """wait_for_revision returns as soon as the revision has been applied."""
    fake = clock.FakeClock()
    backend = memory.MemoryStorage()
    c = await _started(backend, clock=fake)
    try:
        waiting = asyncio.ensure_future(c.wait_for_revision(1))
        await asyncio.sleep(0)
        await backend.create(fixtures.key("a"), fixtures.pod("a"))
        async with asyncio.timeout(5):
            await waiting
        assert c.current_revision() == 1
    finally:
        await c.close()


async def test_watch_older_than_window_is_expired() -> None:
    """The cache answers watches only from its window: older revisions are Expired."""
    c = await _started(memory.MemoryStorage(), window=3)
    try:
        for i in range(10):
            await c.create(fixtures.key(f"p{i}"), fixtures.pod(f"p{i}"))
        with pytest.raises(interface.Expired):
            c.watch(fixtures.PODS, 6)
        events = await fixtures.take(c.watch(fixtures.PODS, 7), 3)
        assert [e.revision for e in events] == [8, 9, 10]
    finally:
        await c.close()


class StreamOnlyMemory(memory.MemoryStorage):
    """A backend without the synchronous ``listen`` hook: the cache must follow its watch stream."""

    listen = None  # type: ignore[assignment]


async def test_cache_resyncs_after_losing_backend_stream() -> None:
    """If its backend watch overflows, the cache fails its watchers and relists to catch up."""
    backend = StreamOnlyMemory(watcher_capacity=2)
    c = await _started(backend)
    try:
        w = c.watch(fixtures.PODS, 0)
        for i in range(10):  # written straight to the backend without yielding: overflow
            await backend.create(fixtures.key(f"p{i}"), fixtures.pod(f"p{i}"))
        with pytest.raises(interface.StorageError, match="restarted"):
            await fixtures.drain(w)
        await fixtures.eventually(lambda: c.current_revision() >= 10)
        assert len((await c.list(fixtures.PODS)).items) == 10
        created = await c.create(fixtures.key("after"), fixtures.pod("after"))
        assert (await c.get(fixtures.key("after"))) is created
    finally:
        await c.close()


async def test_write_returns_before_its_event_and_reads_wait_for_it() -> None:
    """Over a backend followed through its stream, a write returns once the backend acknowledges it
    (not after a round-trip through the stream); get and list right after it still see it."""
    c = await _started(StreamOnlyMemory())
    try:
        created = await c.create(fixtures.key("a"), fixtures.pod("a"))
        revision = int(created["metadata"]["resourceVersion"])
        assert c.peek(fixtures.key("a")) is None  # the follower has not applied the event yet
        assert c.current_revision() == revision  # a watch from here starts after the write
        assert (await c.get(fixtures.key("a")))["metadata"]["name"] == "a"
        await c.create(fixtures.key("b"), fixtures.pod("b"))
        assert [o["metadata"]["name"] for o in (await c.list(fixtures.PODS)).items] == ["a", "b"]
    finally:
        await c.close()


async def test_listening_cache_is_current_when_a_backend_write_returns() -> None:
    """With a listening backend, a write straight to the backend is in the cache when it returns,
    and a burst far beyond any queue capacity cannot make the cache fall behind."""
    backend = memory.MemoryStorage(watcher_capacity=2)
    c = await _started(backend)
    try:
        for i in range(10):
            stored = await backend.create(fixtures.key(f"p{i}"), fixtures.pod(f"p{i}"))
            assert c.current_revision() == int(stored["metadata"]["resourceVersion"])
        assert len((await c.list(fixtures.PODS)).items) == 10
    finally:
        await c.close()


async def test_event_objects_are_shared_with_watchers() -> None:
    """Every watcher receives the very same Event, so an encoding memoised on it is shared."""
    c = await _started(memory.MemoryStorage())
    try:
        w1, w2 = c.watch(fixtures.PODS, 0), c.watch(fixtures.PODS, 0)
        await c.create(fixtures.key("a"), fixtures.pod("a"))
        (e1,), (e2,) = await fixtures.take(w1, 1), await fixtures.take(w2, 1)
        assert e1 is e2
    finally:
        await c.close()


async def test_fanout_close_during_backlog_stops() -> None:
    """A watch closed by its consumer stops at once, even while yielding its initial events."""
    events = [interface.Event(interface.ADDED, f"/k/{i}", {}, i) for i in range(1, 4)]
    w = fanout.QueueWatch("/k/", capacity=10, initial=events)
    seen = []
    async for e in w:
        seen.append(e.revision)
        w.close()
    assert seen == [1]


class SilentMemory(StreamOnlyMemory):
    """A backend whose watch stream never delivers: the cache falls behind every write."""

    def watch(self, prefix: str, from_revision: int) -> interface.Watch:
        return super().watch("/never/", from_revision)


async def test_reads_go_to_the_backend_when_the_cache_is_late() -> None:
    """A read after a write waits for the cache at most 3 s (on the injected clock), then reads the
    backend: it sees the write, as upstream's consistent reads fall back to etcd, never a 504."""
    fake = clock.FakeClock()
    c = await _started(SilentMemory(), clock=fake)
    try:
        await c.create(fixtures.key("a"), fixtures.pod("a"))
        reading = asyncio.ensure_future(c.get(fixtures.key("a")))
        for _ in range(59):  # 2.95 s of 50 ms steps: still waiting for the stream
            await fixtures.eventually(fake.has_waiters)
            fake.step(0.05)
            await asyncio.sleep(0)
        assert not reading.done()
        await fixtures.eventually(fake.has_waiters)
        fake.step(0.05)
        async with asyncio.timeout(5):
            assert (await reading)["metadata"]["name"] == "a"
        assert c.peek(fixtures.key("a")) is None  # served by the backend, not the cache
        listing = asyncio.ensure_future(c.list(fixtures.PODS))
        while not listing.done():
            await fixtures.eventually(lambda: fake.has_waiters() or listing.done())
            if not listing.done():
                fake.step(0.05)
        assert [o["metadata"]["name"] for o in listing.result().items] == ["a"]
    finally:
        await c.close()


async def test_current_peek_and_surely_empty_answer_only_when_the_cache_is_current() -> None:
    """The synchronous look-ups admission uses answer what get/list would, or "don't know" (None,
    False) while a write acknowledged through the cache has not come back through the stream."""
    c = await _started(StreamOnlyMemory())
    try:
        assert c.surely_empty(fixtures.PODS)
        created = await c.create(fixtures.key("a"), fixtures.pod("a"))
        assert c.current_peek(fixtures.key("a")) is None  # behind its own write: unsure
        assert not c.surely_empty(fixtures.PODS)
        await c.wait_for_revision(int(created["metadata"]["resourceVersion"]))
        assert c.current_peek(fixtures.key("a")) == created
        assert c.current_peek(fixtures.key("b")) is None
        assert not c.surely_empty(fixtures.PODS)
        assert c.surely_empty(fixtures.PODS + "other-namespace/")
        assert c.surely_empty("/registry/core/configmaps/")
    finally:
        await c.close()
