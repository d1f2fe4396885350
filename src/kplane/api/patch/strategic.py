"""Strategic merge patch: a merge patch that merges lists by key, driven by schema extensions.

Design note. Upstream (apimachinery ``strategicpatch``) applies a patch by merging it into the live
object map by map. Lists are merged only when the field's schema says
``x-kubernetes-patch-strategy: merge``: lists of maps by ``x-kubernetes-patch-merge-key``, lists of
scalars as an ordered union; all other lists are replaced. On top of that the patch may carry
directives, which ``kubectl apply`` and ``kubectl edit`` generate:

* ``$patch: replace | delete | merge`` in a map (replace it, empty it, or merge as usual) and in a
  list element (``delete`` drops the entry with that merge key, ``replace`` replaces the whole list);
* ``$retainKeys: [k...]``: keys of the live map not listed are dropped before merging;
* ``$setElementOrder/<field>: [...]``: the final order of the entries named in the patch;
* ``$deleteFromPrimitiveList/<field>: [...]``: scalars to drop from a merged scalar list;
* ``null`` as a value deletes the key.

Order of a merged list follows upstream: entries named in the patch (or ``$setElementOrder``) keep
the patch's order, entries only on the server keep theirs, and the two are interleaved by their
positions in the live list; entries new to the server come first when no live position decides.

Departures from upstream, all in the direction of never storing a directive: values new to the live
object (a new key, a new list entry, an atomic list) are built by merging them into an empty value,
so directives and ``null`` inside them are processed instead of being copied verbatim; ``$patch:
merge`` is accepted on list entries; ``$setElementOrder`` is not cross-checked against the patch list.

The live object is copied once; the patch is only read; the result shares nothing with either.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

from kplane.api.patch import _base
from kplane.api.schema import node as schema_node

Node = schema_node.SchemaNode | None

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder/"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"

_MISSING: Any = object()


def strategic_merge(original: Mapping[str, Any], patch: Mapping[str, Any], schema: Node) -> dict[str, Any]:
    """Apply a strategic merge patch to ``original`` using the patch metadata of ``schema``.

    ``schema`` is the root node of the object's kind; None means "no metadata": every list is
    atomic (replaced), which is merge-patch semantics plus the map directives. Neither input is
    modified. Raises ``PatchError`` for a malformed patch (unknown ``$patch`` value, a list entry
    without its merge key, a directive of the wrong type).
    """
    if not isinstance(patch, dict):
        raise _base.PatchError("a strategic merge patch must be a JSON object")
    base = _base.copy_json(dict(original)) if isinstance(original, dict) else {}
    return _merge_map(base, patch, schema, "")


def _child(node: Node, key: str) -> Node:
    return node.field(key) if node is not None else None


def _items(node: Node) -> Node:
    return node.items() if node is not None else None


def _merge_map(live: dict[str, Any], patch: Mapping[str, Any], node: Node, path: str) -> dict[str, Any]:
    """Merge ``patch`` into ``live`` (owned by the caller, modified in place) and return it."""
    directive = patch.get(PATCH, _MISSING)
    if directive is not _MISSING:
        if directive == "replace":
            return _merge_map({}, {k: v for k, v in patch.items() if k != PATCH}, node, path)
        if directive == "delete":
            return {}
        if directive != "merge":
            raise _base.PatchError(f"{_where(path)}unknown patch type {directive!r} in map")

    retain = patch.get(RETAIN_KEYS, _MISSING)
    if retain is not _MISSING:
        if not isinstance(retain, list) or not all(isinstance(k, str) for k in retain):
            raise _base.PatchError(f"{_where(path)}$retainKeys must be a list of strings")
        keep = set(retain)
        for key in [k for k in live if k not in keep]:
            del live[key]

    ordered: set[str] = set()
    for key, order in patch.items():
        if key.startswith(SET_ELEMENT_ORDER):
            field = key[len(SET_ELEMENT_ORDER) :]
            _set_element_order(live, field, order, patch.get(field, _MISSING), _child(node, field), path)
            ordered.add(field)

    for key, value in patch.items():
        if key in (PATCH, RETAIN_KEYS) or key in ordered or key.startswith(SET_ELEMENT_ORDER):
            continue
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            field = key[len(DELETE_FROM_PRIMITIVE_LIST) :]
            if not isinstance(value, list):
                raise _base.PatchError(f"{_where(path)}{key} must be a list")
            current = live.get(field)
            if isinstance(current, list):
                live[field] = [v for v in current if v not in value]
            continue
        if value is None:
            live.pop(key, None)
            continue
        live[key] = _merge_value(live.get(key, _MISSING), value, _child(node, key), _join(path, key))
    return live


def _merge_value(live: Any, patch: Any, node: Node, path: str) -> Any:
    if isinstance(patch, dict):
        if isinstance(live, dict) and not (node is not None and "replace" in node.patch_strategies):
            return _merge_map(live, patch, node, path)
        return _merge_map({}, patch, node, path)
    if isinstance(patch, list):
        return _merge_list(live if isinstance(live, list) else [], patch, node, path)
    return patch


def _merge_list(live: list[Any], patch: list[Any], node: Node, path: str) -> list[Any]:
    """Merge ``patch`` into ``live`` (owned by the caller) according to the list's strategy."""
    items = _items(node)
    if node is None or "merge" not in node.patch_strategies:
        # Atomic list: the patch replaces it. Directive entries have no meaning here; drop them.
        return [_build(e, items, path) for e in patch if not (isinstance(e, dict) and PATCH in e)]
    if not live and not patch:
        return live
    if not any(isinstance(e, dict) for e in (*live, *patch)):
        merged = _dedupe([*live, *(_base.copy_json(e) for e in patch)])
        return _order(merged, patch, live, _identity)

    merge_key = node.merge_key
    if not merge_key:
        raise _base.PatchError(f"{_where(path)}cannot merge lists without a merge key")
    plain: list[Mapping[str, Any]] = []
    for entry in patch:
        if not isinstance(entry, dict):
            raise _base.PatchError(f"{_where(path)}list entry {entry!r} is not an object")
        directive = entry.get(PATCH, _MISSING)
        if directive is _MISSING or directive == "merge":
            plain.append(entry)
        elif directive == "delete":
            if merge_key not in entry:
                raise _base.PatchError(_no_merge_key(entry, merge_key, path))
            doomed = entry[merge_key]
            live = [e for e in live if not (isinstance(e, dict) and e.get(merge_key) == doomed)]
        elif directive == "replace":
            entries = [e for e in patch if isinstance(e, dict) and PATCH not in e]
            return [_merge_map({}, e, items, path) for e in entries]
        else:
            raise _base.PatchError(f"{_where(path)}unknown patch type {directive!r} in list entry")

    server_order = list(live)
    for entry in plain:
        if merge_key not in entry:
            raise _base.PatchError(_no_merge_key(entry, merge_key, path))
        wanted = entry[merge_key]
        for i, current in enumerate(live):
            if isinstance(current, dict) and current.get(merge_key, _MISSING) == wanted:
                live[i] = _merge_map(current, entry, items, path)
                break
        else:
            live.append(_merge_map({}, entry, items, path))
    return _order(live, plain, server_order, _keyed(merge_key))


