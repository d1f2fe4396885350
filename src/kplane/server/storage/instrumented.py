"""A ``Storage`` decorator that reports how long each backend operation took.

It wraps the backend under the cache (what etcd is to kube-apiserver), so the latencies are those
of the durable store; the cache's own answers are not measured. ``observe(operation, key,
seconds)`` is called after every ``get``, ``list``, ``create``, ``guaranteed_update`` (reported as
``update``) and ``delete``, failed ones included. Everything else, ``listen`` included, is passed
through unchanged, so the cache keeps its fast path.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kplane._util.clock import Clock
from kplane.server.storage import interface

Observe = Callable[[str, str, float], None]
T = TypeVar("T")


class InstrumentedStorage:
    """Times the five data operations of ``backend``; delegates every other attribute."""

    def __init__(self, backend: Any, observe: Observe, clock: Clock) -> None:
        self._backend = backend
        self._observe = observe
        self._now = clock.monotonic

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def _timed(self, operation: str, key: str, pending: Awaitable[T]) -> T:
        start = self._now()
        try:
            return await pending
        finally:
            self._observe(operation, key, self._now() - start)

    async def get(self, key: str) -> interface.Object:
        return await self._timed("get", key, self._backend.get(key))

    async def list(self, prefix: str, *args: Any, **kwargs: Any) -> interface.ListResult:
        return await self._timed("list", prefix, self._backend.list(prefix, *args, **kwargs))

    async def list_keyed(self, prefix: str) -> tuple[builtins.list[tuple[str, interface.Object]], int]:
        return await self._timed("list", prefix, self._backend.list_keyed(prefix))

    async def create(self, key: str, obj: interface.Object) -> interface.Object:
        return await self._timed("create", key, self._backend.create(key, obj))

    async def guaranteed_update(self, key: str, *args: Any, **kwargs: Any) -> interface.Object:
        return await self._timed("update", key, self._backend.guaranteed_update(key, *args, **kwargs))

    async def delete(self, key: str, *args: Any, **kwargs: Any) -> interface.Object:
        return await self._timed("delete", key, self._backend.delete(key, *args, **kwargs))
