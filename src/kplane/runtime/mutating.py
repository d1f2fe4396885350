"""Create-or-update and create-or-patch with a mutate function, and server-side apply of desired state.

``create_or_update(client, obj, mutate)``: ``obj`` names the object (apiVersion, kind, name,
namespace). The current state is read from the cache into ``obj`` (replacing its contents); when
absent, ``obj`` stays as given. ``mutate(obj)`` then sets the desired fields. The object is created
(``"created"``), updated with a PUT carrying the read resourceVersion when the mutation changed it
(``"updated"``; a concurrent write makes that a 409, retried by the reconcile), or left alone
(``"unchanged"``). ``mutate`` must not change the name or namespace. ``create_or_patch`` sends
merge patches instead (status through the status subresource) and can also answer
``"updatedStatus"`` (spec and status changed) or ``"updatedStatusOnly"``. These are
controller-runtime's ``OperationResult`` values.

``obj`` may also be a typed model (a generated one, or a ``markers.kind`` CRD type): ``mutate``
then receives the model, the comparison and the write see only the fields its class declares (as
with Go's typed objects: a PUT drops undeclared ones), and ``obj`` is updated in place to the
server's answer.

``apply`` (``Client.apply``) is the alternative that needs no read at all: send the fields you want,
server-side apply merges them and records this manager as their owner.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
import orjson

from kplane.api import errors
from kplane.api.patch import mergepatch
from kplane.runtime import client as client_mod

Object = dict[str, Any]
ObjT = TypeVar("ObjT", bound=Object | msgspec.Struct)
MutateFn = Callable[[ObjT], Awaitable[None] | None]
"""Sets the desired fields on the object it is given (a dict or a model, as the object passed)."""


class OperationResult(enum.StrEnum):
    """What ``create_or_update`` / ``create_or_patch`` did (controller-runtime's values)."""

    NONE = "unchanged"
    CREATED = "created"
    UPDATED = "updated"
    UPDATED_STATUS = "updatedStatus"
    UPDATED_STATUS_ONLY = "updatedStatusOnly"


async def _mutate(fn: MutateFn[Object], obj: Object, key: tuple[str, str]) -> None:
    result = fn(obj)
    if inspect.isawaitable(result):
        await result
    meta = obj.get("metadata") or {}
    if (str(meta.get("namespace") or ""), str(meta.get("name") or "")) != key:
        raise ValueError("MutateFn cannot mutate object name and/or object namespace")


async def _read_into(client: client_mod.Client, obj: Object) -> tuple[tuple[str, str], bool]:
    """Replace ``obj``'s contents with the cached object; (key, found)."""
    meta = obj.get("metadata") or {}
    key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    try:
        current = await client.get(client_mod.gvk_of(obj), key[1], key[0])
    except errors.NotFound:
        return key, False
    obj.clear()
    obj.update(current)
    return key, True


async def _read_and_mutate(
    client: client_mod.Client,
    obj: Object,
    mutate: MutateFn[Object],
    normalize: Callable[[Object], None] | None = None,
) -> Object | None:
    """Read ``obj`` and mutate it: the state before the mutation, or None if it was created instead.
    ``normalize`` (typed objects) rewrites the read object as its model sees it, before the copy."""
    key, found = await _read_into(client, obj)
    if found and normalize is not None:
        normalize(obj)
    if not found:
        await _mutate(mutate, obj, key)
        _replace(obj, await client.create(obj))
        return None
    before = _copy(obj)
    await _mutate(mutate, obj, key)
    return before


async def create_or_update(client: client_mod.Client, obj: ObjT, mutate: MutateFn[ObjT]) -> OperationResult:
    """Make the object match ``mutate`` with a create or a PUT (module docstring); ``obj`` is updated."""
    return await _run(_update, client, obj, mutate)


async def _update(client: client_mod.Client, obj: Object, before: Object | None) -> OperationResult:
    if before is None:
        return OperationResult.CREATED
    if before == obj:
        return OperationResult.NONE
    _replace(obj, await client.update(obj))
    return OperationResult.UPDATED


async def create_or_patch(client: client_mod.Client, obj: ObjT, mutate: MutateFn[ObjT]) -> OperationResult:
    """Like ``create_or_update`` but with merge patches, the status one through its subresource."""
    return await _run(_patch, client, obj, mutate)


async def _patch(client: client_mod.Client, obj: Object, before: Object | None) -> OperationResult:
    if before is None:
        return OperationResult.CREATED
    before_status, after_status = before.pop("status", None), obj.get("status")
    after = {k: v for k, v in obj.items() if k != "status"}
    patch = mergepatch.create_merge_patch(before, after)
    status_patch = mergepatch.create_merge_patch({"status": before_status}, {"status": after_status})
    status_changed = (before_status is not None or after_status is not None) and before_status != after_status
    if patch:  # a plain merge patch, as upstream's ``client.MergeFrom``: no resourceVersion
        _replace(obj, await client.patch(obj, patch))
    if status_changed:
        _replace(obj, await client.patch(obj, status_patch, subresource="status"))
    match (bool(patch), status_changed):
        case (True, True):
            return OperationResult.UPDATED_STATUS
        case (True, False):
            return OperationResult.UPDATED
        case (False, True):
            return OperationResult.UPDATED_STATUS_ONLY
        case _:
            return OperationResult.NONE


_Write = Callable[[client_mod.Client, Object, "Object | None"], Awaitable[OperationResult]]
"""The write step: the mutated object and its state before the mutation (None: it was created)."""


async def _run(write: _Write, client: client_mod.Client, obj: Any, mutate: MutateFn[Any]) -> OperationResult:
    """Read, mutate, then ``write``; a model goes through its dict view (``_typed``)."""
    if isinstance(obj, dict):
        return await write(client, obj, await _read_and_mutate(client, obj, mutate))
    return await _typed(write, client, obj, mutate)


async def _typed(
    write: _Write, client: client_mod.Client, obj: msgspec.Struct, mutate: MutateFn[Any]
) -> OperationResult:
    """``_run`` for a model: ``mutate`` sees the model, ``obj`` gets the server's answer."""
    cls = type(obj)

    def normalize(view: Object) -> None:  # the read object as the model sees it (unknown fields gone)
        _replace(view, client_mod.to_dict(msgspec.convert(view, cls)))

    async def mutate_model(view: Object) -> None:
        model = msgspec.convert(view, cls)
        result = mutate(model)
        if inspect.isawaitable(result):
            await result
        _replace(view, client_mod.to_dict(model))

    view = client_mod.to_dict(obj)
    result = await write(client, view, await _read_and_mutate(client, view, mutate_model, normalize))
    answer = msgspec.convert(view, cls)
    for field in msgspec.structs.fields(cls):
        setattr(obj, field.name, getattr(answer, field.name))
    return result


def _copy(obj: Object) -> Object:
    out: Object = orjson.loads(orjson.dumps(obj))
    return out


def _replace(obj: Object, new: Object) -> None:
    obj.clear()
    obj.update(new)
