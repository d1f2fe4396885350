"""List: resourceVersion semantics, selectors and ``limit``/``continue`` pagination.

A continue token carries the snapshot revision and the last key returned, so every page of one
list comes from the same snapshot. The first page and pages whose snapshot is still current are
served by the cache; older snapshots are read from the backend's history, and a snapshot that has
been compacted answers 410 Expired.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import orjson

from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server import storage
from kplane.server.registry import selection
from kplane.server.registry.objects import storage_error

Object = dict[str, Any]

EXPIRED = "The resourceVersion for the provided list is too old."
"""410 for a read at a compacted revision (storage/etcd3/errors.go ``expired``)."""
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a "
    "new list without the continue parameter, or use the continue token in this response to retrieve "
    "the remainder of the results. Continuing with the provided token results in an inconsistent list "
    "- objects that were created, modified, or deleted between the time the first chunk was returned "
    "and now may show up in the list."
)


@dataclass(frozen=True, slots=True)
class ListOptions:
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str | None = None
    resource_version_match: str = ""
    send_initial_events: bool = False


@dataclass(frozen=True, slots=True)
class ListPage:
    items: list[Object]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


def encode_continue(revision: int, last_key: str) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": last_key + "\x00"})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str, prefix: str) -> tuple[int, str]:
    """(revision, key to start after) from a token; 400 for anything we did not issue."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        revision, start = int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError):
        raise errors.BadRequest("continue key is not valid: illegal base64 data or content") from None
    if data.get("v") != "meta.k8s.io/v1" or revision <= 0 or not start.endswith("\x00"):
        raise errors.BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    start = start[:-1]
    if not start.startswith(prefix):
        raise errors.BadRequest("continue key is not valid: the key does not belong to this list")
    return revision, start


def validate_list_options(
    opts: ListOptions, *, watch: bool = False, send_initial_events: bool = False
) -> None:
    """Upstream's ListOptions validation (422 Invalid with a cause per problem)."""
    errs: list[errors.FieldError] = []
    match = opts.resource_version_match
    if match and watch:
        # A watch may name a match only with sendInitialEvents, and then only NotOlderThan; an
        # empty resourceVersion there means "the state now" (client-go's WatchList request).
        if not send_initial_events:
            errs.append(
                errors.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                )
            )
        elif match != "NotOlderThan":
            errs.append(errors.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
    elif match:
        if opts.resource_version is None or opts.resource_version == "":
            errs.append(
                errors.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        elif opts.continue_token:
            errs.append(
                errors.forbidden(
                    "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
                )
            )
        elif match not in ("Exact", "NotOlderThan"):
            errs.append(errors.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan"]))
        elif match == "Exact" and opts.resource_version == "0":
            errs.append(
                errors.forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if not watch and opts.send_initial_events:
        errs.append(errors.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if watch and send_initial_events and not match:
        errs.append(
            errors.forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if opts.resource_version not in (None, ""):
        try:
            if int(opts.resource_version) < 0:
                raise ValueError
        except ValueError:
            errs.append(
                errors.invalid("resourceVersion", opts.resource_version, "must be a non-negative integer")
            )
    if errs:
        raise errors.Invalid(
            'ListOptions.meta.k8s.io "" is invalid: '
            + (str(errs[0]) if len(errs) == 1 else "[" + ", ".join(map(str, errs)) + "]"),
            details={
                "kind": "ListOptions",
                "group": "meta.k8s.io",
                "causes": [e.cause().to_dict() for e in errs],
            },
        )


async def list_objects(
    store: storage.Storage, record: ResourceRecord, namespace: str, opts: ListOptions
) -> ListPage:
    validate_list_options(opts)
    sel = selection.Selection.parse(record, opts.label_selector, opts.field_selector)
    prefix = record.namespace_prefix(namespace)
    limit = max(0, opts.limit)
    start_after = ""
    revision = 0
    rv = opts.resource_version
    try:
        if opts.continue_token:
            revision, start_after = decode_continue(opts.continue_token, prefix)
            if revision == store.current_revision():
                revision = 0
        elif rv in (None, ""):
            await sync(store)
        else:
            wanted = int(rv)
            if opts.resource_version_match == "Exact":
                revision = wanted if wanted != store.current_revision() else 0
            else:
                if rv == "0":
                    limit = 0  # "any version" is served whole from the cache, as upstream
                await wait_for_revision(store, wanted)
        result = await _scan(
            store, record, prefix, sel, revision=revision, start_after=start_after, limit=limit
        )
    except storage.Expired:
        if opts.continue_token:
            raise errors.Gone(CONTINUE_EXPIRED) from None
        raise errors.Gone(EXPIRED) from None
    except storage.StorageError as err:
        raise storage_error(record, "", err) from None
    return result


async def sync(store: storage.Storage) -> None:
    """For a consistent read (resourceVersion unset): wait until a cache over a store shared with
    other servers (etcd) has seen the store's current revision; nothing to do otherwise."""
    waiter = getattr(store, "sync", None)
    if waiter is not None:
        await waiter()


async def wait_for_revision(store: storage.Storage, wanted: int) -> None:
    """Wait (bounded, by the cache) until the store has seen ``wanted``; 504 if it never does."""
    if wanted <= store.current_revision():
        return
    waiter = getattr(store, "wait_for_revision", None)
    if waiter is not None:
        await waiter(wanted, 3.0)
        return
    raise storage.TooLargeRevision(wanted, store.current_revision())


async def _scan(
    store: storage.Storage,
    record: ResourceRecord,
    prefix: str,
    sel: selection.Selection,
    *,
    revision: int,
    start_after: str,
    limit: int,
) -> ListPage:
    if sel.empty:
        res = await store.list(prefix, revision=revision, start_after=start_after, limit=limit)
        token = encode_continue(res.revision, res.last_key) if res.more else ""
        return ListPage(res.items, str(res.revision), token, res.remaining if res.more else None)
    res = await store.list(prefix, revision=revision, start_after=start_after)
    matched = [o for o in res.items if sel.matches(o)]
    if not limit or len(matched) <= limit:
        return ListPage(matched, str(res.revision))
    page = matched[:limit]
    last = page[-1]["metadata"]
    return ListPage(
        page,
        str(res.revision),
        encode_continue(res.revision, record.key(last.get("namespace", ""), last["name"])),
    )
