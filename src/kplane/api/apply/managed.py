"""``metadata.managedFields``: decoding, encoding and the identity of a field manager.

An entry is identified as upstream's ``BuildManagerIdentifier`` does: by manager name, operation
and subresource, plus the apiVersion for ``Update`` entries (an applier keeps one entry across
versions; an updater gets one per version). Encoded entries are sorted as upstream sorts them:
``Apply`` before ``Update``, then by time (seconds), manager, apiVersion and subresource. Keys of
an entry come in upstream's order: manager, operation, apiVersion, time, fieldsType, fieldsV1,
subresource (time and subresource only when set).

``cap_update_managers`` folds the oldest ``Update`` entries into an ``ancient-changes`` entry per
apiVersion once there are more than ten, as upstream's ``capManagersManager`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from kplane.api.apply import fieldpath

APPLY, UPDATE = "Apply", "Update"
MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"


@dataclasses.dataclass(slots=True)
class Entry:
    """One managedFields entry, its fields decoded. ``time`` is RFC 3339 seconds or None."""

    manager: str
    operation: str
    api_version: str
    fields: fieldpath.FieldSet
    time: str | None = None
    subresource: str = ""

    @property
    def identity(self) -> str:
        return identity(self.manager, self.operation, self.api_version, self.subresource)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = self.fields.to_fields_v1()
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def identity(manager: str, operation: str, api_version: str, subresource: str = "") -> str:
    """The manager identifier: the JSON of the entry without time, fields and (for appliers)
    apiVersion. Conflict messages decode it back; sorting by it orders managers as upstream."""
    key = (manager, operation, api_version, subresource)
    known = _identities.get(key)
    if known is None:
        known = _identity(manager, operation, api_version, subresource)
        if len(_identities) >= _IDENTITIES_SIZE:
            _identities.clear()
        _identities[key] = known
    return known


_IDENTITIES_SIZE = 1024
_identities: dict[tuple[str, str, str, str], str] = {}


def _identity(manager: str, operation: str, api_version: str, subresource: str) -> str:
    doc: dict[str, str] = {}
    if manager:
        doc["manager"] = manager
    doc["operation"] = operation
    if operation != APPLY and api_version:
        doc["apiVersion"] = api_version
    if subresource:
        doc["subresource"] = subresource
    return orjson.dumps(doc).decode()


def decode(entries: Any) -> dict[str, Entry]:
    """Entries by identity, from a ``metadata.managedFields`` value (None or ``[]`` → empty).

    Raises ``ValueError`` with upstream's wording for an entry upstream rejects: an operation other
    than Apply or Update, an empty apiVersion, a fieldsType other than FieldsV1, bad fieldsV1.
    A later entry with the same identity replaces an earlier one.
    """
    out: dict[str, Entry] = {}
    if entries is None:
        return out
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for i, raw in enumerate(entries):
        if not isinstance(raw, Mapping):
            raise ValueError(f"managed fields entry {i} must be an object")
        operation = raw.get("operation")
        if operation not in (APPLY, UPDATE):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = raw.get("apiVersion") or ""
        if not isinstance(api_version, str) or not api_version:
            raise ValueError("apiVersion must not be empty")
        fields_type = raw.get("fieldsType") or ""
        if fields_type != "FieldsV1":
            if not fields_type:
                raise ValueError(f"missing fieldsType in managed fields entry {i}")
            raise ValueError(f'invalid fieldsType "{fields_type}" in managed fields entry {i}')
        fields = fieldpath.FieldSet.from_fields_v1(raw.get("fieldsV1") or {})
        time = raw.get("time")
        entry = Entry(
            manager=str(raw.get("manager") or ""),
            operation=operation,
            api_version=api_version,
            fields=fields,
            time=time if isinstance(time, str) else None,
            subresource=str(raw.get("subresource") or ""),
        )
        out[entry.identity] = entry
    return out


def is_reset(entries: Any) -> bool:
    """Whether a request's managedFields asks to clear them: exactly one empty entry (``[{}]``)."""
    return isinstance(entries, list) and len(entries) == 1 and entries[0] == {}


def _sort_key(e: Entry) -> tuple[str, str, str, str, str]:
    # Times are RFC 3339 seconds in UTC, so comparing the text compares the instants; an entry
    # without time sorts as the epoch, as upstream's zero-second default.
    return (e.operation, e.time or "", e.manager, e.api_version, e.subresource)


def encode(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` value: non-empty entries in upstream's order."""
    kept = [e for e in entries if not e.fields.empty()]
    kept.sort(key=_sort_key)
    return [e.to_dict() for e in kept]


def cap_update_managers(entries: dict[str, Entry], limit: int = MAX_UPDATE_MANAGERS) -> dict[str, Entry]:
    """Fold the oldest Update entries into one ``ancient-changes`` entry per apiVersion until at
    most ``limit`` Update entries remain; the bucket takes the time of its newest member."""
    updaters = [e for e in entries.values() if e.operation == UPDATE]
    if len(updaters) <= limit:
        return entries
    updaters.sort(key=lambda e: (e.time or "", e.identity))
    out = dict(entries)
    count = len(updaters)
    first_by_version: dict[str, Entry] = {}
    for e in updaters:
        if count <= limit:
            break
        first = first_by_version.get(e.api_version)
        if first is None:
            first_by_version[e.api_version] = e
            continue
        bucket_id = identity(ANCIENT_CHANGES, UPDATE, e.api_version)
        bucket = out.get(bucket_id)
        if bucket is None:
            out.pop(first.identity, None)
            bucket = dataclasses.replace(first, manager=ANCIENT_CHANGES, subresource="")
        out[bucket_id] = dataclasses.replace(bucket, fields=e.fields.union(bucket.fields), time=e.time)
        out.pop(e.identity, None)
        count -= 1
    return out
