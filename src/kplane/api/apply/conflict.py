"""Apply conflicts and their 409 ``Status``, worded exactly as upstream (managedfields/conflict.go).

One conflict::

    Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas

Several, grouped by manager (managers sorted by identifier, paths in field order)::

    Apply failed with 2 conflicts: conflicts with "a" using apps/v1:
    - .spec.replicas
    conflicts with "b":
    - .metadata.labels.app

A manager prints as its quoted name, then ``with subresource "status"`` when it has one, then
``using <apiVersion>`` for Update managers (appliers have no apiVersion in their identity).
"""

from __future__ import annotations

import dataclasses

import orjson

from kplane.api import errors
from kplane.api.apply import managed, pathelement


@dataclasses.dataclass(frozen=True, slots=True)
class Conflict:
    """One field the applier would take from another manager."""

    manager: str
    operation: str
    api_version: str
    path: pathelement.Path
    subresource: str = ""

    @property
    def identity(self) -> str:
        return managed.identity(self.manager, self.operation, self.api_version, self.subresource)

    @property
    def field(self) -> str:
        return pathelement.path_string(self.path)

    def manager_text(self) -> str:
        text = _go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {_go_quote(self.subresource)}"
        if self.operation == managed.UPDATE:
            text += f" using {self.api_version}"
        return text


def _go_quote(s: str) -> str:
    return orjson.dumps(s).decode()


def format_conflicts(conflicts: list[Conflict]) -> tuple[str, list[dict[str, str]]]:
    """The message and ``details.causes`` of the 409 ``Status`` for these conflicts."""
    causes = [
        {"reason": "FieldManagerConflict", "message": "conflict with " + c.manager_text(), "field": c.field}
        for c in conflicts
    ]
    if len(conflicts) == 1:
        c = conflicts[0]
        return f"Apply failed with 1 conflict: conflict with {c.manager_text()}: {c.field}", causes
    by_manager: dict[str, list[Conflict]] = {}
    for c in conflicts:
        by_manager.setdefault(c.identity, []).append(c)
    lines: list[str] = []
    for ident in sorted(by_manager):
        group = by_manager[ident]
        lines.append(f"conflicts with {group[0].manager_text()}:")
        lines.extend(f"- {c.field}" for c in group)
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines), causes


class ApplyConflict(errors.Conflict):
    """A server-side apply that would take fields from other managers without ``force``.

    ``conflicts`` lists them; the message and ``details.causes`` are upstream's (reason
    ``Conflict``, code 409, one ``FieldManagerConflict`` cause per field).
    """

    conflicts: list[Conflict]

    def __init__(self, conflicts: list[Conflict]) -> None:
        message, causes = format_conflicts(conflicts)
        super().__init__(message, details={"causes": causes})
        self.conflicts = conflicts
