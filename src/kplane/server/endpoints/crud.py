"""Handlers for single-object verbs: get, create, update (PUT), patch, delete, and the ``status``
subresource (same verbs, writing only ``.status``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server.endpoints import negotiation, options, params, patching
from kplane.server.endpoints.scope import Scope, audit_annotations
from kplane.server.registry import metatypes
from kplane.server.registry.deletion import DeleteOptions
from kplane.server.registry.objects import check_type, rfc3339

if TYPE_CHECKING:
    from kplane.api import apply as ssa
else:
    ssa = lazy_module("kplane.api.apply")  # loaded with the first write, not at start-up

Object = dict[str, Any]


async def get(scope: Scope) -> web.StreamResponse:
    """GET; with ``resourceVersion=N&resourceVersionMatch=Exact`` (a kplane extension: upstream's
    GetOptions has no match, so a GET reads the latest state), the object as of revision N."""
    info = scope.info
    revision = exact_revision(scope.query)
    if revision:
        obj = await scope.registry.get_at(scope.record, info.namespace, info.name, revision)
        return scope.respond(obj)
    obj = await scope.registry.get(scope.record, info.namespace, info.name)
    return scope.respond(obj, stored=True)


def exact_revision(query: Any) -> int:
    """N of ``resourceVersion=N&resourceVersionMatch=Exact`` (0 when not asked for, or N is 0)."""
    if query.get("resourceVersionMatch") != "Exact":
        return 0
    rv = query.get("resourceVersion") or "0"
    if not rv.isdigit() or len(rv) > 19:
        raise errors.BadRequest(f'invalid resourceVersion "{rv}": must be a non-negative integer')
    return int(rv)


async def create(scope: Scope) -> web.StreamResponse:
    record = scope.record
    if record.terminating:
        # upstream's crdHandler.serveResource refuses a create (only a create) this way
        raise errors.MethodNotAllowed(
            "create not allowed while custom resource definition is terminating",
            details={"group": record.group, "kind": record.plural},
        )
    body = await scope.body()
    content_type = scope.request.headers.get("Content-Type")
    obj = negotiation.decode_object(body, content_type, kind=scope.record.kind)
    dups = negotiation.duplicate_fields(body, content_type, obj)
    check_type(scope.record, obj)
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise errors.BadRequest("metadata must be an object")
    ns = scope.info.namespace
    if scope.record.namespaced and meta.get("namespace") not in (None, "", ns):
        raise errors.BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if scope.info.name and meta.get("name") not in (None, "", scope.info.name):
        raise errors.BadRequest(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({scope.info.name})"
        )
    opts = scope.write_options()
    opts.typed_body = True
    scope.check_duplicates(dups, opts)
    created = await scope.registry.create(scope.record, ns, obj, opts)
    return scope.respond(created, 201)


async def update(scope: Scope) -> web.StreamResponse:
    body = await scope.body()
    content_type = scope.request.headers.get("Content-Type")
    obj = negotiation.decode_object(body, content_type, kind=scope.record.kind)
    dups = negotiation.duplicate_fields(body, content_type, obj)
    opts = scope.write_options()
    opts.typed_body = True
    scope.check_duplicates(dups, opts)
    check_type(scope.record, obj)
    _check_name(scope, obj)
    uid = obj["metadata"].get("uid")
    updated = await scope.registry.update(
        scope.record,
        scope.info.namespace,
        scope.info.name,
        lambda current: obj,
        subresource=scope.info.subresource,
        opts=opts,
        uid=uid if isinstance(uid, str) and uid else None,
    )
    return scope.respond(updated)


def _check_name(scope: Scope, obj: Object) -> None:
    """A PUT body names the object of its URL, before anything is read (handlers/update.go:
    ``EnsureObjectNamespaceMatchesRequestNamespace``, then ``checkName`` in handlers/rest.go)."""
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise errors.BadRequest("metadata must be an object")
    namespace = scope.info.namespace if scope.record.namespaced else ""
    if meta.get("namespace") not in (None, "", namespace):
        if namespace:
            raise errors.BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta.pop("namespace")  # cluster-scoped: the namespace is cleared, as upstream
    name = meta.get("name")
    if name != scope.info.name:
        shown = name if isinstance(name, str) else ""
        raise errors.BadRequest(
            f"the name of the object ({shown}) does not match the name on the URL ({scope.info.name})"
        )


async def patch(scope: Scope) -> web.StreamResponse:
    mt = negotiation.media_type(scope.request.headers.get("Content-Type"))
    if mt not in negotiation.PATCH_TYPES:
        raise patching.unsupported(scope.record)
    body = await scope.body()
    value = negotiation.decode_patch(body, mt)
    if mt == negotiation.APPLY_PATCH:
        return await _apply(scope, value)
    dups = negotiation.duplicate_fields(body, mt, value)
    transform = patching.transform_for(scope.record, mt, value)
    opts = scope.write_options(patch_type=mt)
    scope.check_duplicates(dups, opts)
    updated = await scope.registry.update(
        scope.record,
        scope.info.namespace,
        scope.info.name,
        transform,
        subresource=scope.info.subresource,
        opts=opts,
    )
    return scope.respond(updated)


async def _apply(scope: Scope, applied: Object) -> web.StreamResponse:
    """Server-side apply: merge the applier's configuration with field ownership; create if absent."""
    opts = scope.write_options(patch_type=negotiation.APPLY_PATCH)
    opts.manage_fields = False
    force = scope.query.get("force") in ("true", "True", "1")
    record = scope.record
    node = scope.registry.schema.node(record)
    _check_apply_type(record, applied)
    meta = applied.get("metadata")
    if not isinstance(meta, dict):
        raise errors.BadRequest("metadata must be an object in an apply configuration")
    if meta.get("name") not in (None, scope.info.name):
        raise errors.BadRequest(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({scope.info.name})"
        )

    def merge(current: Object) -> Object:
        return ssa.apply(
            current,
            applied,
            manager=opts.field_manager,
            api_version=record.api_version,
            schema=node,
            force=force,
            now=rfc3339(scope.clock),
            subresource=scope.info.subresource,
        )

    try:
        updated = await scope.registry.update(
            record,
            scope.info.namespace,
            scope.info.name,
            merge,
            subresource=scope.info.subresource,
            opts=opts,
        )
    except errors.NotFound:
        if scope.info.subresource:
            raise
        obj = ssa.apply(
            None,
            {**applied, "metadata": {**meta, "name": scope.info.name}},
            manager=opts.field_manager,
            api_version=record.api_version,
            schema=node,
            force=force,
            now=rfc3339(scope.clock),
        )
        created = await scope.registry.create(record, scope.info.namespace, obj, opts)
        return scope.respond(created, 201)
    return scope.respond(updated)


