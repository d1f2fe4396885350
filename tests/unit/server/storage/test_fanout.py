"""The broadcaster's routing: every listener and watcher gets exactly the events under its prefix,
whatever the prefix's depth, and routes follow listeners and watches as they come and go."""

from __future__ import annotations

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
