"""Server-side printing: ``meta.k8s.io/v1`` Tables for list, get and watch responses.

kubectl ``get`` asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the
columns it receives; without them users see only NAME and AGE. This package computes the
columns and cells exactly as kube-apiserver 1.32's printers do, as pure functions over JSON
dicts: no HTTP here. The verb handlers choose Table from the ``Accept`` header and call
``table`` (list/get) or ``watch_table_event`` (watch).

Modules: ``building`` assembles Tables and picks a printer per resource record; ``pods``,
``core``, ``workloads`` and ``cluster`` hold the built-in printers; ``generic`` serves CRD
printer columns and the fallbacks; ``_format`` holds the shared cell formatting.
"""

from kplane.server.endpoints.table.building import (
    IncludeObject,
    column_definitions,
    printer_for,
    table,
    watch_table_event,
)

__all__ = ["IncludeObject", "column_definitions", "printer_for", "table", "watch_table_event"]
