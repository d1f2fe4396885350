"""A ``Storage`` decorator that reports how long each backend operation took.

It wraps the backend under the cache (what etcd is to kube-apiserver), so the latencies are those
of the durable store; the cache's own answers are not measured. ``observe(operation, key,
seconds)`` is called after every ``get``, ``list``, ``create``, ``guaranteed_update`` (reported as
``update``) and ``delete``, failed ones included. Everything else, ``listen`` included, is passed
through unchanged, so the cache keeps its fast path.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from kplane._util.clock import Clock
from kplane.server.storage import interface

Observe = Callable[[str, str, float], None]
Keyed = tuple[builtins.list[tuple[str, interface.Object]], int]


class InstrumentedStorage:
    """Times the five data operations of ``backend``; delegates every other attribute."""

    def __init__(self, backend: Any, observe: Observe, clock: Clock) -> None:
        self._backend = backend
        self._observe = observe
        self._now = clock.monotonic

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    # Each operation awaits the backend itself (no shared timing coroutine): this runs on every
    # write, and a coroutine more per call costs more than the few repeated lines.

    async def get(self, key: str) -> interface.Object:
        start = self._now()
        try:
            done: interface.Object = await self._backend.get(key)
            return done
        finally:
            self._observe("get", key, self._now() - start)

    async def list(self, prefix: str, *args: Any, **kwargs: Any) -> interface.ListResult:
        start = self._now()
        try:
            done: interface.ListResult = await self._backend.list(prefix, *args, **kwargs)
            return done
        finally:
            self._observe("list", prefix, self._now() - start)

    async def list_keyed(self, prefix: str) -> Keyed:
        start = self._now()
        try:
            done: Keyed = await self._backend.list_keyed(prefix)
            return done
        finally:
            self._observe("list", prefix, self._now() - start)

    async def create(self, key: str, obj: interface.Object) -> interface.Object:
        start = self._now()
        try:
            done: interface.Object = await self._backend.create(key, obj)
            return done
        finally:
            self._observe("create", key, self._now() - start)

    async def guaranteed_update(self, key: str, *args: Any, **kwargs: Any) -> interface.Object:
        start = self._now()
        try:
            done: interface.Object = await self._backend.guaranteed_update(key, *args, **kwargs)
            return done
        finally:
            self._observe("update", key, self._now() - start)

    async def delete(self, key: str, *args: Any, **kwargs: Any) -> interface.Object:
        start = self._now()
        try:
            done: interface.Object = await self._backend.delete(key, *args, **kwargs)
            return done
        finally:
            self._observe("delete", key, self._now() - start)
