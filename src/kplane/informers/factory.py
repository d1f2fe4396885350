"""The informer factory: one shared informer per resource, however many consumers ask for it.

Consumers ask ``factory.informer(ref)`` for the resource they need; the first request creates the
informer, later ones (from any controller) get the same object, so each resource is listed, watched
and cached once per process. ``start()`` runs every informer created so far (call it again after
creating more); ``wait_for_cache_sync()`` waits for them; ``shutdown()`` stops them all.

Refs are resolved to a ``kplane.client.dynamic.Resource`` first (through the dynamic client's REST
mapper), so ``"deploy"``, ``"deployments.apps"`` and ``"Deployment"`` share one informer. A model
class (``factory.informer(core_v1.Pod)``) gives an informer whose cache, listers and handlers hold
that model: objects are decoded from the watched dicts once, after the transform. It is a separate
informer from the dict one of the same resource (one cache per representation). Every
informer of a factory watches the same namespace (default: all) with the same selectors; build one
factory per such scope (client-go's ``WithNamespace`` and ``WithTweakListOptions``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any, TypeVar, overload

import msgspec

from kplane._util import clock as clock_mod
from kplane.api import gvk as gvk_mod
from kplane.client import dynamic, typed
from kplane.client import options as options_mod
from kplane.client import watch as watch_mod
from kplane.client.models import _base as models_base
from kplane.informers import informer as informer_mod
from kplane.informers import listers as listers_mod
from kplane.informers import reflector as reflector_mod


@dataclasses.dataclass(frozen=True)
class FactoryOptions:
    """Scope and defaults shared by a factory's informers.

    ``namespace=None`` watches all namespaces. Without a ``transform`` the informers strip
    ``metadata.managedFields`` (``strip_managed_fields``) unless ``keep_managed_fields`` is set.
    """

    namespace: str | None = None
    label_selector: str = ""
    field_selector: str = ""
    default_resync: float = 0.0
    transform: reflector_mod.Transform | None = None
    keep_managed_fields: bool = False
    use_watch_list: bool | None = None


M = TypeVar("M")


class SharedInformerFactory:
    """Creates, shares, starts and stops informers over one ``DynamicClient``."""

    def __init__(
        self,
        client: dynamic.DynamicClient,
        options: FactoryOptions | None = None,
        *,
        clock: clock_mod.Clock | None = None,
    ) -> None:
        self._client = client
        self._opts = options or FactoryOptions()
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._informers: dict[_Key, informer_mod.SharedIndexInformer[Any]] = {}
        self._tasks: dict[_Key, asyncio.Task[None]] = {}
        self._lock = asyncio.Lock()
        self._shut_down = False

    @overload
    async def informer(
        self, ref: type[M], *, resync_period: float | None = None
    ) -> informer_mod.SharedIndexInformer[M]: ...

    @overload
    async def informer(
        self, ref: dynamic.ResourceRef, *, resync_period: float | None = None
    ) -> informer_mod.SharedIndexInformer[Any]: ...

    async def informer(
        self, ref: type[Any] | dynamic.ResourceRef, *, resync_period: float | None = None
    ) -> informer_mod.SharedIndexInformer[Any]:
        """The shared informer of ``ref``, created on first request (``resync_period`` applies then).

        ``ref`` is a model class (typed objects), a ``Resource`` or a name the REST mapper knows
        (``"pods"``, ``"deployments.apps"``, ``"Deployment"``: dicts).
        """
        model: type[Any] | None = None
        target: dynamic.ResourceRef
        if isinstance(ref, type):
            if not issubclass(ref, models_base.Model):
                raise TypeError(f"{ref!r} is not a kplane model class")
            model, target = ref, typed.resource_of(ref)
        else:
            target = ref
        rc = self._client.resource(target, self._opts.namespace or options_mod.ALL)
        resource = await rc.resource()
        key = (resource, model)
        async with self._lock:
            existing = self._informers.get(key)
            if existing is not None:
                return existing
            if self._shut_down:
                raise informer_mod.InformerStateError("informer factory has shut down")
            transform = self._opts.transform
            if transform is None and not self._opts.keep_managed_fields:
                transform = reflector_mod.strip_managed_fields
            if model is not None:
                transform = _decoding(model, transform)
            lw = watch_mod.ListWatch(
                rc,
                namespace=self._opts.namespace or options_mod.ALL,
                selector=options_mod.ListOptions(
                    label_selector=self._opts.label_selector, field_selector=self._opts.field_selector
                ),
            )
            inf: informer_mod.SharedIndexInformer[Any] = informer_mod.SharedIndexInformer(
                lw,
                informer_mod.InformerOptions(
                    resync_period=self._opts.default_resync if resync_period is None else resync_period,
                    transform=transform,
                    use_watch_list=self._opts.use_watch_list,
                    resource=gvk_mod.GroupResource(resource.group, resource.plural),
                    name=f"{resource.plural}.{resource.group}" if resource.group else resource.plural,
                ),
                clock=self._clock,
            )
            self._informers[key] = inf
            return inf

    async def lister(self, ref: type[Any] | dynamic.ResourceRef) -> listers_mod.Lister[Any]:
        """A lister over the shared informer of ``ref``."""
        return (await self.informer(ref)).lister()

    def start(self) -> None:
        """Start every informer not yet running, each in its own task of the running loop."""
        if self._shut_down:
            raise informer_mod.InformerStateError("informer factory has shut down")
        for resource, inf in self._informers.items():
            if resource not in self._tasks:
                self._tasks[resource] = inf.start()

    async def wait_for_cache_sync(self) -> None:
        """Return once every started informer has synced; bound it with ``asyncio.timeout``."""
        started = [self._informers[res] for res in self._tasks]
        await informer_mod.wait_for_cache_sync(*(inf.has_synced for inf in started), clock=self._clock)

    async def shutdown(self) -> None:
        """Stop every informer and wait for them; the factory creates no more afterwards."""
        self._shut_down = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()


_Key = tuple[dynamic.Resource, type[Any] | None]
"""An informer's identity in a factory: the resource, and the model its objects are (None: dicts)."""


def _decoding(model: type[Any], transform: reflector_mod.Transform | None) -> reflector_mod.Transform:
    """``transform`` (on the dict), then the dict decoded into ``model``."""

    def decode(obj: Any) -> Any:
        if transform is not None:
            obj = transform(obj)
        return msgspec.convert(obj, model) if isinstance(obj, dict) else obj

    return decode
