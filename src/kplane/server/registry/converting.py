"""Versions at the registry's boundary, webhook conversion included.

Objects are stored at the record's storage version and served at its own. ``objects.to_version`` /
``to_storage`` convert with pure functions (built-in kinds, CRDs with strategy ``None``); a CRD whose
``conversion.strategy`` is ``Webhook`` (``record.conversion_webhook``) converts through the
``Converter`` given at construction instead, one call per object, or per list (every object of a
list page that is not at the served version, in one review, as upstream converts a list).
"""

from __future__ import annotations

from typing import Any, Protocol

from kplane.api.catalog import ResourceRecord
from kplane.server.registry.objects import to_storage, to_version

Object = dict[str, Any]


class Converter(Protocol):
    async def convert(
        self, record: ResourceRecord, objects: list[Object], api_version: str, *, as_list: bool = False
    ) -> list[Object]:
        """``objects`` at ``api_version`` in order (those already there unchanged); raises an
        ``APIError`` when the conversion fails. Must not change its arguments."""
        ...


class Conversion:
    """``served`` / ``served_list`` / ``stored``: an object at the record's served or storage version."""

    def __init__(self, converter: Converter | None = None) -> None:
        self._converter = converter

    def _webhook(self, record: ResourceRecord) -> Converter | None:
        return self._converter if record.conversion_webhook is not None else None

    def served_now(self, record: ResourceRecord, obj: Object) -> Object | None:
        """``served`` without waiting, or None when it needs the conversion webhook."""
        if (
            record.conversion_webhook is None
            or self._converter is None
            or obj.get("apiVersion") == record.api_version
        ):
            return to_version(record, obj)
        return None

    async def served(self, record: ResourceRecord, obj: Object) -> Object:
        now = self.served_now(record, obj)
        if now is not None:
            return now
        converter = self._webhook(record)
        assert converter is not None
        return (await converter.convert(record, [obj], record.api_version))[0]

    async def served_list(self, record: ResourceRecord, objs: list[Object]) -> list[Object]:
        converter = self._webhook(record)
        if converter is None:
            return [to_version(record, o) for o in objs]
        return await converter.convert(record, objs, record.api_version, as_list=True)

    def stored_now(self, record: ResourceRecord, obj: Object) -> Object | None:
        """``stored`` without waiting, or None when it needs the conversion webhook."""
        if (
            record.conversion_webhook is None
            or self._converter is None
            or not record.storage_version
            or obj.get("apiVersion") == f"{record.group}/{record.storage_version}"
        ):
            return to_storage(record, obj)
        return None

    async def stored(self, record: ResourceRecord, obj: Object) -> Object:
        """``obj`` as persisted (a pure conversion may change ``obj`` in place)."""
        now = self.stored_now(record, obj)
        if now is not None:
            return now
        converter = self._webhook(record)
        assert converter is not None
        return (await converter.convert(record, [obj], f"{record.group}/{record.storage_version}"))[0]
