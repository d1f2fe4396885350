"""Server-side apply and managedFields bookkeeping for ordinary writes, as pure functions.

Design note. Upstream stacks a dozen "managers" around structured-merge-diff's ``Updater``; the
behaviour users see reduces to two operations, written here top to bottom:

``apply`` (PATCH with ``application/apply-patch+yaml``)
    1. Decode live ownership. A live object with no managedFields first gets a
       ``before-first-apply`` Update entry owning everything it has.
    2. Merge the config into the live object; the applier's new set is ``fields_of(config)``.
    3. Prune: fields in the applier's previous Apply set that it no longer applies and nobody
       else owns are removed from the object.
    4. Compare live and result. A field another manager owns that is modified or added is a
       conflict; without ``force`` they are raised together, with ``force`` the others lose them.
       Every manager loses fields the result no longer has. Same value → no change → shared.
    5. Managers left with nothing are dropped; the applier's ``time`` moves only if the object
       changed.
    ``kubectl`` migrating from client-side apply: for the manager ``kubectl``, conflicts on
    fields whose live value still equals the ``last-applied-configuration`` annotation are
    forced, and afterwards the annotation (if present) is rewritten to the new config, as
    upstream's lastApplied manager/updater do.

``update_managed_fields`` (create, update, non-apply patch)
    The writer takes every field that is added or modified from old to new; every other manager
    loses those and the removed ones; the writer's entry for this apiVersion accumulates; its time
    moves when it took anything. managedFields sent in the request replace the live ones (``[{}]``
    clears them); a request to a subresource cannot set them. Existing objects with no
    managedFields stay untracked, as upstream. More than ten Update entries fold into
    ``ancient-changes``.

Both strip the fields nobody owns (apiVersion, kind, metadata name, namespace, uid, ...), never
modify their inputs, and return a new object. Times are the caller's ``now`` (RFC 3339 seconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from kplane.api import errors
from kplane.api.apply import conflict, fieldpath, managed, merge, walk

Schema = walk.Schema

BEFORE_FIRST_APPLY = "before-first-apply"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL_MANAGER = "kubectl"
FIELD_MANAGER_MAX_LENGTH = 128

# Fields no manager owns (upstream's stripMetaManager): exact members, not their subtrees.
_STRIPPED_TOP = ("f:apiVersion", "f:kind")
_STRIPPED_META = tuple(
    "f:" + name
    for name in (
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    )
)


def default_manager(user_agent: str) -> str:
    """The field manager of a request that names none: the User-Agent up to its first ``/``,
    unprintable characters dropped, cut at 128 bytes (``kubectl/v1.32.0 (linux/amd64) …`` →
    ``kubectl``)."""
    head = user_agent.split("/", 1)[0]
    if len(head) <= FIELD_MANAGER_MAX_LENGTH and head.isprintable() and head.isascii():
        return head  # the common case, in C: nothing to drop, one byte a character
    out: list[str] = []
    size = 0
    for ch in head:
        if not ch.isprintable():  # as Go's unicode.IsPrint: no controls, no spaces but " "
            continue
        n = len(ch.encode())
        if size + n > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += n
    return "".join(out)


def _strip(fields: fieldpath.FieldSet) -> fieldpath.FieldSet:
    root = fields.trie
    meta = root.get("f:metadata")
    touched = meta is not None or any(k in root for k in _STRIPPED_TOP)
    if not touched:
        return fields
    out = {k: v for k, v in root.items() if k not in _STRIPPED_TOP and k != "f:metadata"}
    if meta:
        # "f:metadata" itself is stripped as a member; only its children remain.
        children = {k: v for k, v in meta.items() if k not in _STRIPPED_META and k != fieldpath.SELF}
        if children:
            out["f:metadata"] = children
    return fieldpath.FieldSet(out)


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without ``metadata.managedFields`` (a shallow copy when it had them)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta = dict(meta)  # in C, keeping the order
        del meta["managedFields"]
        obj = {**obj, "metadata": meta}
    return obj


def _with_managed(obj: dict[str, Any], entries: dict[str, managed.Entry]) -> dict[str, Any]:
    encoded = managed.encode(entries.values())
    meta = obj.get("metadata")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta.pop("managedFields", None)
    if encoded:
        meta["managedFields"] = encoded
    return {**obj, "metadata": meta}


def _managed_fields(obj: dict[str, Any] | None) -> Any:
    if obj is None:
        return None
    meta = obj.get("metadata")
    return meta.get("managedFields") if isinstance(meta, dict) else None


def _take(
    entries: dict[str, managed.Entry], taken: fieldpath.FieldSet, lost: fieldpath.FieldSet, skip: str
) -> dict[str, managed.Entry]:
    """Every manager but ``skip`` without ``taken`` and ``lost``; empty managers dropped."""
    out: dict[str, managed.Entry] = {}
    gone = taken.union(lost)
    for ident, e in entries.items():
        if ident != skip and not gone.empty():
            fields = e.fields.difference(gone)
            if fields.empty():
                continue
            if fields is not e.fields:
                e = managed.Entry(e.manager, e.operation, e.api_version, fields, e.time, e.subresource)
        out[ident] = e
    return out


# ---------------------------------------------------------------------------------------------
# Update


def update_managed_fields(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    schema: Schema,
    now: str,
    operation: str = managed.UPDATE,
    subresource: str = "",
    zero: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``new`` with managedFields updated for a non-apply write by ``manager`` (see the module
    docstring). ``old`` is the stored object, None on create; a create is compared against
    ``zero``, the kind's empty value (upstream compares against the Go zero value, whose
    non-pointer struct fields exist, so only fields absent there become members ``"."``; custom
    resources start from ``{}``). Inputs are not modified."""
    requested = _managed_fields(new)
    try:
        if subresource:
            entries = managed.decode(_managed_fields(old))
        elif managed.is_reset(requested):
            entries = {}
        else:
            entries = managed.decode(requested) if requested else {}
            if not entries:
                entries = managed.decode(_managed_fields(old))
    except ValueError:
        try:
            entries = managed.decode(_managed_fields(old))
        except ValueError:
            entries = {}
    new_body = _body(new)
    if old is not None and not entries and not managed.is_reset(requested):
        # Upstream never starts tracking an existing object on an ordinary write.
        return _with_managed(new_body, {})
    if old is None:
        taken, lost = walk.created(new_body, schema, zero or {}), fieldpath.FieldSet()
    else:
        cmp = walk.compare(_body(old), new_body, schema)
        taken, lost = cmp.changed(), cmp.removed
    ident = managed.identity(manager, operation, api_version, subresource)
    entries = _take(entries, taken, lost, skip="")
    mine = _strip(taken)
    if not mine.empty():
        prev = entries.get(ident)
        fields = mine if prev is None else prev.fields.union(mine)
        entries[ident] = managed.Entry(manager, operation, api_version, fields, now, subresource)
    entries = managed.cap_update_managers(entries)
    return _with_managed(new_body, entries)


