"""The typed client: the dynamic client's verbs with generated msgspec models in and out.

``TypedClient.resource(Deployment)`` returns a ``dynamic.ResourceClient`` whose codec decodes
replies straight from bytes into ``Deployment`` (no dict in between) and encodes models with
``msgspec.json.encode``; lists come back as ``ObjectList[Deployment]``, watch events as
``WatchEvent[Deployment]``. A model names its resource through ``gvk``; built-in kinds map to
their plural through the built-in resource table, anything else through the REST mapper.

``Client`` bundles one REST client, discovery, the mapper and both clients: its ``resource``
takes a model class (typed) or anything the dynamic client accepts.

Watch streams yield ``kplane.client.watch.WatchEvent[Model]`` (the dynamic client's event type,
with a model for ``object``) and raise an ``ERROR`` event's typed error (e.g. ``errors.Gone``),
as the dynamic client does. Subresources on ``update`` and
``patch`` must return the resource's own kind (``status``); use ``get_subresource`` or the dynamic
client for ``scale``.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any, Generic, TypeVar, overload

import msgspec
import orjson

from kplane.api import builtin
from kplane.api.gvk import GroupVersionKind
from kplane.client import config as config_mod
from kplane.client import discovery, dynamic, mapper, rest, transport
from kplane.client import options as options_mod
from kplane.client import watch as watch_mod
from kplane.client.models import _base, meta_v1

M = TypeVar("M", bound=msgspec.Struct)


class ObjectList(msgspec.Struct, Generic[M], kw_only=True, omit_defaults=True, gc=False):
    """One page of a list: ``metadata.resourceVersion`` and ``metadata.continue``, and the items."""

    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ListMeta | None = None
    items: list[M] = msgspec.field(default_factory=list)


WatchEvent = watch_mod.WatchEvent


class _RawEvent(msgspec.Struct, gc=False):
    type: str
    object: msgspec.Raw


_RAW_EVENT = msgspec.json.Decoder(_RawEvent)


class StructCodec(Generic[M]):
    """A ``dynamic.Codec`` for one model class."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self._obj = msgspec.json.Decoder(model)
        self._list = msgspec.json.Decoder(ObjectList[model])  # type: ignore[valid-type]
        self._encoder = msgspec.json.Encoder()

    def encode(self, obj: M, resource: dynamic.Resource) -> bytes:
        if getattr(obj, "api_version", None) is None or getattr(obj, "kind", None) is None:
            obj = msgspec.structs.replace(obj, api_version=resource.api_version, kind=resource.kind)
        return self._encoder.encode(obj)

    def decode(self, data: bytes) -> M:
        return self._obj.decode(data)

    def decode_list(self, data: bytes) -> ObjectList[M]:
        out: ObjectList[M] = self._list.decode(data)
        return out

    def decode_event(self, line: bytes) -> watch_mod.WatchEvent[M]:
        raw = _RAW_EVENT.decode(line)
        kind = watch_mod.event_type(raw.type)
        if kind is watch_mod.EventType.ERROR:
            watch_mod.raise_error(kind, orjson.loads(bytes(raw.object)))
        return watch_mod.WatchEvent(kind, self._obj.decode(raw.object))

    def list_parts(self, page: ObjectList[M], resource: dynamic.Resource) -> tuple[list[M], str, str]:
        for item in page.items:  # Lists omit their items' kind; set it as the dynamic client does.
            if getattr(item, "kind", None) is None:
                item.kind = resource.kind  # type: ignore[attr-defined]
            if getattr(item, "api_version", None) is None:
                item.api_version = resource.api_version  # type: ignore[attr-defined]
        meta = page.metadata
        rv = (meta.resource_version or "") if meta else ""
        token = (meta.continue_ or "") if meta else ""
        return page.items, rv, token

    def name_and_namespace(self, obj: M) -> tuple[str, str]:
        meta = getattr(obj, "metadata", None)
        if meta is None:
            return "", ""
        return meta.name or "", meta.namespace or ""


TypedResourceClient = dynamic.ResourceClient[M, ObjectList[M]]

