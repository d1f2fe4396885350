"""The manager's shared cache: one informer per resource, shared by every controller and reader.

``informer(ref)`` returns the shared informer of a resource, creating it on first use; informers
created before ``start`` start with it, later ones start at once. Reads (``get``, ``list``) come
from memory: a read of a resource without an informer creates one and waits for it to sync, as
controller-runtime's cache does. Reads return deep copies by default, so callers may modify what
they get (``deep_copy=False`` returns the cache's own objects: read-only).

A cache is as fresh as its watch: after a write, the cache shows it once the watch event arrives
(usually within a millisecond on loopback); write with the object's resourceVersion and the server
refuses a write based on a stale read (409), which the reconcile retry absorbs.
"""

from __future__ import annotations

import asyncio
import builtins
from typing import Any

import orjson

from kplane._util import clock as clock_mod
from kplane.api import labels as labels_mod
from kplane.client import dynamic
from kplane.informers import factory as factory_mod
from kplane.informers import informer as informer_mod

Object = dict[str, Any]


class Cache:
    """Shared informers over ``client`` with the scope of ``options`` (see the module docstring)."""

    def __init__(
        self,
        client: dynamic.DynamicClient,
        options: factory_mod.FactoryOptions | None = None,
        *,
        clock: clock_mod.Clock | None = None,
        sync_timeout: float = 120.0,
    ) -> None:
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._factory = factory_mod.SharedInformerFactory(client, options, clock=self._clock)
        self._client = client
        self._informers: dict[dynamic.Resource, informer_mod.SharedIndexInformer[Any]] = {}
        self._synced: dict[dynamic.Resource, Any] = {}  # lister of each synced informer, by Resource
        self._started = False
        self._sync_timeout = sync_timeout

    async def informer(self, ref: dynamic.ResourceRef) -> informer_mod.SharedIndexInformer[Any]:
        """The shared informer of ``ref`` (started at once if the cache already runs)."""
        resource = await self.resource(ref)
        inf = await self._factory.informer(resource)
        self._informers[resource] = inf
        if self._started:
            self._factory.start()
        return inf

    async def resource(self, ref: dynamic.ResourceRef) -> dynamic.Resource:
        """``ref`` resolved through the REST mapper (``Resource`` values as they are)."""
        return await self._client.resource(ref).resource()

    async def start(self) -> None:
        """Start every informer created so far and wait until all have synced."""
        self._started = True
        self._factory.start()
        await self.wait_for_cache_sync()

    async def wait_for_cache_sync(self) -> None:
        """Wait until every started informer has synced, at most ``sync_timeout`` seconds."""
        async with asyncio.timeout(self._sync_timeout):
            await self._factory.wait_for_cache_sync()

    def has_synced(self) -> bool:
        """True when every informer has synced and is still running (``/readyz``)."""
        return all(inf.has_synced() for inf in self._informers.values())

    def failing_informers(self, grace: float) -> builtins.list[str]:
        """Resources whose informer has kept failing to list and watch for more than ``grace``
        seconds (e.g. the API server is unreachable): their cache no longer follows the server."""
        now = self._clock.monotonic()
        out = []
        for res, inf in self._informers.items():
            since = inf.reflector.failing_since if inf.reflector is not None else None
            if since is not None and now - since > grace:
                out.append(_name(res))
        return out

    def stopped_informers(self) -> builtins.list[str]:
        """Resources whose informer was started and is no longer running (it cannot watch)."""
        return [
            _name(res) for res, inf in self._informers.items() if inf.has_synced() and not inf.is_running()
        ]

    async def stop(self) -> None:
        self._synced.clear()  # a read after stop goes to the factory again, which refuses it
        await self._factory.shutdown()

    async def get(
        self, ref: dynamic.ResourceRef, name: str, namespace: str = "", *, deep_copy: bool = True
    ) -> Object:
        """The cached object; raises ``errors.NotFound`` as the server would."""
        lister = await self._synced_lister(ref)
        obj = lister.namespaced(namespace).get(name) if namespace else lister.get(name)
        return _copy(obj) if deep_copy else obj

    async def list(
        self,
        ref: dynamic.ResourceRef,
        namespace: str = "",
        *,
        label_selector: str = "",
        deep_copy: bool = True,
    ) -> builtins.list[Object]:
        """The cached objects of ``ref`` in ``namespace`` (all if empty) matching ``label_selector``."""
        lister = await self._synced_lister(ref)
        matches = labels_mod.parse(label_selector).matches if label_selector else None
        objs = lister.namespaced(namespace).list(matches) if namespace else lister.list(matches)
        return [_copy(o) for o in objs] if deep_copy else objs

    async def _synced_lister(self, ref: dynamic.ResourceRef) -> Any:
        # A resolved Resource whose informer has synced maps straight to its lister: the factory's
        # lookup (resolution, lock, start check) is then done once, not on every read of a reconcile.
        # Names go through the REST mapper every time, since what they resolve to may change.
        lister = self._synced.get(ref) if isinstance(ref, dynamic.Resource) else None
        if lister is not None:
            return lister
        inf = await self.informer(ref)
        if not inf.has_synced():
            self._factory.start()  # starts only the informers not yet running
            async with asyncio.timeout(self._sync_timeout):
                await inf.wait_for_sync()
        lister = inf.lister()
        if isinstance(ref, dynamic.Resource):
            self._synced[ref] = lister
        return lister


def _copy(obj: Object) -> Object:
    out: Object = orjson.loads(orjson.dumps(obj))
    return out


def _name(res: dynamic.Resource) -> str:
    return f"{res.plural}.{res.group}" if res.group else res.plural
