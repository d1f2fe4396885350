"""The dynamic client: every verb of the Kubernetes API on any resource, objects as plain dicts.

``DynamicClient.resource(ref)`` gives a ``ResourceClient`` for one resource. ``ref`` is a
``Resource`` (group, version, plural, kind, namespaced) or anything the REST mapper resolves
(``"deploy"``, ``"deployments.apps"``, ``"Deployment"``, a ``GroupVersionResource``); names are
resolved on first use, so ``resource()`` itself never does I/O.

``ResourceClient`` is generic over its codec, which decides what objects, lists and watch events
look like: ``JSONCodec`` (here) gives dicts, ``kplane.client.typed`` gives msgspec models. Both
share every request path, so the typed client is this client with a different codec, not a twin.

Namespaces: a per-call ``namespace`` wins, then the one bound by ``resource(..., namespace=)``,
then (for create/update) the object's ``metadata.namespace``, then the kubeconfig context's
(``Config.namespace``), as kubectl does. ``namespace=ALL`` (``kplane.client.options``) makes list,
watch and delete_collection span every namespace. Cluster-scoped resources ignore namespaces.
What to list or watch is one ``ListOptions`` value.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any, Generic, Literal, Protocol, TypeVar

import orjson

from kplane.api import errors
from kplane.client import mapper as mapper_mod
from kplane.client import options as options_mod
from kplane.client import resource as resource_mod
from kplane.client import rest
from kplane.client import watch as watch_mod

PatchType = Literal["json", "merge", "strategic", "apply"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}

PropagationPolicy = Literal["Orphan", "Background", "Foreground"]


Resource = resource_mod.Resource
ResourceRef = resource_mod.ResourceRef
ListOptions = options_mod.ListOptions
_EVERYTHING = ListOptions()

ObjT = TypeVar("ObjT")
ListT = TypeVar("ListT")


class Codec(Protocol[ObjT, ListT]):
    """How a ``ResourceClient`` turns its objects into request bodies and replies into objects.

    Decoders receive whole reply bodies (one object, one list page, one watch line) and must not
    keep references to them.
    """

    def encode(self, obj: ObjT, resource: Resource) -> bytes:
        """The JSON body for ``obj`` (``apiVersion``/``kind`` filled in from ``resource`` if unset)."""
        ...

    def decode(self, data: bytes) -> ObjT: ...

    def decode_list(self, data: bytes) -> ListT: ...

    def decode_event(self, line: bytes) -> watch_mod.WatchEvent[ObjT]:
        """One watch line as an event; an ERROR event raises its typed error (``watch.decode``'s rule)."""
        ...

    def list_parts(self, page: ListT, resource: Resource) -> tuple[list[ObjT], str, str]:
        """A page's items (with ``apiVersion``/``kind`` set), its resourceVersion and continue token."""
        ...

    def name_and_namespace(self, obj: ObjT) -> tuple[str, str]:
        """``metadata.name`` and ``metadata.namespace`` of ``obj`` (empty strings when unset)."""
        ...


Object = dict[str, Any]


class JSONCodec:
    """Objects, lists and watch events as the plain dicts ``orjson`` decodes."""

    def encode(self, obj: Object, resource: Resource) -> bytes:
        if "apiVersion" not in obj or "kind" not in obj:
            obj = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        return orjson.dumps(obj)

    def decode(self, data: bytes) -> Object:
        out: Object = orjson.loads(data)
        return out

    decode_list = decode

    def decode_event(self, line: bytes) -> watch_mod.WatchEvent[Object]:
        return watch_mod.decode(orjson.loads(line))

    def list_parts(self, page: Object, resource: Resource) -> tuple[list[Object], str, str]:
        items: list[Object] = page.get("items") or []
        for item in items:  # Lists omit their items' kind; client-go's unstructured decoder fills it.
            if "kind" not in item:
                item["kind"] = resource.kind
            if "apiVersion" not in item:
                item["apiVersion"] = resource.api_version
        meta = page.get("metadata") or {}
        return items, str(meta.get("resourceVersion", "")), str(meta.get("continue", ""))

    def name_and_namespace(self, obj: Object) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return str(meta.get("name") or ""), str(meta.get("namespace") or "")


def _write_query(
    *, dry_run: bool, field_manager: str | None, field_validation: str | None, force: bool | None = None
) -> dict[str, str]:
    query: dict[str, str] = {}
    if dry_run:
        query["dryRun"] = "All"
    if field_manager is not None:
        query["fieldManager"] = field_manager
    if field_validation is not None:
        query["fieldValidation"] = field_validation
    if force is not None:
        query["force"] = "true" if force else "false"
    return query


def _delete_options(
    *,
    propagation_policy: str | None,
    grace_period_seconds: int | None,
    preconditions: Mapping[str, str] | None,
    dry_run: bool,
) -> dict[str, Any] | None:
    opts: dict[str, Any] = {}
    if propagation_policy is not None:
        opts["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        opts["gracePeriodSeconds"] = grace_period_seconds
    if preconditions:
        opts["preconditions"] = dict(preconditions)
    if dry_run:
        opts["dryRun"] = ["All"]
    if not opts:
        return None
    return {"kind": "DeleteOptions", "apiVersion": "v1", **opts}


class ResourceClient(Generic[ObjT, ListT]):
    """Every verb on one resource; objects in and out go through ``codec``."""

    def __init__(
        self,
        rest_client: rest.RESTClient,
        ref: ResourceRef,
        codec: Codec[ObjT, ListT],
        *,
        namespace: options_mod.Namespace = None,
        mapper: mapper_mod.RESTMapper | None = None,
    ) -> None:
        if not isinstance(ref, Resource) and mapper is None:
            raise TypeError(f"resolving {ref!r} needs a REST mapper: pass mapper= or a Resource")
        self.rest = rest_client
        self.codec = codec
        self.namespace = namespace
        self._ref = ref
        self._mapper = mapper
        self._resource = ref if isinstance(ref, Resource) else None

    async def resource(self) -> Resource:
        """The resolved ``Resource`` (asks the REST mapper on first use when built from a name)."""
        if self._resource is None:
            assert self._mapper is not None and not isinstance(self._ref, Resource)
            self._resource = await self._mapper.resolve(self._ref)
        return self._resource

    async def _path(
        self,
        namespace: options_mod.Namespace,
        name: str = "",
        subresource: str = "",
        *,
        obj_ns: str = "",
        one: bool,
    ) -> tuple[Resource, str]:
        res = await self.resource()
        if not res.namespaced:
            return res, res.path(None, name, subresource)
        chosen = namespace or self.namespace or obj_ns or self.rest.config.namespace
        if one and not name:
            raise ValueError("a resource name is required")
        if chosen is options_mod.ALL:
            if one:
                raise ValueError(f"namespace=ALL addresses a collection, not one {res.kind}")
            return res, res.path(None, name, subresource)
        if not chosen:
            raise ValueError(f"a namespace is required for namespaced resource {res.plural}")
        return res, res.path(chosen, name, subresource)

    def _observe_write(
        self,
        verb: str,
        res: Resource,
        subresource: str,
        namespace: str | None,
        name: str,
        result: Any,
        error: BaseException | None,
    ) -> None:
        observer = self.rest.write_observer
        if observer is not None:
            resource = f"{res.plural}.{res.group}" if res.group else res.plural
            ns = (namespace or self.namespace or "") if res.namespaced else ""
            observer(verb, resource, subresource, ns if isinstance(ns, str) else "", name, result, error)

    # Reads.

    async def get(self, name: str, *, namespace: str | None = None) -> ObjT:
        """The object named ``name``; raises ``errors.NotFound`` when it does not exist."""
        _, path = await self._path(namespace, name, one=True)
        return self.codec.decode(await self.rest.request_raw("GET", path))

    async def list(
        self, options: ListOptions | None = None, *, namespace: options_mod.Namespace = None
    ) -> ListT:
        """One page of the collection exactly as the server sent it (follow ``metadata.continue``)."""
        _, path = await self._path(namespace, one=False)
        query = (options or _EVERYTHING).query()
        return self.codec.decode_list(await self.rest.request_raw("GET", path, query=query))

    async def pages(
        self, options: ListOptions | None = None, *, namespace: options_mod.Namespace = None
    ) -> AsyncIterator[builtins.list[ObjT]]:
        """``async for items in pages():`` each page's items, following ``continue`` tokens.

        Pages hold ``options.limit`` items (default 500, client-go's pager); items carry
        ``apiVersion`` and ``kind``. A continue token that expires between pages raises
        ``errors.Gone`` (``list_all`` recovers from that by listing again in one request).
        """
        opts = options or _EVERYTHING
        if not opts.limit:
            opts = dataclasses.replace(opts, limit=options_mod.DEFAULT_PAGE_SIZE)
        res = await self.resource()
        while True:
            chunk, _, token = self.codec.list_parts(await self.list(opts, namespace=namespace), res)
            yield chunk
            if not token:
                return
            opts = dataclasses.replace(opts, continue_token=token, resource_version=None)

    async def list_all(
        self, options: ListOptions | None = None, *, namespace: options_mod.Namespace = None
    ) -> tuple[builtins.list[ObjT], str]:
        """Every item, following ``continue`` tokens, and the resourceVersion of the list.

        Pages as ``pages``. If a continue token expires (410) mid-way, the whole list is fetched
        again in one unpaged request, as client-go's pager does.
        """
        opts = options or _EVERYTHING
        if not opts.limit:
            opts = dataclasses.replace(opts, limit=options_mod.DEFAULT_PAGE_SIZE)
        res = await self.resource()
        items: builtins.list[ObjT] = []
        token = ""
        while True:
            try:
                page = await self.list(opts, namespace=namespace)
            except errors.Gone:
                if not token:
                    raise
                unpaged = dataclasses.replace(opts, limit=0, continue_token="")
                full, rv, _ = self.codec.list_parts(await self.list(unpaged, namespace=namespace), res)
                return full, rv
            chunk, rv, token = self.codec.list_parts(page, res)
            items.extend(chunk)
            if not token:
                return items, rv
            opts = dataclasses.replace(opts, continue_token=token, resource_version=None)

    async def watch(
        self, options: ListOptions | None = None, *, namespace: options_mod.Namespace = None
    ) -> AsyncIterator[watch_mod.WatchEvent[ObjT]]:
        """The server's watch events (BOOKMARKs included) until it ends the stream.

        Errors raise typed errors, before the stream starts or from within it: an ERROR event (such
        as upstream's in-stream 410 for a too-old resourceVersion) raises ``errors.Gone`` and so on,
        the same for the dynamic and the typed client.
        """
        _, path = await self._path(namespace, one=False)
        query = (options or _EVERYTHING).query(watch=True)
        async for line in self.rest.stream("GET", path, query=query):
            yield self.codec.decode_event(line)

    async def get_subresource(
        self, name: str, subresource: str, *, namespace: str | None = None, query: rest.Query | None = None
    ) -> Any:
        """GET a subresource (``scale``, ``status``, ``log``...): JSON decoded to dicts, text as str."""
        _, path = await self._path(namespace, name, subresource, one=True)
        return await self.rest.request("GET", path, query=query)

    # Writes.

    async def create(
        self,
        obj: ObjT,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> ObjT:
        """Create ``obj``; raises ``errors.AlreadyExists`` or ``errors.Invalid`` (with causes)."""
        _, obj_ns = self.codec.name_and_namespace(obj)
        res, path = await self._path(namespace, obj_ns=obj_ns, one=False)
        if res.namespaced and not (namespace or self.namespace or obj_ns):
            raise ValueError(f"a namespace is required for namespaced resource {res.plural}")
        query = _write_query(dry_run=dry_run, field_manager=field_manager, field_validation=field_validation)
        try:
            data = await self.rest.request_raw("POST", path, query=query, body=self.codec.encode(obj, res))
        except Exception as err:
            self._observe_write("create", res, "", namespace or obj_ns, "", None, err)
            raise
        out = self.codec.decode(data)
        self._observe_write("create", res, "", namespace or obj_ns, "", out, None)
        return out

    async def update(
        self,
        obj: ObjT,
        *,
        namespace: str | None = None,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
        field_validation: str | None = None,
    ) -> ObjT:
        """Replace the object named by ``obj.metadata.name`` (PUT); a stale resourceVersion → Conflict."""
        name, obj_ns = self.codec.name_and_namespace(obj)
        res, path = await self._path(namespace, name, subresource, obj_ns=obj_ns, one=True)
        query = _write_query(dry_run=dry_run, field_manager=field_manager, field_validation=field_validation)
        try:
            data = await self.rest.request_raw("PUT", path, query=query, body=self.codec.encode(obj, res))
        except Exception as err:
            self._observe_write("update", res, subresource, namespace or obj_ns, name, None, err)
            raise
        out = self.codec.decode(data)
        self._observe_write("update", res, subresource, namespace or obj_ns, name, out, None)
        return out

    async def patch(
        self,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = "merge",
        namespace: str | None = None,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> ObjT:
        """PATCH ``name``. ``patch`` is bytes/str sent as is, or a value encoded as JSON.

        ``apply`` is server-side apply: it needs ``field_manager``; ``force`` takes fields over.
        """
        if patch_type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"unknown patch type {patch_type!r}")
        res, path = await self._path(namespace, name, subresource, one=True)
        query = _write_query(
            dry_run=dry_run, field_manager=field_manager, field_validation=field_validation, force=force
        )
        body = patch if isinstance(patch, bytes | str) else orjson.dumps(patch)
        try:
            data = await self.rest.request_raw(
                "PATCH", path, query=query, body=body, content_type=PATCH_CONTENT_TYPES[patch_type]
            )
        except Exception as err:
            self._observe_write("patch", res, subresource, namespace, name, None, err)
            raise
        out = self.codec.decode(data)
        self._observe_write("patch", res, subresource, namespace, name, out, None)
        return out

    async def delete(
        self,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete ``name``: the server's reply (a ``Status``, or the object if it lingers on finalizers).

        ``preconditions`` may hold ``uid`` and ``resourceVersion``; a mismatch raises Conflict.
        """
        res, path = await self._path(namespace, name, one=True)
        body = _delete_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
            dry_run=dry_run,
        )
        try:
            out: dict[str, Any] = await self.rest.request("DELETE", path, body=body) or {}
        except Exception as err:
            self._observe_write("delete", res, "", namespace, name, None, err)
            raise
        self._observe_write("delete", res, "", namespace, name, out, None)
        return out

    async def delete_collection(
        self,
        options: ListOptions | None = None,
        *,
        namespace: options_mod.Namespace = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete every object ``options`` selects; returns the server's reply (a Status or the list)."""
        _, path = await self._path(namespace, one=False)
        body = _delete_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=None,
            dry_run=dry_run,
        )
        query = (options or _EVERYTHING).query()
        out: dict[str, Any] = await self.rest.request("DELETE", path, query=query, body=body) or {}
        return out


DynamicResourceClient = ResourceClient[Object, Object]


class DynamicClient:
    """Builds dict-speaking ``ResourceClient``s over one ``RESTClient``."""

    def __init__(self, rest_client: rest.RESTClient, mapper: mapper_mod.RESTMapper | None = None) -> None:
        self.rest = rest_client
        self.mapper = mapper
        self._codec = JSONCodec()

    def resource(self, ref: ResourceRef, namespace: options_mod.Namespace = None) -> DynamicResourceClient:
        """A client for ``ref`` bound to ``namespace`` (see the module docstring for namespaces)."""
        return ResourceClient(self.rest, ref, self._codec, namespace=namespace, mapper=self.mapper)
