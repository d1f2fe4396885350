"""Field sets: the unit of ownership in server-side apply, and their ``FieldsV1`` wire form.

A field set is a set of paths into an object. A path is a tuple of *path elements*, each kept in
its serialized ``FieldsV1`` spelling (``f:<name>``, ``k:<json>``, ``v:<json>``, ``i:<n>``; see
``pathelement``, which also orders and prints them).

The set is stored as a trie of plain dicts shaped like ``FieldsV1`` itself: a child that is a
member and has no children is ``{}``; one that is a member *and* has children carries the key
``"."``. Tries are immutable once built, so operations share unchanged subtrees freely.

Wire order follows structured-merge-diff's encoder: children in path-element order
(``pathelement.element_order``), and ``"."`` written last.
Clients that re-encode through a map (kubectl ``-o json``) print ``"."`` first; both decode equally.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from kplane.api.apply import pathelement

Node = dict[str, "Node"]

SELF = "."
_EMPTY: Node = {}


# ---------------------------------------------------------------------------------------------
# Trie operations. A node's members are its children; ``_member(child)`` says whether the child
# path itself is in the set.


def _member(node: Node) -> bool:
    return not node or SELF in node


def make_node(children: Node, member: bool) -> Node | None:
    """A node from its children (no ``"."`` among them) and its own membership."""
    if not children:
        return _EMPTY if member else None
    if member:
        children[SELF] = _EMPTY
    return children


def union_nodes(a: Node, b: Node) -> Node:
    if a is b or (not b and _member(a)):
        return a
    if not a and _member(b):
        return b
    out: Node = {k: v for k, v in a.items() if k != SELF}
    for k, cb in b.items():
        if k == SELF:
            continue
        ca = out.get(k)
        out[k] = cb if ca is None else union_nodes(ca, cb)
    made = make_node(out, _member(a) or _member(b))
    assert made is not None
    return made


def _difference(a: Node, b: Node) -> Node | None:
    if a is b:
        return None
    member = _member(a) and not _member(b)
    out: Node = {}
    for k, ca in a.items():
        if k == SELF:
            continue
        cb = b.get(k)
        if cb is None:
            out[k] = ca
        else:
            d = _difference(ca, cb)
            if d is not None:
                out[k] = d
    return make_node(out, member)


def _intersection(a: Node, b: Node) -> Node | None:
    if a is b:
        return a
    member = _member(a) and _member(b)
    out: Node = {}
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    for k, cs in small.items():
        if k == SELF:
            continue
        cl = large.get(k)
        if cl is not None:
            i = _intersection(cs, cl)
            if i is not None:
                out[k] = i
    return make_node(out, member)


def _root(children: Node | None) -> Node:
    """A root node: only children, never a member itself."""
    if not children:
        return {}
    if SELF in children:
        return {k: v for k, v in children.items() if k != SELF}
    return children


class FieldSet:
    """An immutable set of field paths.

    Equality is set equality. ``FieldSet.from_fields_v1`` / ``to_fields_v1`` convert from and to
    the ``fieldsV1`` value of a managedFields entry; construction from an object is
    ``kplane.api.apply.walk.fields_of``.
    """

    __slots__ = ("_fields_v1", "_root")

    def __init__(self, root: Node | None = None) -> None:
        self._root: Node = _root(root)
        self._fields_v1: dict[str, Any] | None = None

    @classmethod
    def of_paths(cls, *paths: pathelement.Path) -> FieldSet:
        """The set containing exactly these paths (each path must be non-empty)."""
        out = FieldSet()
        for p in paths:
            out = out.union(FieldSet(_path_node(p)))
        return out

    @property
    def trie(self) -> Node:
        """The root of the trie (read-only: callers must not modify it)."""
        return self._root

    def empty(self) -> bool:
        return not self._root

    def __bool__(self) -> bool:
        return bool(self._root)

    def union(self, other: FieldSet) -> FieldSet:
        if not other._root:
            return self
        if not self._root:
            return other
        return FieldSet(_union_children(self._root, other._root))

    def difference(self, other: FieldSet) -> FieldSet:
        """``self`` without ``other``'s members; ``self`` itself when they share no top-level
        element (nothing to remove), so a manager whose fields a write did not touch keeps its
        set, and that set's encoding."""
        root = self._root
        if not other._root or not root or not any(k in root for k in other._root):
            return self
        return FieldSet(_difference_children(root, other._root))

    def intersection(self, other: FieldSet) -> FieldSet:
        if not other._root or not self._root:
            return FieldSet()
        return FieldSet(_intersection_children(self._root, other._root))

    def has(self, path: pathelement.Path) -> bool:
        """Whether ``path`` itself is a member (not merely a prefix of members)."""
        node: Node | None = self._root
        for pe in path:
            if node is None:
                return False
            node = node.get(pe)
        return node is not None and bool(path) and _member(node)

    def has_prefix(self, path: pathelement.Path) -> bool:
        """Whether some member equals ``path`` or lies below it."""
        node: Node | None = self._root
        for pe in path:
            if node is None:
                return False
            node = node.get(pe)
        return node is not None

    def paths(self) -> Iterator[pathelement.Path]:
        """Every member path, in upstream's order (parents before their children)."""
        yield from _walk(self._root, ())

    def __len__(self) -> int:
        return sum(1 for _ in self.paths())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSet) and _equal(self._root, other._root)

    def __hash__(self) -> int:
        return hash(frozenset(self.paths()))

    def __repr__(self) -> str:
        return "FieldSet(" + ", ".join(pathelement.path_string(p) for p in self.paths()) + ")"

    def to_fields_v1(self) -> dict[str, Any]:
        """The ``fieldsV1`` value: children in upstream order, ``"."`` last. Computed once per
        set and shared (read-only, like the stored objects it goes into)."""
        if self._fields_v1 is None:
            self._fields_v1 = _encode(self._root)
        return self._fields_v1

    @classmethod
    def from_fields_v1(cls, data: Any) -> FieldSet:
        """Parse a ``fieldsV1`` value. Unknown element kinds are dropped, as upstream does.

        Raises ``ValueError`` when ``data`` is not a JSON object of objects, or a ``k:``/``v:``
        element does not hold valid JSON.

        Sets are immutable, so one parsed from the same JSON text as a recent one is that one
        (a bounded memo): an entry repeated across objects (every object a controller created
        the same way) is parsed, and encoded again, once.
        """
        if not isinstance(data, Mapping):
            raise ValueError("fieldsV1 must be a JSON object")
        try:
            text = orjson.dumps(data)
        except TypeError:
            text = b""  # not JSON-encodable (then not a valid fieldsV1 either): parse to report it
        if not text or len(text) > _PARSED_MAX_LENGTH:
            return cls(_decode(data))
        hit = _parsed.get(text)
        if hit is None:
            hit = cls(_decode(data))
            if len(_parsed) >= _PARSED_SIZE:
                _parsed.clear()
            _parsed[text] = hit
        return hit