# ---------------------------------------------------------------------------------------------
# Apply


def apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    schema: Schema,
    force: bool,
    now: str,
    subresource: str = "",
) -> dict[str, Any]:
    """Server-side apply of ``applied`` by ``manager`` onto ``live`` (None: create).

    Returns the new object with its managedFields. Raises ``conflict.ApplyConflict`` (409) when
    the config would change fields other managers own and ``force`` is false, and
    ``errors.BadRequest`` when the config is not an object or carries managedFields. Inputs are
    not modified.
    """
    if not isinstance(applied, dict):
        raise errors.BadRequest("the apply configuration must be a JSON object")
    meta = applied.get("metadata")
    if isinstance(meta, dict) and meta.get("managedFields") is not None:
        raise errors.BadRequest("metadata.managedFields must be nil")
    try:
        entries = managed.decode(_managed_fields(live))
    except ValueError as e:
        raise errors.InternalError(f"failed to decode managed fields: {e}") from None
    live_body = _body(live) if live is not None else {}
    if live is not None and not entries:
        everything = _strip(walk.compare({}, live_body, schema).added)
        if not everything.empty():
            first = managed.Entry(BEFORE_FIRST_APPLY, managed.UPDATE, api_version, everything, now)
            entries = {first.identity: first}
    try:
        result, new_entries = _apply(
            live_body, applied, entries, manager, api_version, schema, force, subresource
        )
    except conflict.ApplyConflict as exc:
        if force or manager != KUBECTL_MANAGER:
            raise
        allowed = _allowed_by_last_applied(live_body, schema, api_version)
        if allowed is None:
            raise
        remaining = [c for c in exc.conflicts if not allowed.has(c.path)]
        if remaining:
            raise conflict.ApplyConflict(remaining) from None
        result, new_entries = _apply(
            live_body, applied, entries, manager, api_version, schema, True, subresource
        )
    ident = managed.identity(manager, managed.APPLY, api_version, subresource)
    mine = new_entries.get(ident)
    if mine is not None:
        prev = entries.get(ident)
        changed = result != live_body
        time = now if changed else (prev.time if prev else None)
        new_entries[ident] = managed.Entry(
            manager, managed.APPLY, api_version, mine.fields, time, subresource
        )
    if manager == KUBECTL_MANAGER and _has_last_applied(result):
        result = _set_last_applied(result, applied)
    return _with_managed(result, managed.cap_update_managers(new_entries))


