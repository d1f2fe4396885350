"""Object history: ``history.kplane.dev/v1alpha1`` ``revisions``, a read-only virtual resource.

kube-apiserver offers no way to read an object's past (etcd compacts it within minutes and no API
reads a key's revisions); kplane keeps a retained log (``--history-retention``), so it serves it:

    GET /apis/history.kplane.dev/v1alpha1/namespaces/<ns>/revisions
        ?fieldSelector=target.resource=deployments.apps,target.name=web[,operation=DELETE][&limit=N]

lists the retained writes of that object (``target.name`` omitted: of every object of the resource
in the namespace, or in all namespaces without one; ``operation=DELETE`` keeps the deletions, which
is how deleted objects are found), oldest first, the newest ``limit`` (default 500, at most
10,000). Cluster-scoped targets are read without a namespace. Each item is a ``Revision``: the
revision, its time, the operation (CREATE, UPDATE, DELETE), the user who wrote it, the field
managers whose ``managedFields`` entries it changed, and the object's state after it (for a
DELETE, the last state). Reading the history of an object is authorized as reading the object
(``get`` on it with a name, ``list`` on its resource without one): ``authorization_target`` gives
the authorization filter those attributes, so the answer to anyone else is upstream's 403 for that
verb on that resource.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kplane.api import errors
from kplane.api.catalog import Catalog, PrinterColumn, ResourceRecord
from kplane.server import storage
from kplane.server.endpoints import negotiation, params
from kplane.server.endpoints.scope import Scope
from kplane.server.registry.objects import storage_error, to_version

Object = dict[str, Any]

GROUP = "history.kplane.dev"
VERSION = "v1alpha1"
DEFAULT_LIMIT = 500
MAX_LIMIT = 10_000
OPERATIONS = {storage.ADDED: "CREATE", storage.MODIFIED: "UPDATE", storage.DELETED: "DELETE"}
_FIELDS = ("target.resource", "target.version", "target.name", "operation")

RECORD = ResourceRecord(
    group=GROUP,
    version=VERSION,
    plural="revisions",
    singular="revision",
    kind="Revision",
    list_kind="RevisionList",
    scope="Namespaced",
    verbs=("list",),
    printer_columns=(
        PrinterColumn("Revision", "integer", ".revision"),
        PrinterColumn("Operation", "string", ".operation"),
        PrinterColumn("Time", "string", ".timestamp"),
        PrinterColumn("User", "string", ".user"),
        PrinterColumn("Managers", "string", ".fieldManagers"),
    ),
    field_selectors=_FIELDS,
)


@dataclass(frozen=True, slots=True)
class Target:
    """What a revisions request asks about (from its field selector)."""

    group: str
    resource: str
    version: str
    name: str
    operation: str


def parse_target(query: Mapping[str, str]) -> Target:
    """The target of ``fieldSelector``; 400 when it names no resource or an unknown field."""
    fields: dict[str, str] = {}
    for term in (query.get("fieldSelector") or "").split(","):
        if not term.strip():
            continue
        field, op, value = term.partition("=")
        field = field.strip()
        if not op or field.endswith("!"):
            raise errors.BadRequest(
                f"invalid field selector term {term.strip()!r}: only = and == are supported"
            )
        if field not in _FIELDS:
            raise errors.BadRequest(f'"{field}" is not a known field selector: only "{", ".join(_FIELDS)}"')
        fields[field] = value.removeprefix("=").strip()
    resource, _, group = fields.get("target.resource", "").partition(".")
    if not resource:
        raise errors.BadRequest("fieldSelector must name target.resource (<plural>[.<group>])")
    operation = fields.get("operation", "")
    if operation and operation not in OPERATIONS.values():
        raise errors.BadRequest(f'operation must be one of CREATE, UPDATE, DELETE, not "{operation}"')
    return Target(group, resource, fields.get("target.version", ""), fields.get("target.name", ""), operation)


def authorization_target(query: Mapping[str, str]) -> tuple[str, str, str, str] | None:
    """``(verb, group, resource, name)`` a revisions request is authorized as (reading the target:
    ``get`` with a name, ``list`` without), or None when it names no target (refused later, 400)."""
    try:
        target = parse_target(query)
    except errors.APIError:
        return None
    return ("get" if target.name else "list"), target.group, target.resource, target.name


def resolve(catalog: Catalog, target: Target) -> ResourceRecord:
    """The record of the target resource at the asked version, else the group's preferred one."""
    versions = catalog.groups().get(target.group, [])
    for version in [target.version] if target.version else versions:
        record = catalog.lookup(target.group, version, target.resource)
        if record is not None:
            return record
    gr = f"{target.resource}.{target.group}" if target.group else target.resource
    raise errors.NotFound(f'the server could not find the requested resource "{gr}"')


