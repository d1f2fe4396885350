"""What a printer is: the column definitions of one kind and the function computing a row.

Printers always produce every column, ``-o wide`` ones included: kube-apiserver generates
tables with ``Wide: true`` and kubectl hides ``priority > 0`` columns itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kplane.server.endpoints.table import _format

Column = dict[str, Any]
"""A ``meta.k8s.io/v1`` ``TableColumnDefinition``: name, type, format, description, priority."""

CellsFn = Callable[[_format.Obj, _format.Context], list[Any]]
"""Computes one row's cells from an object; must not mutate the object."""

ConditionsFn = Callable[[_format.Obj], list[dict[str, Any]] | None]
"""Computes a row's ``conditions`` (only Pods have them upstream)."""


@dataclass(frozen=True, slots=True)
class Printer:
    """The Table shape of one kind. ``cells`` returns one value per column, in column order."""

    columns: tuple[Column, ...]
    cells: CellsFn
    conditions: ConditionsFn | None = None


def column(
    name: str, type: str = "string", description: str = "", *, priority: int = 0, format: str = ""
) -> Column:
    """One column definition, with every field present as upstream serializes it."""
    return {"name": name, "type": type, "format": format, "description": description, "priority": priority}


NAME = column(
    "Name",
    format="name",
    description="Name is unique within a namespace (or the cluster, for cluster-scoped kinds); "
    "clients use it to refer to the object.",
)
AGE = column(
    "Age",
    description="How long ago the object was created (from metadata.creationTimestamp), "
    "in the server's clock.",
)
CONTAINERS = column("Containers", description="Names of each container in the template.", priority=1)
IMAGES = column("Images", description="Images referenced by each container in the template.", priority=1)


def selector_column(what: str) -> Column:
    """The wide ``Selector`` column of a workload."""
    return column("Selector", description=f"Label query over the {what} this object selects.", priority=1)
