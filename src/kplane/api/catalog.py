"""The resource catalog: one record per served resource, built-in or custom.

Discovery, OpenAPI, Table output, routing and the registry all read these records; nothing else
describes a resource. A record is immutable; the catalog swaps records atomically when CRDs come and
go, and bumps ``generation`` so that derived documents (discovery, OpenAPI) can be cached by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from kplane.api.gvk import GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource

Scope = Literal["Namespaced", "Cluster"]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """A Table column taken from a JSONPath (CRD ``additionalPrinterColumns``)."""

    name: str
    type: str
    json_path: str
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass(frozen=True, slots=True)
class ScaleSpec:
    """Where a resource keeps the fields of its ``scale`` subresource (dotted JSON paths)."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = ".status.selector"


@dataclass(frozen=True, slots=True)
class ResourceRecord:
    """Everything the server needs to serve one resource at one group-version.

    ``schema`` is the structural OpenAPI v3 schema of the kind (None: not known, nothing checked).
    ``storage_version`` is the version objects are persisted in (for built-ins, ``version``);
    ``storage_group``, when set, the group whose form and key space they are persisted in
    (``events.k8s.io`` Events are core ``v1`` Events: one object, two views).
    ``field_selectors`` lists the fields (besides ``metadata.name`` / ``metadata.namespace``) a
    list or watch may select on. ``tracks_generation``: ``metadata.generation`` starts at 1 and is
    bumped by writes that change anything but metadata and status.
    ``conversion_webhook``: a CRD's ``spec.conversion.webhook`` when its strategy is ``Webhook``
    (objects stored at another version are converted by calling it), else None.
    ``terminating``: the resource's CRD is being deleted (its instances go; no new one may be created).
    """

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    list_kind: str
    scope: Scope
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    has_status: bool = False
    scale: ScaleSpec | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    field_selectors: tuple[str, ...] = ()
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    storage_version: str = ""
    custom: bool = False
    return_deleted_object: bool = False
    preferred: bool = True
    extra_subresources: tuple[str, ...] = ()
    tracks_generation: bool = False
    storage_group: str | None = None
    conversion_webhook: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    terminating: bool = False
    # Derived once (every request reads them): whether namespaced, the storage prefix, apiVersion.
    namespaced: bool = field(init=False, compare=False, repr=False)
    key_prefix: str = field(init=False, compare=False, repr=False)
    """Storage prefix of every object of this resource (all versions share it)."""
    api_version: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        group = self.group if self.storage_group is None else self.storage_group
        object.__setattr__(self, "namespaced", self.scope == "Namespaced")
        object.__setattr__(self, "key_prefix", f"/registry/{group or 'core'}/{self.plural}/")
        object.__setattr__(self, "api_version", GroupVersion(self.group, self.version).api_version)

    @property
    def gvk(self) -> GroupVersionKind:
        return GroupVersionKind(self.group, self.version, self.kind)

    @property
    def gvr(self) -> GroupVersionResource:
        return GroupVersionResource(self.group, self.version, self.plural)

    @property
    def group_resource(self) -> GroupResource:
        return GroupResource(self.group, self.plural)

    @property
    def group_version(self) -> GroupVersion:
        return GroupVersion(self.group, self.version)

    def key(self, namespace: str, name: str) -> str:
        """Storage key of one object."""
        if self.namespaced:
            return f"{self.key_prefix}{namespace}/{name}"
        return f"{self.key_prefix}{name}"

    def namespace_prefix(self, namespace: str) -> str:
        """Storage prefix of the objects in one namespace (or all, when ``namespace`` is empty)."""
        if self.namespaced and namespace:
            return f"{self.key_prefix}{namespace}/"
        return self.key_prefix


class Catalog:
    """The set of served resources, indexed for routing.

    Reads are lock-free: every mutation builds new index dicts and swaps them in, so a request
    sees either the old or the new catalog, never a mix.
    """

    def __init__(self, records: Iterable[ResourceRecord] = ()) -> None:
        self._records: tuple[ResourceRecord, ...] = ()
        self._by_gvr: dict[tuple[str, str, str], ResourceRecord] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceRecord] = {}
        self.generation = 0
        self.replace_group_resource(None, list(records))

    def __iter__(self) -> Iterator[ResourceRecord]:
        return iter(self._records)

    def lookup(self, group: str, version: str, plural: str) -> ResourceRecord | None:
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceRecord | None:
        return self._by_gvk.get((group, version, kind))

    def group_versions(self) -> list[GroupVersion]:
        """Served group-versions in catalog order (core first, then groups as added)."""
        seen: dict[GroupVersion, None] = {}
        for r in self._records:
            seen.setdefault(r.group_version, None)
        return list(seen)

    def groups(self) -> dict[str, list[str]]:
        """Group name -> versions in preference order (the first is preferred)."""
        out: dict[str, list[str]] = {}
        for r in self._records:
            versions = out.setdefault(r.group, [])
            if r.version not in versions:
                if r.preferred:
                    versions.insert(0, r.version)
                else:
                    versions.append(r.version)
        return out

    def resources(self, gv: GroupVersion) -> list[ResourceRecord]:
        return [r for r in self._records if r.group == gv.group and r.version == gv.version]

    def replace_group_resource(self, gr: GroupResource | None, records: list[ResourceRecord]) -> None:
        """Remove every record of ``gr`` (all versions) and add ``records``; atomic for readers."""
        kept = [r for r in self._records if gr is None or r.group_resource != gr]
        new = tuple(kept + records)
        self._by_gvr = {(r.group, r.version, r.plural): r for r in new}
        self._by_gvk = {(r.group, r.version, r.kind): r for r in new}
        self._records = new
        self.generation += 1
