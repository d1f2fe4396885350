"""The manager's client: reads from the shared cache, writes straight to the API server.

Objects are JSON-shaped dicts; a model class (generated in ``kplane.client.models``, or a CRD type
declared with ``kplane.runtime.markers.kind``) may stand for its resource anywhere a ``ref`` is
taken, and a model instance anywhere an object is: reads of a model class return model instances,
model instances are written as JSON (``apiVersion``/``kind`` from the class when unset) and a
write returns the server's object as an instance of the class it was given. Writes take the resource from the
object's ``apiVersion`` and ``kind`` (resolved by the REST mapper), so ``client.update(obj)`` needs
no other argument. ``reader`` is the uncached API reader (controller-runtime's ``GetAPIReader``).

Every write carries ``field_manager`` (default ``"kplane-manager"``), so managedFields name the
controller; ``apply`` is server-side apply of a desired state, forced by default as controllers
own the fields they declare.
"""

from __future__ import annotations

import builtins
from typing import Any, TypeVar, cast, overload

import msgspec

from kplane.api.gvk import GroupVersionKind
from kplane.client import dynamic
from kplane.client import typed as typed_mod
from kplane.runtime import cache as cache_mod

Object = dict[str, Any]
M = TypeVar("M", bound=msgspec.Struct)
W = TypeVar("W", bound=Object | msgspec.Struct)
"""What a write takes and gives back: a dict, or a model instance (returned as its own class)."""
Ref = dynamic.ResourceRef | type[msgspec.Struct]
"""A resource: anything the dynamic client resolves, or a generated model class."""


def resource_ref(ref: Ref) -> dynamic.ResourceRef:
    """The dynamic-client reference of ``ref`` (a model class names its resource by its GVK)."""
    if isinstance(ref, type):
        if not typed_mod.is_model_class(ref):
            raise TypeError(f"{ref.__qualname__} names no resource: give it a gvk (markers.kind)")
        return typed_mod.resource_of(ref)
    return ref


def to_dict(obj: Object | msgspec.Struct) -> Object:
    """A JSON-shaped dict of ``obj`` (dicts are returned as they are). A model instance that leaves
    ``apiVersion``/``kind`` unset gets those of its class's ``gvk``, as a Go object gets its kind
    from the scheme."""
    if isinstance(obj, dict):
        return obj
    return typed_mod.to_json(obj)


def gvk_of(obj: Object) -> GroupVersionKind:
    """The group, version and kind an object declares; ``ValueError`` if it declares none."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not api_version or not kind:
        raise ValueError("the object needs apiVersion and kind to find its resource")
    group, _, version = str(api_version).rpartition("/")
    return GroupVersionKind(group, version, str(kind))


class Client:
    """Cached reads and direct writes (see the module docstring)."""

    def __init__(
        self, cache: cache_mod.Cache, api: typed_mod.Client, *, field_manager: str = "kplane-manager"
    ) -> None:
        self.cache = cache
        self.reader = api
        self.field_manager = field_manager
        self._clients: dict[GroupVersionKind, dynamic.DynamicResourceClient] = {}

    # Reads, from the cache.

    @overload
    async def get(self, ref: type[M], name: str, namespace: str = "") -> M: ...

    @overload
    async def get(self, ref: dynamic.ResourceRef, name: str, namespace: str = "") -> Object: ...

    async def get(self, ref: Ref, name: str, namespace: str = "") -> Any:
        """The cached object (a copy); raises ``errors.NotFound``."""
        obj = await self.cache.get(resource_ref(ref), name, namespace)
        return _as(ref, obj)

    @overload
    async def list(
        self, ref: type[M], namespace: str = "", *, label_selector: str = ""
    ) -> builtins.list[M]: ...

    @overload
    async def list(
        self, ref: dynamic.ResourceRef, namespace: str = "", *, label_selector: str = ""
    ) -> builtins.list[Object]: ...

    async def list(self, ref: Ref, namespace: str = "", *, label_selector: str = "") -> builtins.list[Any]:
        """Cached objects (copies) in ``namespace`` (all when empty) matching ``label_selector``."""
        objs = await self.cache.list(resource_ref(ref), namespace, label_selector=label_selector)
        return [_as(ref, o) for o in objs]

    # Writes, to the server.

    # Each write returns the server's object in the form it was given: a model instance of the
    # same class, or a dict.

    async def create(self, obj: W) -> W:
        """Create ``obj``; returns the server's object."""
        body = to_dict(obj)
        return _like(obj, await self._rc(body).create(body, field_manager=self.field_manager))

    async def update(self, obj: W) -> W:
        """PUT ``obj`` (its resourceVersion makes a stale write a 409 Conflict)."""
        body = to_dict(obj)
        return _like(obj, await self._rc(body).update(body, field_manager=self.field_manager))

    async def update_status(self, obj: W) -> W:
        """PUT ``obj`` to its ``status`` subresource (only the status is written)."""
        body = to_dict(obj)
        rc = self._rc(body)
        return _like(obj, await rc.update(body, subresource="status", field_manager=self.field_manager))

    async def patch(
        self,
        obj: W,
        patch: Any,
        *,
        patch_type: dynamic.PatchType = "merge",
        subresource: str = "",
    ) -> W:
        """PATCH the object ``obj`` names with ``patch``."""
        body = to_dict(obj)
        name, namespace = _name(body)
        out = await self._rc(body).patch(
            name,
            patch,
            patch_type=patch_type,
            namespace=namespace or None,
            subresource=subresource,
            field_manager=self.field_manager,
        )
        return _like(obj, out)

    async def apply(self, obj: W, *, force: bool = True, subresource: str = "") -> W:
        """Server-side apply ``obj`` as the desired state of the fields it sets, owned by this manager."""
        body = to_dict(obj)
        name, namespace = _name(body)
        out = await self._rc(body).patch(
            name,
            body,
            patch_type="apply",
            namespace=namespace or None,
            subresource=subresource,
            field_manager=self.field_manager,
            force=force,
        )
        return _like(obj, out)

    async def delete(self, obj: Object | msgspec.Struct, **options: Any) -> Object:
        """Delete the object ``obj`` names (``options``: the dynamic client's delete options)."""
        body = to_dict(obj)
        name, namespace = _name(body)
        return await self._rc(body).delete(name, namespace=namespace or None, **options)

    def _rc(self, obj: Object) -> dynamic.DynamicResourceClient:
        gvk = gvk_of(obj)
        rc = self._clients.get(gvk)
        if rc is None:  # one per kind, so the REST mapper is asked once
            rc = self._clients[gvk] = self.reader.dynamic.resource(gvk)
        return rc


def _name(obj: Object) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or ""), str(meta.get("namespace") or "")


def _like(given: W, out: Object) -> W:
    """The server's ``out`` in the form of ``given``: the same model class, or the dict."""
    if isinstance(given, dict):
        return cast(W, out)
    converted: W = msgspec.convert(out, type(given))
    return converted


def _as(ref: Ref, obj: Object) -> Any:
    if typed_mod.is_model_class(ref):
        return msgspec.convert(obj, ref)
    return obj
