"""What the registry tells admission about a write, and the callbacks it calls (STYLE 5).

Upstream's handlers run mutating admission and hand validating admission to the store as a
function (apiserver ``endpoints/handlers/create.go``, ``registry/generic/registry/store.go``). Here
both are functions of one ``Attributes`` value given to the ``Registry`` at construction, so the
registry never imports the admission plugins (an import-linter contract holds it):

- CREATE: decode and default, then ``mutate``, then the strategy (prepare, validate), then
  ``validate``, then storage.
- UPDATE (PUT and every PATCH): inside the guaranteed-update loop, on the patched object:
  ``mutate``, the strategy, ``validate``; re-run when another write races in.
- DELETE: ``mutate`` then ``validate`` with the object being deleted as ``old`` (upstream's
  ``AdmissionToValidateObjectDeleteFunc``).

A callback refuses by raising an ``errors.APIError``; ``mutate`` may change ``attrs.obj`` in place
(the registry owns it: on update it is a deep copy, never the stored object). ``validate`` must not
change it. Warnings go to ``attrs.warnings`` (they reach the client's ``Warning`` header), audit
annotations (``<webhook>/<key>``, ``<policy>/<key>``) to ``attrs.audit_annotations`` (they reach the
request's audit event).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from kplane.api.catalog import ResourceRecord
from kplane.server.registry.fieldschema import Requester

Object = dict[str, Any]
Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


@dataclass(slots=True)
class Reinvocation:
    """The state of the mutating pass's second round: ``round`` is 1 while it runs; ``state`` holds
    what each plugin keeps between rounds, by plugin name."""

    requested: bool = False
    round: int = 0
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Attributes:
    """One write as admission sees it (upstream's ``admission.Attributes``)."""

    operation: Operation
    record: ResourceRecord
    namespace: str
    name: str
    obj: Object | None
    old: Object | None = None
    subresource: str = ""
    user: Requester | None = None
    dry_run: bool = False
    options: Object | None = None
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)
    reinvocation: Reinvocation | None = None
    """Set by a mutating plugin that asks for the mutating pass to run once more (upstream's
    reinvocation context; only mutating webhooks with ``reinvocationPolicy: IfNeeded`` ask)."""

    @property
    def resource(self) -> tuple[str, str]:
        """(group, plural) of the addressed resource."""
        return self.record.group, self.record.plural

    @property
    def kind(self) -> tuple[str, str]:
        """(group, kind) of the addressed resource."""
        return self.record.group, self.record.kind


class WriteRequest(Protocol):
    """What admission reads of a write's options (``WriteOptions``, ``DeleteOptions``)."""

    @property
    def requester(self) -> Requester | None: ...
    @property
    def dry_run(self) -> bool: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def audit_annotations(self) -> dict[str, str]: ...


def of_write(
    operation: Operation,
    record: ResourceRecord,
    namespace: str,
    name: str,
    obj: Object | None,
    old: Object | None,
    opts: WriteRequest,
    subresource: str = "",
) -> Attributes:
    """The attributes of a write made with ``opts``: its requester and dry run, and the lists
    admission reports into (warnings, audit annotations) shared with the request."""
    return Attributes(
        operation,
        record,
        namespace,
        name,
        obj,
        old,
        subresource,
        user=opts.requester,
        dry_run=opts.dry_run,
        warnings=opts.warnings,
        audit_annotations=opts.audit_annotations,
    )


AdmitFunc = Callable[[Attributes], Awaitable[None] | None]
"""One admission pass: raises an ``APIError`` to refuse; returns None when it decided without
waiting, else an awaitable the caller awaits (which may raise)."""


def _admit_all(attrs: Attributes) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Admission:
    """The two admission passes. ``mutating`` answers whether ``mutate`` may change objects of
    a (group, plural), so the registry copies an update's object only when it must."""

    mutate: AdmitFunc = _admit_all
    validate: AdmitFunc = _admit_all
    mutating: Callable[[str, str], bool] = lambda group, plural: False


NONE = Admission()
"""No admission at all (unit tests of the registry, and ``--disable-admission-plugins`` of all)."""
