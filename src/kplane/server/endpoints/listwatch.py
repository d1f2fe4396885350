"""Handlers for collection verbs: list, watch (newline-delimited JSON stream) and deletecollection."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server.endpoints import encoded, metrics, negotiation, params, partial
from kplane.server.endpoints.crud import delete_options
from kplane.server.endpoints.requestinfo import parse_bool
from kplane.server.endpoints.scope import Scope
from kplane.server.registry import listing, selection, watching
from kplane.server.registry.objects import converts, to_version

if TYPE_CHECKING:
    from kplane.api import protobuf
    from kplane.server.endpoints import table
else:
    protobuf = lazy_module("kplane.api.protobuf")  # loaded with the first protobuf request
    table = lazy_module("kplane.server.endpoints.table")  # loaded with the first Table request

Object = dict[str, Any]
MIN_REQUEST_TIMEOUT = 1800.0
_FLUSH_BYTES = 256 * 1024  # a batch larger than this goes out in several writes


def list_options(scope: Scope) -> listing.ListOptions:
    q = scope.query
    limit = params.query_int64(q, "limit") or 0
    params.query_int64(q, "timeoutSeconds")  # part of ListOptions: decoded (and refused) on lists too
    field_selector = q.get("fieldSelector", "")
    if scope.info.name:  # /watch/.../<name>: the name is a field selector
        pin = f"metadata.name={scope.info.name}"
        field_selector = f"{field_selector},{pin}" if field_selector else pin
    return listing.ListOptions(
        label_selector=q.get("labelSelector", ""),
        field_selector=field_selector,
        limit=limit,
        continue_token=q.get("continue", ""),
        resource_version=q.get("resourceVersion"),
        resource_version_match=q.get("resourceVersionMatch", ""),
        send_initial_events=scope.info.verb == "list" and "sendInitialEvents" in q,
    )


async def list_(scope: Scope) -> web.StreamResponse:
    opts = list_options(scope)
    page = await scope.registry.list_page(scope.record, scope.info.namespace, opts)
    items = page.items
    if converts(scope.record):
        items = await scope.registry.conversion.served_list(scope.record, items)
    form = scope.form
    if form.error is not None:
        raise form.error
    if form.table:
        tbl = table.table(
            scope.record,
            items,
            include_object=scope.form.include_object,
            resource_version=page.resource_version,
            continue_token=page.continue_token,
            remaining=page.remaining,
            now=scope.clock.now(),
        )
        body = negotiation.encode(tbl, form.media, pretty=scope.pretty)
        return web.Response(body=body, headers={"Content-Type": form.media})
    meta: Object = {"resourceVersion": page.resource_version}
    if page.continue_token:
        meta["continue"] = page.continue_token
        if page.remaining is not None:
            meta["remainingItemCount"] = page.remaining
    record = scope.record
    if form.partial == negotiation.PARTIAL:
        raise partial.single_expected(record)
    api_version, kind, list_kind = record.api_version, record.kind, record.list_kind
    if form.partial:
        api_version, kind, list_kind = (
            partial.api_version(form.partial_version),
            negotiation.PARTIAL,
            form.partial,
        )
    if form.media == negotiation.PROTOBUF:
        fields = scope.protobuf_memo.items(items, api_version, kind)  # messages read only what they hold
        body = protobuf.encode_list(api_version, list_kind, meta, fields)
        return web.Response(body=body, headers={"Content-Type": negotiation.PROTOBUF})
    if form.partial:
        listed = partial.of_list(items, meta, form.partial_version)
    elif form.media == negotiation.JSON and not record.custom and not scope.pretty:
        body = scope.json_lists.encode(api_version, list_kind, meta, items)
        return web.Response(body=body, headers={"Content-Type": "application/json"})
    else:
        if not record.custom:
            items = [encoded.untyped(o) for o in items]
        listed = {"kind": list_kind, "apiVersion": api_version, "metadata": meta, "items": items}
    if form.media == negotiation.YAML:
        return web.Response(body=negotiation.dumps_yaml(listed), headers={"Content-Type": negotiation.YAML})
    body = negotiation.encode_json(listed, pretty=scope.pretty)
    return web.Response(body=body, headers={"Content-Type": "application/json"})


async def watch(scope: Scope) -> web.StreamResponse:
    q = scope.query
    lo = list_options(scope)
    timeout_seconds = params.query_int64(q, "timeoutSeconds")
    # upstream: 0 or absent means a random timeout of MinRequestTimeout..2x; negative ends at once
    timeout = float(timeout_seconds) if timeout_seconds else MIN_REQUEST_TIMEOUT * (1 + random.random())
    timeout = min(timeout, params.INT64_MAX / 1e9)  # a Go time.Duration holds no more
    send_initial = q.get("sendInitialEvents")
    opts = watching.WatchOptions(
        resource_version=lo.resource_version,
        resource_version_match=lo.resource_version_match,
        label_selector=lo.label_selector,
        field_selector=lo.field_selector,
        allow_bookmarks=parse_bool(q.get("allowWatchBookmarks")),
        send_initial_events=None if send_initial is None else parse_bool(send_initial),
        deadline=scope.clock.monotonic() + max(0.0, timeout),
        bookmark_interval=scope.watch_bookmark_interval,
    )
    # Refuse bad options and selectors with a Status before committing to a 200 stream.
    watching.validate_watch(opts)
    selection.Selection.parse(scope.record, opts.label_selector, opts.field_selector)
    if scope.form.error is not None:
        raise scope.form.error
    writing = False

    def give_up() -> None:
        # The watch fell behind while a write to this client was blocked (its socket buffer full):
        # the client is not reading, so drop the connection now rather than wait for it. A watcher
        # that is merely slow gets the end of the stream instead.
        transport = scope.request.transport
        if writing and transport is not None:
            transport.abort()

    events = scope.registry.watch(scope.record, scope.info.namespace, opts, on_terminated=give_up)
    as_table = scope.form.table
    as_protobuf = scope.form.media == negotiation.PROTOBUF
    metadata_only = scope.form.partial_version if scope.form.partial else ""
    # upstream names the bare media type, Tables included (handlers/watch.go)
    content_type = negotiation.PROTOBUF_WATCH if as_protobuf else negotiation.JSON
    record = scope.record
    webhook_converted = record.conversion_webhook is not None
    resp = web.StreamResponse(headers={"Content-Type": content_type})
    resp.enable_chunked_encoding()
    await resp.prepare(scope.request)

    async def send(lines: list[bytes]) -> None:
        # One write per batch (a burst of events, the initial list): one chunk, one TLS record and
        # one send instead of one per event. aiohttp waits here for the transport's buffer to drain
        # past its high-water mark, so what is buffered per watcher is bounded: the storage
        # watch's queue, one batch (``_FLUSH_BYTES`` at most past its last line), then this.
        nonlocal writing
        writing = True
        await resp.write(lines[0] if len(lines) == 1 else b"".join(lines))
        writing = False
        for _ in lines:
            metrics.DEFAULT.watch_event(record.group, record.version, record.plural)

    try:
        first_row = True
        failed = False
        async for batch in events:
            lines: list[bytes] = []
            size = 0
            for item in batch:
                converted = None
                if (
                    webhook_converted
                    and item.type != "ERROR"
                    and (as_table or not _encoded_already(item, record, as_protobuf, metadata_only))
                ):
                    try:
                        converted = await scope.registry.conversion.served(record, item.object)
                    except errors.APIError as err:  # the stream ends with the failure, as an ERROR event
                        if lines:
                            await send(lines)
                        await resp.write(_line("ERROR", dict(err.to_status())))
                        failed = True
                        break
                if as_table and item.type in ("ADDED", "MODIFIED", "DELETED"):
                    obj = converted or to_version(scope.record, item.object)
                    payload = table.watch_table_event(scope.record, item.type, obj, first=first_row)
                    first_row = False
                    line = negotiation.encode_json(payload)
                else:
                    line = _encode(
                        item,
                        scope.record,
                        protobuf_frames=as_protobuf,
                        metadata_only=metadata_only,
                        converted=converted,
                    )
                lines.append(line)
                size += len(line)
                if size >= _FLUSH_BYTES:
                    await send(lines)
                    lines, size = [], 0
            if failed:
                break
            if lines:
                await send(lines)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        await events.aclose()
    return resp


def _encode(
    item: watching.WatchItem,
    record: ResourceRecord,
    *,
    protobuf_frames: bool = False,
    metadata_only: str = "",
    converted: Object | None = None,
) -> bytes:
    """The event's JSON line or protobuf frame; encoded once per (type, version, encoding, view)
    and shared by every watcher. ``metadata_only`` is a meta.k8s.io version: objects (not errors)
    go as PartialObjectMetadata of it; ``converted``: the object already at ``record``'s version
    (a conversion webhook's answer)."""
    ev = item.event
    memo = (item.type, record.api_version, protobuf_frames, metadata_only)
    if ev is not None:
        cached = ev.encoded.get(memo)
        if cached is not None:
            return cached  # another watcher's: no conversion or view to build again
    if converted is not None:
        obj = converted
    else:
        obj = to_version(record, item.object) if item.type != "ERROR" else item.object
    if metadata_only and item.type != "ERROR":
        obj = partial.of_object(obj, metadata_only)
    line = (_frame if protobuf_frames else _line)(item.type, obj)
    if ev is not None:
        ev.encoded[memo] = line
    return line


def _encoded_already(
    item: watching.WatchItem, record: ResourceRecord, protobuf_frames: bool, metadata_only: str
) -> bool:
    """Whether another watcher already encoded this event for this view (then no conversion
    webhook call is needed to send it)."""
    ev = item.event
    return ev is not None and (item.type, record.api_version, protobuf_frames, metadata_only) in ev.encoded


def _line(kind: str, obj: Object) -> bytes:
    return b'{"type":"' + kind.encode() + b'","object":' + negotiation.go_escape(orjson.dumps(obj)) + b"}\n"


def _frame(kind: str, obj: Object) -> bytes:
    return protobuf.watch_frame(kind, protobuf.encode(obj))


async def delete_collection(scope: Scope) -> web.StreamResponse:
    opts = await delete_options(scope)
    lo = list_options(scope)
    page = await scope.registry.list_page(
        scope.record,
        scope.info.namespace,
        listing.ListOptions(label_selector=lo.label_selector, field_selector=lo.field_selector),
    )
    deleted = []
    for obj in page.items:
        meta = obj["metadata"]
        try:
            last, _ = await scope.registry.delete(scope.record, meta.get("namespace", ""), meta["name"], opts)
        except errors.NotFound:
            continue
        deleted.append(last)
    body = {
        "kind": scope.record.list_kind,
        "apiVersion": scope.record.api_version,
        "metadata": {"resourceVersion": str(scope.registry.revision())},
        "items": deleted if scope.record.custom else [encoded.untyped(o) for o in deleted],
    }
    return scope.respond_plain(body)