async def list_(scope: Scope, *, catalog: Catalog) -> web.StreamResponse:
    """The ``RevisionList`` of the request's target (see the module docstring)."""
    target = parse_target(scope.query)
    record = resolve(catalog, target)
    namespace = scope.info.namespace if record.namespaced else ""
    if target.name and record.namespaced and not namespace:
        raise errors.BadRequest(
            f"{record.plural} are namespaced: the history of one is read in its namespace"
        )
    limit = params.query_int64(scope.query, "limit") or DEFAULT_LIMIT
    if limit < 0 or limit > MAX_LIMIT:
        raise errors.BadRequest(f"limit must be between 1 and {MAX_LIMIT}")
    where = record.key(namespace, target.name) if target.name else record.namespace_prefix(namespace)
    store = scope.registry.storage
    try:
        found = await storage.history_of(store).revisions(
            where, deletions_only=target.operation == "DELETE", limit=limit
        )
    except storage.HistoryNotKept as err:
        raise errors.MethodNotAllowed(str(err)) from None
    except storage.StorageError as err:
        raise storage_error(record, target.name, err) from None
    items = revision_items(record, found)
    if target.operation:
        items = [i for i in items if i["operation"] == target.operation]
    body: Object = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RevisionList",
        "metadata": {"resourceVersion": str(store.current_revision())},
        "items": items,
    }
    form = scope.form
    if form.table:
        from kplane.server.endpoints import table

        tbl = table.table(
            scope.record,
            items,
            include_object=form.include_object,
            resource_version=body["metadata"]["resourceVersion"],
            continue_token="",
            remaining=None,
            now=scope.clock.now(),
        )
        return web.Response(
            body=negotiation.encode(tbl, form.media, pretty=scope.pretty),
            headers={"Content-Type": form.media},
        )
    media = negotiation.JSON if form.media == negotiation.PROTOBUF else form.media
    return web.Response(
        body=negotiation.encode(body, media, pretty=scope.pretty), headers={"Content-Type": media}
    )


def revision_items(record: ResourceRecord, found: list[storage.Revision]) -> list[Object]:
    """One ``Revision`` per retained write, each with the managers its write changed (compared
    with the key's previous retained state)."""
    previous: dict[str, Object] = {}
    items = []
    for rev in found:
        obj = to_version(record, rev.object)
        before = previous.get(rev.key)
        previous[rev.key] = obj
        items.append(_item(record, rev, obj, before))
    return items


def _item(record: ResourceRecord, rev: storage.Revision, obj: Object, before: Object | None) -> Object:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    when = datetime.datetime.fromtimestamp(rev.timestamp, datetime.UTC) if rev.timestamp else None
    operation = OPERATIONS[rev.type]
    item_meta: Object = {"name": f"{name}.{rev.revision}", "resourceVersion": str(rev.revision)}
    if record.namespaced:
        item_meta["namespace"] = meta.get("namespace", "")
    if when is not None:
        item_meta["creationTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Revision",
        "metadata": item_meta,
        "target": {
            "apiVersion": record.api_version,
            "kind": record.kind,
            "resource": record.plural,
            "namespace": meta.get("namespace", ""),
            "name": name,
            "uid": meta.get("uid", ""),
        },
        "revision": rev.revision,
        "operation": operation,
        "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if when is not None else None,
        "user": rev.writer,
        "fieldManagers": [] if operation == "DELETE" else changed_managers(before, obj),
        "object": obj,
    }


def changed_managers(before: Object | None, after: Object) -> list[str]:
    """The managers this write stamped: entries of ``after``'s ``managedFields`` new or with a new
    ``time`` since ``before``; within one second (times are whole seconds), entries whose field
    set grew, else any that changed. A manager that only lost fields to the writer is named only
    when no entry says more. Without ``before`` (the first retained state), the managers of the
    most recent entries."""
    entries = _managed(after)
    if before is None:
        newest = max((str(e.get("time", "")) for e in entries), default="")
        return sorted({str(e.get("manager", "")) for e in entries if str(e.get("time", "")) == newest})
    old = {_identity(e): e for e in _managed(before)}
    stamped, grew, changed = set(), set(), set()
    for e in entries:
        prior = old.get(_identity(e))
        manager = str(e.get("manager", ""))
        if prior is None or prior.get("time") != e.get("time"):
            stamped.add(manager)
        elif len(orjson.dumps(e.get("fieldsV1"))) > len(orjson.dumps(prior.get("fieldsV1"))):
            grew.add(manager)
        elif prior != e:
            changed.add(manager)
    return sorted(stamped or grew or changed)


def _identity(entry: Object) -> tuple[str, str, str]:
    """What keeps a managedFields entry apart: manager, operation and subresource (upstream merges
    an Update entry and an Apply entry of one manager separately)."""
    return str(entry.get("manager", "")), str(entry.get("operation", "")), str(entry.get("subresource", ""))


def _managed(obj: Object) -> list[Object]:
    entries = (obj.get("metadata") or {}).get("managedFields")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
