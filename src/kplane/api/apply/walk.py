"""Walking an object beside its schema: the fields it sets, and what changed between two versions.

Both walks follow structured-merge-diff's typed values:

* a map whose schema says ``x-kubernetes-map-type: atomic`` (``spec.selector``), a list that is
  ``atomic`` (the default for lists without list metadata) and every scalar are *leaves*: owned
  and compared as a whole;
* other maps are granular: each key is its own field (``f:<key>``);
* ``map`` lists are granular per entry (``k:{...}`` from the key fields), ``set`` lists per value
  (``v:...``). Lists without ``x-kubernetes-list-type`` but with the legacy
  ``x-kubernetes-patch-strategy: merge`` are ``map`` lists keyed by their merge key (``set`` when
  there is none), as kube-openapi converts them.

Without a schema (None) maps are granular and lists atomic. A ``map`` list entry that lacks a key
field uses the key field's schema ``default``; ``protocol`` defaults to ``TCP`` (the built-in
definitions shipped here carry no defaults, upstream's OpenAPI does); any other missing key is left
out of the entry's key. Entries that are not objects make the whole list atomic.

Neither walk modifies the objects it reads.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from kplane.api.apply import fieldpath, pathelement
from kplane.api.schema import node as schema_node

Node = fieldpath.Node
Schema = schema_node.SchemaNode | None

ATOMIC, SET, MAP = "atomic", "set", "map"

MISSING: Any = object()
_LEAF: Node = {}
_KNOWN_KEY_DEFAULTS = {"protocol": "TCP"}


@functools.lru_cache(maxsize=4096)
def list_info(node: schema_node.SchemaNode | None) -> tuple[str, tuple[str, ...], Schema]:
    """``(kind, key fields, item schema)`` of a list schema; kind is atomic, set or map."""
    if node is None:
        return ATOMIC, (), None
    items = node.items()
    kind = node.list_type
    keys = node.list_map_keys
    if kind is None and "merge" in node.patch_strategies:
        merge_key = node.merge_key
        kind, keys = (MAP, (merge_key,)) if merge_key else (SET, ())
    if kind == MAP and not keys:
        kind = ATOMIC
    if kind not in (SET, MAP):
        kind = ATOMIC
    return kind, keys, items


@functools.lru_cache(maxsize=4096)
def is_atomic_map(node: Schema) -> bool:
    return node is not None and node.map_type == ATOMIC


@functools.lru_cache(maxsize=65536)
def child(node: Schema, name: str) -> tuple[Schema, bool]:
    """The schema of key ``name`` of a map value and whether it is a declared struct field."""
    if node is None:
        return None, False
    prop = node.property(name)
    if prop is not None:
        return prop, True
    return node.additional(), False


def item_element(item: Any, kind: str, keys: tuple[str, ...], items: Schema) -> str | None:
    """The path element of one list entry, or None when the entry cannot carry one."""
    if kind == SET:
        return pathelement.value(item)
    if not isinstance(item, Mapping):
        return None
    found: dict[str, Any] = {}
    for k in keys:
        v = item.get(k, MISSING)
        if v is MISSING or v is None:
            v = _key_default(items, k)
            if v is MISSING:
                continue
        found[k] = v
    if not found:
        return None
    return pathelement.key(found)


def _key_default(items: Schema, name: str) -> Any:
    prop = items.property(name) if items is not None else None
    if prop is not None and "default" in prop.resolved:
        return prop.resolved["default"]
    return _KNOWN_KEY_DEFAULTS.get(name, MISSING)


def index_items(value: list[Any], kind: str, keys: tuple[str, ...], items: Schema) -> dict[str, Any] | None:
    """Entries by path element (the first of duplicates wins), or None if one has no element."""
    out: dict[str, Any] = {}
    for item in value:
        pe = item_element(item, kind, keys, items)
        if pe is None:
            return None
        out.setdefault(pe, item)
    return out


def _is_leaf(value: Any, node: Schema) -> bool:
    if isinstance(value, dict):
        return is_atomic_map(node)
    if isinstance(value, list):
        return list_info(node)[0] == ATOMIC
    return True


# ---------------------------------------------------------------------------------------------
# fields_of: structured-merge-diff's ToFieldSet.


def fields_of(obj: Mapping[str, Any], schema: Schema) -> fieldpath.FieldSet:
    """The fields an object sets: every scalar, atomic value, list entry and map key.

    A declared struct field is itself a member only when its value is null or ``{}`` (or is a
    leaf); the keys of free-form maps always are. Non-atomic lists contribute their entries, each a
    member (``k:...``/``v:...``) with the entry's own fields below it.
    """
    return fieldpath.FieldSet(_fields_map(obj, schema))


def _fields_map(obj: Mapping[str, Any], node: Schema) -> Node:
    out: Node = {}
    for k, v in obj.items():
        sub, declared = child(node, k)
        made: Node | None
        if isinstance(v, dict):
            if is_atomic_map(sub):
                out["f:" + k] = _LEAF
                continue
            children = _fields_map(v, sub)
            made = fieldpath.make_node(children, not declared or not v)
        elif isinstance(v, list):
            kind, keys, items = list_info(sub)
            entries = _fields_list(v, kind, keys, items) if kind != ATOMIC else None
            made = _LEAF if entries is None else fieldpath.make_node(entries, not declared)
        else:
            made = _LEAF
        if made is not None:
            out["f:" + k] = made
    return out


def _fields_list(value: list[Any], kind: str, keys: tuple[str, ...], items: Schema) -> Node | None:
    out: Node = {}
    for item in value:
        pe = item_element(item, kind, keys, items)
        if pe is None:
            return None
        if kind == MAP and isinstance(item, dict):
            made = fieldpath.make_node(_fields_map(item, items), True)
            assert made is not None
            prev = out.get(pe)
            out[pe] = made if prev is None else fieldpath.union_nodes(prev, made)
        else:
            out[pe] = _LEAF
    return out


# ---------------------------------------------------------------------------------------------
# compare: structured-merge-diff's Compare (added, removed, modified).


class Comparison:
    """What changed from one object to another, as three field sets.

    ``added``/``removed`` hold every path present only in the new/old object, intermediate maps,
    lists and list entries included; ``modified`` holds leaves present in both with different
    values.
    """

    __slots__ = ("added", "modified", "removed")

    def __init__(self, added: Node, removed: Node, modified: Node) -> None:
        self.added = fieldpath.FieldSet(added)
        self.removed = fieldpath.FieldSet(removed)
        self.modified = fieldpath.FieldSet(modified)

    def changed(self) -> fieldpath.FieldSet:
        """``modified | added``: what a writer of the new object takes from others."""
        return self.modified.union(self.added)

    def same(self) -> bool:
        return self.added.empty() and self.removed.empty() and self.modified.empty()


def compare(old: Mapping[str, Any], new: Mapping[str, Any], schema: Schema) -> Comparison:
    """Compare two objects of one kind field by field."""
    added: Node = {}
    removed: Node = {}
    modified: Node = {}
    if old != new:
        _cmp_map(old, new, schema, added, removed, modified)
    return Comparison(added, removed, modified)


def _cmp_map(
    old: Mapping[str, Any], new: Mapping[str, Any], node: Schema, added: Node, removed: Node, modified: Node
) -> None:
    for k, lv in old.items():
        rv = new.get(k, MISSING)
        if rv is MISSING:
            sub, _ = child(node, k)
            removed["f:" + k] = _everything(lv, sub)
        elif lv != rv:
            sub, _ = child(node, k)
            _cmp_value("f:" + k, lv, rv, sub, added, removed, modified)
    for k, rv in new.items():
        if k not in old:
            sub, _ = child(node, k)
            added["f:" + k] = _everything(rv, sub)


def _cmp_value(pe: str, lv: Any, rv: Any, node: Schema, added: Node, removed: Node, modified: Node) -> None:
    """Record the differences of two present, unequal values at element ``pe``."""
    if lv is None and isinstance(rv, (dict, list)):
        # A null (a Go zero value's nil list or map) is present but empty: the new value's
        # contents are added, the node itself is not.
        lv = type(rv)()
    if isinstance(lv, dict) and isinstance(rv, dict) and not is_atomic_map(node):
        a: Node = {}
        r: Node = {}
        m: Node = {}
        _cmp_map(lv, rv, node, a, r, m)
        _attach(added, pe, a, False)
        _attach(removed, pe, r, False)
        _attach(modified, pe, m, False)
        return
    if isinstance(lv, list) and isinstance(rv, list):
        kind, keys, items = list_info(node)
        if kind != ATOMIC:
            li = index_items(lv, kind, keys, items)
            ri = index_items(rv, kind, keys, items)
            if li is not None and ri is not None:
                a, r, m = {}, {}, {}
                for ipe, litem in li.items():
                    ritem = ri.get(ipe, MISSING)
                    if ritem is MISSING:
                        r[ipe] = _everything(litem, items, entry=True)
                    elif litem != ritem:
                        _cmp_value(ipe, litem, ritem, items, a, r, m)
                for ipe, ritem in ri.items():
                    if ipe not in li:
                        a[ipe] = _everything(ritem, items, entry=True)
                _attach(added, pe, a, False)
                _attach(removed, pe, r, False)
                _attach(modified, pe, m, False)
                return
    modified[pe] = _LEAF


def created(new: Mapping[str, Any], schema: Schema, zero: Mapping[str, Any]) -> fieldpath.FieldSet:
    """``compare(zero, new).changed()`` in one pass over ``new``: what a create sets, compared
    with the kind's zero value (``{}`` for custom resources). Nodes absent from ``zero`` are
    members, nodes present there are not (their contents still count); a null in ``zero`` is
    present but empty."""
    return fieldpath.FieldSet(_created_map(new, schema, zero))


def _created_map(new: Mapping[str, Any], node: Schema, zero: Mapping[str, Any]) -> Node:
    out: Node = {}
    for k, v in new.items():
        sub, _ = child(node, k)
        z = zero.get(k, MISSING)
        if z is MISSING:
            out["f:" + k] = _everything(v, sub)
        elif v == z:
            continue  # equal to the zero value: neither added nor modified
        elif isinstance(v, dict) and isinstance(z, dict) and not is_atomic_map(sub):
            _attach(out, "f:" + k, _created_map(v, sub, z), False)
        elif z is None and isinstance(v, (dict, list)):
            children = _everything(v, sub)
            if children is _LEAF:
                out["f:" + k] = _LEAF
            else:
                _attach(out, "f:" + k, {e: n for e, n in children.items() if e != fieldpath.SELF}, False)
        else:
            out["f:" + k] = _LEAF
    return out


def _attach(parent: Node, pe: str, children: Node, member: bool) -> None:
    made = fieldpath.make_node(children, member)
    if made is not None:
        parent[pe] = made


def _everything(value: Any, node: Schema, *, entry: bool = False) -> Node:
    """Every path of a value present on one side only (the value's own path is a member)."""
    if isinstance(value, dict) and not is_atomic_map(node):
        out: Node = {}
        for k, v in value.items():
            sub, _ = child(node, k)
            out["f:" + k] = _everything(v, sub)
        made = fieldpath.make_node(out, True)
        assert made is not None
        return made
    if isinstance(value, list) and not entry:
        kind, keys, items = list_info(node)
        if kind != ATOMIC:
            indexed = index_items(value, kind, keys, items)
            if indexed is not None:
                out = {ipe: _everything(item, items, entry=True) for ipe, item in indexed.items()}
                made = fieldpath.make_node(out, True)
                assert made is not None
                return made
    return _LEAF