_BUILTIN: dict[GroupVersionKind, dynamic.Resource] = {
    rec.gvk: dynamic.Resource(rec.group, rec.version, rec.plural, rec.kind, rec.namespaced)
    for rec in builtin.BUILTIN_RECORDS
}


def is_model_class(ref: Any) -> bool:
    """True for a class the typed client speaks: a generated model, or any msgspec Struct naming its
    kind with a ``gvk`` class attribute (CRD types declared with ``kplane.runtime.markers.kind``)."""
    return isinstance(ref, type) and (
        issubclass(ref, _base.Model)
        or (issubclass(ref, msgspec.Struct) and isinstance(getattr(ref, "gvk", None), GroupVersionKind))
    )


def to_json(obj: msgspec.Struct) -> dict[str, Any]:
    """A model instance as a JSON-shaped dict; ``apiVersion``/``kind`` left unset come from its
    class's ``gvk`` (as a Go object's kind comes from the scheme)."""
    out: dict[str, Any] = msgspec.to_builtins(obj)
    gvk = getattr(type(obj), "gvk", None)
    if isinstance(gvk, GroupVersionKind):
        out.setdefault("apiVersion", gvk.api_version)
        out.setdefault("kind", gvk.kind)
    return out


def resource_of(model: type[Any]) -> dynamic.ResourceRef:
    """The resource serving ``model``: a ``Resource`` for built-in kinds, else its GVK for the mapper."""
    gvk: GroupVersionKind = model.gvk
    return _BUILTIN.get(gvk, gvk)


class TypedClient:
    """Builds model-speaking ``ResourceClient``s over one ``RESTClient``."""

    def __init__(self, rest_client: rest.RESTClient, mapper: mapper.RESTMapper | None = None) -> None:
        self.rest = rest_client
        self.mapper = mapper
        self._codecs: dict[type[Any], Any] = {}

    def resource(self, model: type[M], namespace: options_mod.Namespace = None) -> TypedResourceClient[M]:
        """A client for the resource that serves ``model``, bound to ``namespace``."""
        codec: StructCodec[M] | None = self._codecs.get(model)
        if codec is None:
            codec = self._codecs[model] = StructCodec(model)
        return dynamic.ResourceClient(
            self.rest, resource_of(model), codec, namespace=namespace, mapper=self.mapper
        )


class Client:
    """Everything for one server: ``rest``, ``discovery``, ``mapper``, ``dynamic`` and ``typed``.

    ``config`` defaults to ``Config.load()`` (``$KUBECONFIG``, in-cluster, ``~/.kube/config``).
    ``cache_dir`` is the discovery disk cache (None: memory only; ``discovery.default_cache_dir``
    gives kubectl's). Use ``async with Client() as c:`` or call ``close()``.
    """

    def __init__(
        self,
        config: config_mod.Config | None = None,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        warning_handler: transport.WarningHandler | None = None,
    ) -> None:
        config = config or config_mod.Config.load()
        self.config = config
        self.rest = rest.RESTClient(config, warning_handler=warning_handler)
        self.discovery = discovery.DiscoveryClient(self.rest, cache_dir=cache_dir)
        self.mapper = mapper.RESTMapper(self.discovery)
        self.dynamic = dynamic.DynamicClient(self.rest, self.mapper)
        self.typed = TypedClient(self.rest, self.mapper)

    @overload
    def resource(self, ref: type[M], namespace: options_mod.Namespace = None) -> TypedResourceClient[M]: ...

    @overload
    def resource(
        self, ref: dynamic.ResourceRef, namespace: options_mod.Namespace = None
    ) -> dynamic.DynamicResourceClient: ...

    def resource(self, ref: Any, namespace: options_mod.Namespace = None) -> Any:
        """A typed client for a model class, else a dynamic one for a ``Resource`` or a name."""
        if is_model_class(ref):
            return self.typed.resource(ref, namespace)
        return self.dynamic.resource(ref, namespace)

    async def close(self) -> None:
        await self.rest.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
