"""Printers that are not written per kind: CRD printer columns and the two fallbacks.

* A record with ``printer_columns`` (a CRD's ``additionalPrinterColumns``) prints ``Name`` plus
  exactly those columns, each evaluated with the JSONPath subset of ``kplane.api.jsonpath``.
* A custom resource without declared columns prints ``Name`` and ``Age``: the CRD server's
  logical default is one ``date`` column ``Age`` on ``.metadata.creationTimestamp``.
* A built-in kind without a printer prints ``Name`` and ``Created At`` with the raw RFC 3339
  timestamp (kube-apiserver's default table convertor; ``kubectl get clusterroles`` shows it).

Cell values follow the CRD convertor: a missing value or one of the wrong JSON type is
``null``; ``integer`` truncates numbers; ``date`` cells hold the age (``"5m"``, or
``"<invalid>"`` for an unparseable timestamp); ``string`` cells hold the value as Go's
JSONPath printer writes it (maps as ``map[k:v]``).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kplane.api import catalog, duration, jsonpath
from kplane.server.endpoints.table import _format
from kplane.server.endpoints.table import printer as p

_CREATED = "metadata.creationTimestamp: when the server created the object, in UTC (RFC 3339)."

CREATED_AT_COLUMNS = (p.NAME, p.column("Created At", "date", _CREATED))
CUSTOM_DEFAULT_COLUMNS = (p.NAME, p.column("Age", "date", _CREATED))


def created_at_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    created = duration.parse_timestamp(meta.get("creationTimestamp"))
    text = (
        created.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if created else "0001-01-01T00:00:00Z"
    )
    return [meta.get("name", ""), text]


def custom_default_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    return [meta.get("name", ""), ctx.age(meta.get("creationTimestamp"))]


CREATED_AT = p.Printer(CREATED_AT_COLUMNS, created_at_cells)
CUSTOM_DEFAULT = p.Printer(CUSTOM_DEFAULT_COLUMNS, custom_default_cells)

_Cell = Callable[[Any, _format.Context], Any]


def _cell_converter(kind: str) -> _Cell:
    def integer(value: Any, ctx: _format.Context) -> Any:
        # upstream tablegenerator cellForJSONValue: int64(float64) for numbers
        return (
            _format.go_int64(value)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else None
        )

    def number(value: Any, ctx: _format.Context) -> Any:
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    def boolean(value: Any, ctx: _format.Context) -> Any:
        return value if isinstance(value, bool) else None

    def string(value: Any, ctx: _format.Context) -> Any:
        return _format.go_text(value)

    def date(value: Any, ctx: _format.Context) -> Any:
        if not isinstance(value, str):
            return None
        return ctx.age(value) if duration.parse_timestamp(value) else "<invalid>"

    def other(value: Any, ctx: _format.Context) -> Any:
        return None

    return {"integer": integer, "number": number, "boolean": boolean, "string": string, "date": date}.get(
        kind, other
    )


def _missing(data: Any) -> list[Any]:
    return []


def from_printer_columns(columns: tuple[catalog.PrinterColumn, ...]) -> p.Printer:
    """A printer for ``Name`` plus the declared columns, each JSONPath compiled once."""
    definitions = [p.NAME]
    getters: list[tuple[Callable[[Any], list[Any]], _Cell]] = []
    for col in columns:
        description = (
            col.description or f"Custom resource definition column (in JSONPath format): {col.json_path}"
        )
        definitions.append(
            p.column(col.name, col.type, description, priority=col.priority, format=col.format)
        )
        try:
            finder = jsonpath.compile_path(col.json_path).find
        except jsonpath.JSONPathError:
            finder = _missing  # CRD validation rejects such paths; print empty cells if one slips by
        getters.append((finder, _cell_converter(col.type)))

    def cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
        row: list[Any] = [_format.as_dict(obj.get("metadata")).get("name", "")]
        for finder, convert in getters:
            found = finder(obj)
            value = found[0] if found else None
            row.append(None if value is None else convert(value, ctx))
        return row

    return p.Printer(tuple(definitions), cells)
