"""Assembling ``meta.k8s.io/v1`` Tables for lists, single objects and watch events.

Which printer a resource gets is decided once per catalog record (and cached): declared printer
columns first, then the built-in printer for its group and kind, then the generic fallbacks
(``generic``). Building a row is then one call of the printer's cell function; ages are
measured from one ``now`` per table and cached by timestamp, so a list of thousands of objects
costs a few microseconds per row.

Objects are never copied or mutated: a row's ``object`` (``includeObject=Object``) and the
``metadata`` of its ``PartialObjectMetadata`` are the caller's own dicts, shared. The caller
serializes the result before touching the objects again.
"""

from __future__ import annotations

import datetime
import functools
from typing import Any, Literal

from kplane._util import clock
from kplane.api import catalog
from kplane.server.endpoints.table import _format, apis, cluster, core, generic, pods, workloads
from kplane.server.endpoints.table import printer as p

IncludeObject = Literal["None", "Metadata", "Object"]

TABLE_API_VERSION = "meta.k8s.io/v1"

_BUILTIN: dict[tuple[str, str], p.Printer] = {
    ("", "Pod"): pods.PRINTER,
    **core.PRINTERS,
    **workloads.PRINTERS,
    **cluster.PRINTERS,
    **apis.PRINTERS,
}

_REAL_CLOCK = clock.RealClock()


@functools.lru_cache(maxsize=1024)
def printer_for(record: catalog.ResourceRecord) -> p.Printer:
    """The printer serving ``record`` (cached per record; records are immutable)."""
    if record.printer_columns:
        return generic.from_printer_columns(record.printer_columns)
    builtin = None if record.custom else _BUILTIN.get((record.group, record.kind))
    if builtin is not None:
        return builtin
    return generic.CUSTOM_DEFAULT if record.custom else generic.CREATED_AT


def column_definitions(record: catalog.ResourceRecord) -> list[dict[str, Any]]:
    """The Table column definitions of ``record``, wide (``priority: 1``) ones included.

    Returns fresh dicts each call; the caller may modify them.
    """
    return [dict(c) for c in printer_for(record).columns]


def _row(
    printer: p.Printer, obj: dict[str, Any], ctx: _format.Context, include: IncludeObject
) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": printer.cells(obj, ctx)}
    if printer.conditions is not None:
        conditions = printer.conditions(obj)
        if conditions:
            row["conditions"] = conditions
    if include == "Metadata":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": TABLE_API_VERSION,
            "metadata": obj.get("metadata") or {},
        }
    elif include == "Object":
        row["object"] = obj
    return row


def table(
    record: catalog.ResourceRecord,
    objects: list[dict[str, Any]],
    *,
    include_object: IncludeObject = "Metadata",
    no_headers: bool = False,
    resource_version: str = "",
    continue_token: str = "",
    remaining: int | None = None,
    now: datetime.datetime | None = None,
) -> dict[str, Any]:
    """A ``Table`` with one row per object, in the order given.

    ``columnDefinitions`` is ``[]`` when ``no_headers``. The Table's ``metadata`` carries
    ``resourceVersion``, ``continue`` and ``remainingItemCount`` when set (for a single-object
    GET pass the object's resourceVersion). Ages are measured from ``now`` (default: the real
    clock, read once). Objects are shared, not copied, and never modified.
    """
    printer = printer_for(record)
    ctx = _format.Context(now if now is not None else _REAL_CLOCK.now())
    metadata: dict[str, Any] = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining is not None:
        metadata["remainingItemCount"] = remaining
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": metadata,
        "columnDefinitions": [] if no_headers else column_definitions(record),
        "rows": [_row(printer, obj, ctx, include_object) for obj in objects],
    }


def watch_table_event(
    record: catalog.ResourceRecord,
    event_type: str,
    obj: dict[str, Any],
    *,
    first: bool,
    include_object: IncludeObject = "Metadata",
    now: datetime.datetime | None = None,
) -> dict[str, Any]:
    """The ``{"type", "object"}`` payload of one watch event for a client that asked for Table.

    ``object`` is a Table with one row whose ``metadata.resourceVersion`` is the object's;
    column definitions are sent only when ``first`` (kubectl keeps the headers of the first
    event). ``ERROR`` events pass their ``Status`` through unchanged; ``BOOKMARK`` events
    become a Table with no rows that carries only the resourceVersion.
    """
    if event_type == "ERROR":
        return {"type": event_type, "object": obj}
    resource_version = str(_format.get(obj, "metadata", "resourceVersion") or "")
    rows = [] if event_type == "BOOKMARK" else [obj]
    return {
        "type": event_type,
        "object": table(
            record,
            rows,
            include_object=include_object,
            no_headers=not first,
            resource_version=resource_version,
            now=now,
        ),
    }
