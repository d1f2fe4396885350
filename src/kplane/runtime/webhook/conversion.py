"""Conversion webhooks for multi-version CRDs: ConversionReview v1 over hub-and-spoke types.

As controller-runtime's ``conversion`` package (reference/controllers.md §6.6): of the versions of a
kind (types declared with ``markers.kind``), exactly one is the hub (``@hub``); every other version
(a spoke) implements::

    def convert_to(self) -> HubType: ...                       # this spoke → the hub
    @classmethod
    def convert_from(cls, hub: HubType) -> Self: ...           # the hub → this spoke

Hub → spoke and spoke → hub are direct; spoke → spoke goes through the hub. Converting an object
to its own version is an error, as upstream ("conversion is not allowed between same type").

``Converter.review(body)`` answers one ConversionReview: each object of ``request.objects`` is
decoded into the type of its apiVersion/kind, converted to ``request.desiredAPIVersion``, and
encoded with ``apiVersion``/``kind`` set. The response echoes ``uid``; ``result`` is ``{status:
Success}``, or ``{status: Failure, message}`` if any object fails (then no object is returned),
as upstream's ``errored``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import msgspec

from kplane.api.gvk import GroupVersionKind
from kplane.runtime import markers

T = TypeVar("T")

HUB_ATTRIBUTE = "__kplane_hub__"


def hub(cls: type[T]) -> type[T]:
    """Mark ``cls`` the hub version of its kind (controller-runtime's ``Hub()`` marker method)."""
    setattr(cls, HUB_ATTRIBUTE, True)
    return cls


def is_hub(cls: type[Any]) -> bool:
    return bool(cls.__dict__.get(HUB_ATTRIBUTE, False))


class ConversionError(Exception):
    """A conversion that cannot be made; its text becomes the response's failure message."""


class Converter:
    """Converts between the versions of the kinds given (hub-and-spoke, module docstring)."""

    def __init__(
        self, types: Iterable[type[Any]] = (), *, on_panic: Callable[[], None] | None = None
    ) -> None:
        """``on_panic`` is called when a converter raises something other than ``ConversionError``."""
        self._on_panic = on_panic
        self._types: dict[GroupVersionKind, type[Any]] = {}
        for cls in types:
            self.register(cls)

    def register(self, cls: type[Any]) -> None:
        """Add one version's type (declared with ``markers.kind``)."""
        info = markers.kind_info(cls)
        if info is None:
            raise ValueError(f"{cls.__qualname__} is not declared with kplane.runtime.markers.kind")
        self._types[info.gvk] = cls

    def kinds(self) -> set[tuple[str, str]]:
        """The (group, kind) pairs this converter serves."""
        return {(gvk.group, gvk.kind) for gvk in self._types}

    def hub_of(self, group: str, kind: str) -> type[Any]:
        hubs = [c for g, c in self._types.items() if (g.group, g.kind) == (group, kind) and is_hub(c)]
        if len(hubs) != 1:
            raise ConversionError(f"{kind}.{group} needs exactly one hub version, has {len(hubs)}")
        return hubs[0]

    def convert(self, obj: dict[str, Any], desired_api_version: str) -> dict[str, Any]:
        """``obj`` converted to ``desired_api_version`` (raises ``ConversionError``)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise ConversionError("object has no apiVersion or kind")
        src_gvk = _gvk(api_version, kind)
        dst_gvk = _gvk(desired_api_version, kind)
        src_cls, dst_cls = self._types.get(src_gvk), self._types.get(dst_gvk)
        if src_cls is None or dst_cls is None:
            missing = src_gvk if src_cls is None else dst_gvk
            raise ConversionError(f"no kind {missing.kind!r} is registered for version {missing.api_version}")
        if src_cls is dst_cls:
            raise ConversionError(f"conversion is not allowed between same type {src_cls.__qualname__}")
        try:
            src = msgspec.convert(obj, src_cls, str_keys=True)
        except msgspec.ValidationError as err:
            raise ConversionError(f"decoding {src_gvk.kind} {src_gvk.api_version}: {err}") from err
        hub_cls = self.hub_of(src_gvk.group, kind)
        value = src if src_cls is hub_cls else src.convert_to()
        if dst_cls is not hub_cls:
            value = dst_cls.convert_from(value)
        if not isinstance(value, dst_cls):
            raise ConversionError(f"conversion to {dst_cls.__qualname__} returned {type(value).__qualname__}")
        out: dict[str, Any] = msgspec.to_builtins(value)
        out["apiVersion"] = desired_api_version
        out["kind"] = kind
        return out

    def review(self, body: dict[str, Any]) -> dict[str, Any]:
        """The ConversionReview answering ``body`` (a decoded ConversionReview with a request).

        Raises ``ValueError`` for a body without a ``request`` (the HTTP layer answers 400).
        """
        request = body.get("request")
        if not isinstance(request, dict):
            raise ValueError("conversion request is nil")
        uid = request.get("uid", "")
        desired = request.get("desiredAPIVersion")
        objects = request.get("objects") or []
        response: dict[str, Any] = {"uid": uid}
        try:
            if not isinstance(desired, str) or not isinstance(objects, list):
                raise ConversionError("desiredAPIVersion must be a string and objects a list")
            converted = [self.convert(o if isinstance(o, dict) else {}, desired) for o in objects]
        except ConversionError as err:
            response["result"] = {"metadata": {}, "status": "Failure", "message": str(err)}
        except Exception:  # a converter's own bug: upstream recovers panics the same way
            if self._on_panic is not None:
                self._on_panic()
            response["result"] = {
                "metadata": {},
                "status": "Failure",
                "message": "internal error occurred during conversion",
            }
        else:
            response["convertedObjects"] = converted
            response["result"] = {"metadata": {}, "status": "Success"}
        return {
            "apiVersion": body.get("apiVersion", "apiextensions.k8s.io/v1"),
            "kind": "ConversionReview",
            "response": response,
        }


def _gvk(api_version: str, kind: str) -> GroupVersionKind:
    group, _, version = api_version.rpartition("/")
    return GroupVersionKind(group, version, kind)
