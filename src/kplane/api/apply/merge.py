"""Merging an applied configuration into a live object, and removing fields from an object.

``merge`` is structured-merge-diff's ``live.Merge(config)``: leaves and atomic values of the
config replace the live ones, granular maps merge key by key, ``map`` lists merge entry by entry
(matched by key fields) and ``set`` lists by value. Order of a merged list: entries present in both
follow the config's order, entries only in the live list keep their places between them, entries
only in the config are placed where the config has them. ``null`` in the config removes the key
(built-in kinds store no nulls); nulls inside values new to the object are dropped likewise.

``remove`` deletes the members of a field set from an object (a member list entry or map key goes
with everything below it), dropping maps and lists it leaves empty.

Both return or modify only fresh values: ``merge`` never shares structure with its inputs.
"""

from __future__ import annotations

from typing import Any

from kplane.api.apply import fieldpath, walk

Schema = walk.Schema


def copy_clean(value: Any) -> Any:
    """A deep copy of a JSON value without null map values."""
    if isinstance(value, dict):
        return {k: copy_clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [copy_clean(v) for v in value]
    return value


def merge(live: dict[str, Any], config: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """``live`` with ``config`` merged in (see the module docstring). Inputs are not modified."""
    return _merge_map(live, config, schema)


def _merge_map(live: dict[str, Any], config: dict[str, Any], node: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, lv in live.items():
        if k not in config:
            out[k] = copy_clean(lv)
            continue
        rv = config[k]
        if rv is None:
            continue
        out[k] = _merge_value(lv, rv, walk.child(node, k)[0])
    for k, rv in config.items():
        if k not in live and rv is not None:
            out[k] = copy_clean(rv)
    return out


def _merge_value(lv: Any, rv: Any, node: Schema) -> Any:
    if isinstance(lv, dict) and isinstance(rv, dict) and not walk.is_atomic_map(node):
        return _merge_map(lv, rv, node)
    if isinstance(lv, list) and isinstance(rv, list):
        kind, keys, items = walk.list_info(node)
        if kind != walk.ATOMIC:
            merged = _merge_list(lv, rv, kind, keys, items)
            if merged is not None:
                return merged
    return copy_clean(rv)


def _merge_list(
    live: list[Any], config: list[Any], kind: str, keys: tuple[str, ...], items: Schema
) -> list[Any] | None:
    lpes = [walk.item_element(x, kind, keys, items) for x in live]
    rpes = [walk.item_element(x, kind, keys, items) for x in config]
    if None in lpes or None in rpes:
        return None
    in_live: dict[str | None, Any] = {}
    for pe, item in zip(lpes, live, strict=True):
        in_live.setdefault(pe, item)
    in_config: dict[str | None, Any] = {}
    for pe, item in zip(rpes, config, strict=True):
        in_config.setdefault(pe, item)
    # The entries both lists have, in the config's order: each is placed when the live walk
    # reaches it, unless the config walk places it first.
    shared = [pe for pe in in_config if pe in in_live]
    shared_at = 0
    done: set[str | None] = set()
    out: list[Any] = []

    def emit(pe: str | None) -> None:
        nonlocal shared_at
        done.add(pe)
        litem = in_live.get(pe, walk.MISSING)
        ritem = in_config[pe]
        out.append(copy_clean(ritem) if litem is walk.MISSING else _merge_value(litem, ritem, items))
        while shared_at < len(shared) and shared[shared_at] in done:
            shared_at += 1

    i = j = 0
    while i < len(lpes) or j < len(rpes):
        if i < len(lpes):
            lpe = lpes[i]
            if lpe not in in_config:
                out.append(copy_clean(live[i]))
                i += 1
                continue
            if lpe in done:
                i += 1
                continue
            if j < len(rpes) and rpes[j] == lpe:
                emit(lpe)
                i += 1
                j += 1
                continue
            if j < len(rpes) and shared_at < len(shared) and shared[shared_at] != lpe:
                i += 1
                continue
        if j < len(rpes):
            if rpes[j] not in done:
                emit(rpes[j])
            j += 1
        elif i < len(lpes):
            i += 1
    return out


def remove(
    obj: dict[str, Any],
    doomed: fieldpath.Node,
    schema: Schema,
    *,
    keep: fieldpath.Node | None = None,
) -> None:
    """Delete from ``obj``, in place, every member path of the trie ``doomed``.

    ``keep`` (a trie of fields someone still owns) protects declared struct fields: a doomed
    struct field with kept fields below it stays and only its doomed descendants go, as upstream
    treats named fields as members of every owner's set. Map keys and list entries go whole.
    """
    _remove_map(obj, doomed, schema, keep)


def _remove_map(
    obj: dict[str, Any], doomed: fieldpath.Node, node: Schema, keep: fieldpath.Node | None
) -> None:
    for pe, sub in doomed.items():
        if not pe.startswith("f:"):
            continue
        name = pe[2:]
        if name not in obj:
            continue
        child_schema, declared = walk.child(node, name)
        kept = keep.get(pe) if keep is not None else None
        member = not sub or fieldpath.SELF in sub
        if member and not (declared and kept):
            del obj[name]
            continue
        _remove_in(obj, name, sub, child_schema, kept)


def _remove_in(
    container: dict[str, Any], name: str, doomed: fieldpath.Node, node: Schema, keep: fieldpath.Node | None
) -> None:
    value = container[name]
    before = len(value) if isinstance(value, dict | list) else 0
    if isinstance(value, dict) and not walk.is_atomic_map(node):
        _remove_map(value, doomed, node, keep)
    elif isinstance(value, list):
        kind, keys, items = walk.list_info(node)
        if kind != walk.ATOMIC:
            _remove_list(value, doomed, kind, keys, items, keep)
    if before and isinstance(value, dict | list) and not value:
        del container[name]


def _remove_list(
    value: list[Any],
    doomed: fieldpath.Node,
    kind: str,
    keys: tuple[str, ...],
    items: Schema,
    keep: fieldpath.Node | None,
) -> None:
    kept_items: list[Any] = []
    for item in value:
        pe = walk.item_element(item, kind, keys, items)
        sub = doomed.get(pe) if pe is not None else None
        if sub is None:
            kept_items.append(item)
            continue
        if not sub or fieldpath.SELF in sub:
            continue
        if isinstance(item, dict):
            _remove_map(item, sub, items, keep.get(pe) if keep is not None and pe is not None else None)
        kept_items.append(item)
    value[:] = kept_items