def _apply(
    live: dict[str, Any],
    applied: dict[str, Any],
    entries: dict[str, managed.Entry],
    manager: str,
    api_version: str,
    schema: Schema,
    force: bool,
    subresource: str,
) -> tuple[dict[str, Any], dict[str, managed.Entry]]:
    ident = managed.identity(manager, managed.APPLY, api_version, subresource)
    new_set = _strip(walk.fields_of(applied, schema))
    result = merge.merge(live, applied, schema)
    previous = entries.get(ident)
    if previous is not None and not previous.fields.empty():
        owned = new_set
        for other_ident, e in entries.items():
            if other_ident != ident:
                owned = owned.union(e.fields)
        doomed = previous.fields.difference(owned)
        if not doomed.empty():
            merge.remove(result, doomed.trie, schema, keep=owned.trie)
    cmp = walk.compare(live, result, schema)
    changed = cmp.changed()
    found: list[conflict.Conflict] = []
    if not changed.empty():
        for other_ident in sorted(entries):
            if other_ident == ident:
                continue
            e = entries[other_ident]
            for path in e.fields.intersection(changed).paths():
                found.append(conflict.Conflict(e.manager, e.operation, e.api_version, path, e.subresource))
    if found and not force:
        raise conflict.ApplyConflict(found)
    out = _take(entries, changed if found else fieldpath.FieldSet(), cmp.removed, skip=ident)
    if new_set.empty():
        out.pop(ident, None)
    else:
        out[ident] = managed.Entry(manager, managed.APPLY, api_version, new_set, None, subresource)
    return result, out


def _last_applied(obj: dict[str, Any]) -> str | None:
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    value = annotations.get(LAST_APPLIED_ANNOTATION) if isinstance(annotations, dict) else None
    return value if isinstance(value, str) and value else None


def _has_last_applied(obj: dict[str, Any]) -> bool:
    return _last_applied(obj) is not None


def _allowed_by_last_applied(
    live: dict[str, Any], schema: Schema, api_version: str
) -> fieldpath.FieldSet | None:
    """Fields client-side apply last set that still hold its values: kubectl may take them."""
    text = _last_applied(live)
    if text is None:
        return None
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return None
    cmp = walk.compare(last, live, schema)
    return walk.fields_of(last, schema).difference(cmp.modified).difference(cmp.added).difference(cmp.removed)


def _set_last_applied(obj: dict[str, Any], applied: dict[str, Any]) -> dict[str, Any]:
    config = dict(applied)
    meta = config.get("metadata")
    if isinstance(meta, dict):
        meta = dict(meta)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED_ANNOTATION in annotations:
            annotations = {k: v for k, v in annotations.items() if k != LAST_APPLIED_ANNOTATION}
            if annotations:
                meta["annotations"] = annotations
            else:
                del meta["annotations"]
        config["metadata"] = meta
    text = orjson.dumps(config).decode() + "\n"
    out_meta = dict(obj["metadata"])
    out_meta["annotations"] = {**out_meta["annotations"], LAST_APPLIED_ANNOTATION: text}
    return {**obj, "metadata": out_meta}