def _set_element_order(
    live: dict[str, Any], field: str, order: Any, patch_list: Any, node: Node, path: str
) -> None:
    """Merge ``live[field]`` with the patch list (if any), then impose ``order`` on the entries it names."""
    if not isinstance(order, list):
        raise _base.PatchError(f"{_where(path)}{SET_ELEMENT_ORDER}{field} must be a list")
    current = live.get(field)
    if patch_list is None:
        live.pop(field, None)
        return
    if patch_list is not _MISSING and not isinstance(patch_list, list):
        raise _base.PatchError(f"{_where(path)}{field} must be a list next to {SET_ELEMENT_ORDER}{field}")
    server_order = list(current) if isinstance(current, list) else []
    if patch_list is _MISSING:
        if not isinstance(current, list):
            return
        merged = current
    else:
        merged = _merge_list(list(server_order), patch_list, node, _join(path, field))
    merge_key = node.merge_key if node is not None else None
    if merge_key and any(isinstance(e, dict) for e in (*merged, *order)):
        key = _keyed(merge_key)
    else:
        key = _identity
    live[field] = _order(merged, order, server_order, key)


def _order(
    merged: list[Any], patch_order: list[Any], server_order: list[Any], key: Callable[[Any], Hashable]
) -> list[Any]:
    """Entries named by ``patch_order`` in its order, the others in ``server_order``'s, interleaved.

    An entry from the patch goes before a server-only entry unless both have live positions and
    the server-only one is earlier (upstream ``mergeSortedSlice``).
    """
    wanted = _positions(patch_order, key)
    live_pos = _positions(server_order, key)
    end = len(merged) + len(patch_order) + len(server_order)
    from_patch = sorted((e for e in merged if key(e) in wanted), key=lambda e: wanted[key(e)])
    server_only = sorted((e for e in merged if key(e) not in wanted), key=lambda e: live_pos.get(key(e), end))
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) and j < len(from_patch):
        left = live_pos.get(key(server_only[i]))
        right = live_pos.get(key(from_patch[j]))
        if left is not None and right is not None and left < right:
            out.append(server_only[i])
            i += 1
        else:
            out.append(from_patch[j])
            j += 1
    out.extend(server_only[i:])
    out.extend(from_patch[j:])
    return out


def _positions(entries: list[Any], key: Callable[[Any], Hashable]) -> dict[Hashable, int]:
    pos: dict[Hashable, int] = {}
    for i, e in enumerate(entries):
        pos.setdefault(key(e), i)
    return pos


def _identity(value: Any) -> Hashable:
    # Scalars of different JSON types must not collide (True == 1 in Python).
    if isinstance(value, dict | list):
        return repr(value)
    return (type(value), value)


def _keyed(merge_key: str) -> Callable[[Any], Hashable]:
    def key(entry: Any) -> Hashable:
        value = entry.get(merge_key) if isinstance(entry, dict) else entry
        return _identity(value)

    return key


def _dedupe(values: list[Any]) -> list[Any]:
    seen: set[Hashable] = set()
    out = []
    for v in values:
        k = _identity(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _build(value: Any, node: Node, path: str) -> Any:
    """A new value from a patch value alone: directives processed, nulls in maps dropped."""
    if isinstance(value, dict):
        return _merge_map({}, value, node, path)
    if isinstance(value, list):
        return _merge_list([], value, node, path)
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _where(path: str) -> str:
    return f"{path}: " if path else ""


def _no_merge_key(entry: Mapping[str, Any], merge_key: str, path: str) -> str:
    return f"{_where(path)}map: {dict(entry)!r} does not contain declared merge key: {merge_key}"