_PARSED_SIZE = 1024
_PARSED_MAX_LENGTH = 4096
_parsed: dict[bytes, FieldSet] = {}


def _union_children(a: Node, b: Node) -> Node:
    out = dict(a)
    for k, cb in b.items():
        ca = out.get(k)
        out[k] = cb if ca is None else union_nodes(ca, cb)
    return out


def _difference_children(a: Node, b: Node) -> Node:
    out: Node = {}
    for k, ca in a.items():
        cb = b.get(k)
        if cb is None:
            out[k] = ca
        else:
            d = _difference(ca, cb)
            if d is not None:
                out[k] = d
    return out


def _intersection_children(a: Node, b: Node) -> Node:
    out: Node = {}
    for k, ca in a.items():
        cb = b.get(k)
        if cb is not None:
            i = _intersection(ca, cb)
            if i is not None:
                out[k] = i
    return out


def _path_node(path: pathelement.Path) -> Node:
    node: Node = {}
    for pe in reversed(path):
        node = {pe: node}
    return node


def _walk(node: Node, prefix: pathelement.Path) -> Iterator[pathelement.Path]:
    for k in sorted((k for k in node if k != SELF), key=pathelement.element_order):
        child = node[k]
        path = (*prefix, k)
        if _member(child):
            yield path
        yield from _walk(child, path)


def _equal(a: Node, b: Node) -> bool:
    if a is b:
        return True
    if _member(a) != _member(b):
        return False
    ka = [k for k in a if k != SELF]
    if len(ka) != sum(1 for k in b if k != SELF):
        return False
    for k in ka:
        cb = b.get(k)
        if cb is None or not _equal(a[k], cb):
            return False
    return True


def _encode(node: Node) -> dict[str, Any]:
    if not node:
        return {}
    names = [k for k in node if k != SELF]
    if all(k.startswith("f:") for k in names):
        # Only field names: plain string order is element order, and much cheaper to compute.
        names.sort()
    else:
        names.sort(key=pathelement.element_order)
    out: dict[str, Any] = {k: _encode(node[k]) for k in names}
    if SELF in node and out:
        out[SELF] = {}
    return out


def _decode(data: Mapping[str, Any]) -> Node:
    out: Node = {}
    member = False
    for k, v in data.items():
        if k == SELF:
            member = True
            continue
        if not isinstance(v, Mapping):
            raise ValueError(f"fieldsV1: the value of {k!r} must be an object")
        pe = _canonical_element(k)
        if pe is None:
            continue
        child = _decode(v)
        prev = out.get(pe)
        out[pe] = child if prev is None else union_nodes(prev, child)
    if member and out:
        out[SELF] = _EMPTY
    return out


def _canonical_element(pe: str) -> str | None:
    kind = pe[:2]
    if kind == "f:":
        return pe
    try:
        if kind == "k:":
            parsed = orjson.loads(pe[2:])
            if not isinstance(parsed, dict):
                raise ValueError(f"fieldsV1: {pe!r} must hold a JSON object")
            return "k:" + pathelement.canonical_json(parsed)
        if kind == "v:":
            return "v:" + pathelement.canonical_json(orjson.loads(pe[2:]))
        if kind == "i:":
            return "i:" + str(int(pe[2:]))
    except orjson.JSONDecodeError as e:
        raise ValueError(f"fieldsV1: cannot parse path element {pe!r}: {e}") from None
    if len(pe) < 2 or pe[1] != ":":
        raise ValueError(f"fieldsV1: malformed path element {pe!r}")
    return None
