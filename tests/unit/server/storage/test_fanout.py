"""The broadcaster's routing: every listener and watcher gets exactly the events under its prefix,
whatever the prefix's depth, and routes follow listeners and watches as they come and go."""

from __future__ import annotations

import asyncio
import contextlib

from kplane.server.storage import interface
from kplane.server.storage.cacher import fanout

KEYS = (
    "/registry/core/configmaps/a/x",
    "/registry/core/configmaps/b/y",
    "/registry/core/secrets/a/s",
    "/registry/apps/deployments/a/d",
    "/registry/core/configmapsextra/a/z",
    "/elsewhere/k",
)
PREFIXES = (
    "",
    "/registry/",
    "/registry/core/",
    "/registry/core/configmaps/",
    "/registry/core/configmaps/a/",
    "/registry/core/configmaps/a/x",
    "/registry/core/configmaps",
    "/registry/apps/deployments/",
    "/elsewhere/",
)


def _events() -> list[interface.Event]:
    return [interface.Event(interface.ADDED, k, {"n": i}, i + 1) for i, k in enumerate(KEYS)]


async def _drain(watch: fanout.QueueWatch) -> list[str]:
    watch.end()
    return [e.key async for e in watch]


async def test_each_listener_and_watcher_gets_the_events_under_its_prefix() -> None:
    b = fanout.Broadcaster()
    heard: dict[str, list[str]] = {p: [] for p in PREFIXES}
    for p in PREFIXES:
        b.listen(lambda e, p=p: heard[p].append(e.key), p)
    watches = {p: b.watch(p, capacity=100) for p in PREFIXES}
    for event in _events():
        b.publish(event)
    for p in PREFIXES:
        expected = [k for k in KEYS if k.startswith(p)]
        assert heard[p] == expected, p
        assert await _drain(watches[p]) == expected, p


async def test_routes_follow_watches_and_listeners_that_come_and_go() -> None:
    b = fanout.Broadcaster()
    first = b.watch("/registry/core/configmaps/", capacity=100)
    b.publish(_events()[0])  # a route for the configmaps bucket is now memoised
    late = b.watch("/registry/core/configmaps/b/", capacity=100)
    heard: list[str] = []
    remove = b.listen(lambda e: heard.append(e.key), "/registry/core/")
    b.publish(_events()[1])
    remove()
    b.publish(_events()[2])
    assert heard == ["/registry/core/configmaps/b/y"]
    assert await _drain(late) == ["/registry/core/configmaps/b/y"]
    assert await _drain(first) == ["/registry/core/configmaps/a/x", "/registry/core/configmaps/b/y"]


def test_bucket_of() -> None:
    assert fanout.bucket_of("/registry/core/configmaps/a/x") == "/registry/core/configmaps/"
    assert fanout.bucket_of("/registry/core/configmaps/") == "/registry/core/configmaps/"
    assert fanout.bucket_of("/registry/core/configmaps") == ""
    assert fanout.bucket_of("/elsewhere/a/b/c") == ""


async def test_wake_when_ready_resolves_on_the_first_event_or_the_end() -> None:
    """The waiter is resolved at once when an event is queued, on the next push otherwise, and when
    the stream ends; a replaced waiter is left alone."""
    b = fanout.Broadcaster()
    event = interface.Event(interface.ADDED, KEYS[0], {}, 1)
    ready = fanout.QueueWatch("", capacity=10, initial=[event])
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    ready.wake_when_ready(waiter)
    assert waiter.done()

    idle = b.watch("/registry/", capacity=10)
    first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    second: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    idle.wake_when_ready(first)
    idle.wake_when_ready(second)
    b.publish(interface.Event(interface.ADDED, "/elsewhere/k", {}, 2))  # not under its prefix
    assert not second.done()
    b.publish(interface.Event(interface.ADDED, KEYS[0], {}, 3))
    assert second.done() and not first.done()
    assert (await anext(idle)).revision == 3

    ending: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    idle.wake_when_ready(ending)
    idle.end()
    assert ending.done()


async def test_wake_when_ready_loads_the_backlog() -> None:
    """A watch with history to load starts loading it when asked to wake; the waiter is resolved
    once the history holds an event, and an empty history leaves it waiting for a live one."""
    loads: list[int] = []

    def history(events: list[interface.Event]) -> fanout.Backlog:
        async def load() -> list[interface.Event]:
            loads.append(len(events))
            await asyncio.sleep(0)
            return events

        return load

    old = interface.Event(interface.ADDED, KEYS[0], {}, 1)
    watch = fanout.QueueWatch("", capacity=10, backlog=history([old]))
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    watch.wake_when_ready(waiter)
    await asyncio.wait_for(waiter, 2)
    assert watch.ready and loads == [1]
    assert (await anext(watch)).revision == 1

    empty = fanout.QueueWatch("", capacity=10, backlog=history([]))
    waiter = asyncio.get_running_loop().create_future()
    empty.wake_when_ready(waiter)
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiter.done() and not empty.ready
    empty.push(interface.Event(interface.ADDED, KEYS[0], {}, 2))
    assert waiter.done()
    assert (await anext(empty)).revision == 2
    assert loads == [1, 0]  # each history loaded once, whoever asked first


async def test_a_step_cancelled_during_the_backlog_load_loses_nothing() -> None:
    """The load goes on when the step waiting for it is cancelled; the next step gets its events."""
    gate = asyncio.Event()

    async def load() -> list[interface.Event]:
        await gate.wait()
        return [interface.Event(interface.ADDED, KEYS[0], {}, 1)]

    watch = fanout.QueueWatch("", capacity=10, backlog=load)
    step = asyncio.ensure_future(anext(watch))
    await asyncio.sleep(0)
    step.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await step
    gate.set()
    assert (await asyncio.wait_for(anext(watch), 2)).revision == 1
