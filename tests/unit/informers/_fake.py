"""A scripted in-memory ``ListerWatcher`` for reflector and informer unit tests.

``FakeListerWatcher`` holds the "server" state as a dict and a log of events with resource
versions. ``list`` answers the current state; ``watch(rv)`` replays logged events after ``rv`` and
then waits for new ones, ending when ``end_watches()`` is called. ``expire_below`` makes watches from
older versions answer an in-stream 410 ERROR, as a compacted server does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from kplane.client import watch as watch_mod
from kplane.client.options import ListOptions

Object = dict[str, Any]


def cm(name: str, rv: int, namespace: str = "default", **data: str) -> Object:
    """A ConfigMap-shaped object at resourceVersion ``rv``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": str(rv)},
        "data": dict(data),
    }


class FakeListerWatcher:
    def __init__(self) -> None:
        self.rv = 1
        self.objects: dict[str, Object] = {}
        self.log: list[tuple[int, str, Object]] = []
        self.expire_below = 0
        self.lists: list[str | None] = []
        self.watches: list[str | None] = []
        self.support_watch_list = True
        self._changed = asyncio.Event()
        self._generation = 0

    # Writes to the "server".

    def upsert(self, name: str, **data: str) -> Object:
        self.rv += 1
        key = f"default/{name}"
        kind = "MODIFIED" if key in self.objects else "ADDED"
        obj = cm(name, self.rv, **data)
        self.objects[key] = obj
        self.log.append((self.rv, kind, obj))
        self._changed.set()
        return obj

    def remove(self, name: str) -> None:
        self.rv += 1
        obj = dict(self.objects.pop(f"default/{name}"))
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(self.rv)}
        self.log.append((self.rv, "DELETED", obj))
        self._changed.set()

    def end_watches(self) -> None:
        """End every open watch stream normally (like a server timeout)."""
        self._generation += 1
        self._changed.set()

    # ListerWatcher.

    async def list(self, options: ListOptions) -> Object:
        resource_version = options.resource_version
        self.lists.append(resource_version)
        return {
            "kind": "ConfigMapList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(self.rv)},
            "items": [dict(o) for o in self.objects.values()],
        }

    async def watch(self, options: ListOptions) -> AsyncIterator[watch_mod.WatchEvent[Object]]:
        """The events a server would send; an ERROR line raises its error, as the real clients do."""
        async for raw in self._raw_watch(options):
            yield watch_mod.decode(raw)

    async def _raw_watch(self, options: ListOptions) -> AsyncIterator[Object]:
        resource_version, send_initial_events = options.resource_version, options.send_initial_events
        self.watches.append(resource_version)
        generation = self._generation
        if send_initial_events:
            if not self.support_watch_list:
                return
            for obj in list(self.objects.values()):
                yield {"type": "ADDED", "object": obj}
            end = {
                "metadata": {
                    "resourceVersion": str(self.rv),
                    "annotations": {"k8s.io/initial-events-end": "true"},
                }
            }
            yield {"type": "BOOKMARK", "object": end}
            last = self.rv
        else:
            last = int(resource_version or 0)
            if last < self.expire_below:
                yield {
                    "type": "ERROR",
                    "object": {
                        "kind": "Status",
                        "code": 410,
                        "reason": "Expired",
                        "message": f"too old resource version: {last}",
                    },
                }
                return
        while True:
            for rv, kind, obj in self.log:
                if rv > last:
                    last = rv
                    yield {"type": kind, "object": obj}
            if self._generation != generation:
                return
            self._changed.clear()
            await self._changed.wait()


async def until(cond: Any, fake: Any = None, *, step: float = 1.0, limit: float = 10.0) -> None:
    """Wait (real time, at most ``limit`` s) until ``cond()``; step the ``fake`` clock meanwhile if given."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        if fake is not None:
            fake.step(step)
        await asyncio.sleep(0.005)