def _check_apply_type(record: ResourceRecord, applied: Object) -> None:
    """An apply configuration names exactly the URL's group, version and kind; nothing is filled in
    (managedfields/internal/versioncheck.go; the kind is read as ``unstructured`` does: a
    non-string field counts as empty, an unparsable apiVersion empties the whole kind)."""
    api_version = applied.get("apiVersion")
    kind = applied.get("kind")
    av = api_version if isinstance(api_version, str) else ""
    kd = kind if isinstance(kind, str) else ""
    if av in ("", "/"):
        group, version = "", ""
    elif "/" not in av:
        group, version = "", av
    elif av.count("/") == 1:
        group, version = av.split("/")
    else:
        group, version, kd = "", "", ""
    if (group, version, kd) != (record.group, record.version, record.kind):
        raise errors.BadRequest(f"invalid object type: {group}/{version}, Kind={kd}")


async def delete_options(scope: Scope) -> DeleteOptions:
    """DeleteOptions from the body (if any) and the query, as upstream accepts both."""
    raw: Object = {}
    body = await scope.body()
    if body.strip():
        raw = negotiation.decode_object(
            body, scope.request.headers.get("Content-Type") or negotiation.JSON, kind="DeleteOptions"
        )
    q = scope.query
    grace = raw.get("gracePeriodSeconds")
    if grace is None:
        grace_int = params.query_int64(q, "gracePeriodSeconds")
    elif type(grace) is int and params.INT64_MIN <= grace <= params.INT64_MAX:
        grace_int = grace
    else:
        # upstream: the JSON decoder's error for DeleteOptions.gracePeriodSeconds (an int64)
        raise errors.BadRequest(
            f"json: cannot unmarshal {metatypes.json_kind(grace, with_number=True)} into Go struct field "
            "DeleteOptions.gracePeriodSeconds of type int64"
        )
    policy = raw.get("propagationPolicy", q.get("propagationPolicy"))
    orphan = raw.get("orphanDependents")
    if orphan is None and q.get("orphanDependents") is not None:
        orphan = str(q.get("orphanDependents")).lower() == "true"
    if orphan is not None and not isinstance(orphan, bool):
        raise errors.BadRequest(
            f"json: cannot unmarshal {metatypes.json_kind(orphan, with_number=True)} into Go struct field "
            "DeleteOptions.orphanDependents of type bool"
        )
    pre = raw.get("preconditions") or {}
    if not isinstance(pre, dict):
        raise errors.BadRequest("preconditions must be an object")
    dry = raw.get("dryRun") or []
    if not isinstance(dry, list) or not all(isinstance(d, str) for d in dry):
        raise errors.BadRequest("dryRun must be a list of strings")
    # registry/rest/delete.go BeforeDelete: ValidateDeleteOptions, one 422 for every problem
    options.check(
        "DeleteOptions",
        options.propagation_errors(policy)
        + options.orphan_errors(orphan, policy)
        + options.dry_run_errors(dry),
    )
    return DeleteOptions(
        grace_period_seconds=grace_int,
        propagation_policy=policy,
        orphan_dependents=orphan,
        uid=_str_or_none(pre.get("uid")),
        resource_version=_str_or_none(pre.get("resourceVersion")),
        dry_run=bool(dry) or scope.dry_run(),
        requester=scope.requester(),
        warnings=scope.warnings,
        audit_annotations=audit_annotations(scope.request),
    )


def _str_or_none(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        kind = metatypes.json_kind(value)
        raise errors.BadRequest(f"json: cannot unmarshal {kind} into Go value of type string")
    return value


async def delete(scope: Scope) -> web.StreamResponse:
    opts = await delete_options(scope)
    obj, deleted_now = await scope.registry.delete(scope.record, scope.info.namespace, scope.info.name, opts)
    if not deleted_now or scope.record.return_deleted_object:
        return scope.respond_plain(obj)
    meta = obj.get("metadata") or {}
    details = errors.ordered_details(
        {
            "name": meta.get("name", scope.info.name),
            "group": scope.record.group,
            "kind": scope.record.plural,
            "uid": meta.get("uid", ""),
        }
    )
    return scope.respond_plain(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
    )
