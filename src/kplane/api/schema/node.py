"""A read-only navigator over one JSON/OpenAPI schema, resolving ``$ref`` on the way down.

Strategic merge patch, pruning and printing walk an object and its schema side by side; this module
gives them one small vocabulary for the schema side: ``property``, ``items``, ``additional`` and the
Kubernetes list/patch extensions. Extensions are read from the referencing schema first and then
from the schema its ``$ref`` points at, because the Kubernetes definitions put
``x-kubernetes-patch-*`` next to the ``$ref`` of a field
(``{"$ref": "...DeploymentStrategy", "x-kubernetes-patch-strategy": "retainKeys"}``).

A node caches the children it hands out, so walking the same path twice from a cached root
(see ``kplane.api.schema.builtin``) allocates nothing. Nodes never modify the schema they wrap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]

_MISSING = object()


class SchemaNode:
    """One schema plus the definitions its ``$ref`` values point into.

    ``raw`` is the schema as written at this position (it may be just a ``$ref`` with extensions);
    ``resolved`` is the schema after following ``$ref`` (the same dict when there is none).
    Thread-safe for readers: the child cache only ever gains equal entries.
    """

    __slots__ = ("_children", "defs", "raw", "resolved")

    def __init__(self, schema: Schema, defs: Mapping[str, Schema] | None = None) -> None:
        self.raw = schema
        self.defs: Mapping[str, Schema] = defs or {}
        self.resolved = _resolve(schema, self.defs)
        self._children: dict[str, SchemaNode | None] = {}

    def __repr__(self) -> str:
        ref = self.raw.get("$ref")
        return f"SchemaNode({ref!r})" if ref else f"SchemaNode(type={self.resolved.get('type')!r})"

    def _child(self, slot: str, make: Any) -> SchemaNode | None:
        node = self._children.get(slot, _MISSING)
        if node is _MISSING:
            sub = make()
            node = SchemaNode(sub, self.defs) if isinstance(sub, Mapping) else None
            self._children[slot] = node
        return node  # type: ignore[return-value]

    def items(self) -> SchemaNode | None:
        """The schema of the elements of an array schema, or None."""
        return self._child("[]", lambda: self.resolved.get("items"))

    def additional(self) -> SchemaNode | None:
        """The schema of the values of a map schema (``additionalProperties`` as a schema), or None."""
        return self._child("*", lambda: self.resolved.get("additionalProperties"))

    def field(self, name: str) -> SchemaNode | None:
        """``property(name)``, falling back to ``additional()`` for maps with free-form keys."""
        node = self.property(name)
        return node if node is not None else self.additional()

    def _ext(self, key: str) -> Any:
        value = self.raw.get(key)
        if value is None and self.resolved is not self.raw:
            value = self.resolved.get(key)
        return value

    @property
    def types(self) -> tuple[str, ...]:
        """The JSON types this schema allows, ``null`` excluded (``()`` when it does not say)."""
        t = self.resolved.get("type")
        if t is None:
            return ()
        if isinstance(t, str):
            return () if t == "null" else (t,)
        return tuple(x for x in t if x != "null")

    @property
    def merge_key(self) -> str | None:
        """``x-kubernetes-patch-merge-key``: the element field that identifies list entries in SMP."""
        value = self._ext("x-kubernetes-patch-merge-key")
        return value if isinstance(value, str) else None

    @property
    def patch_strategy(self) -> str | None:
        """``x-kubernetes-patch-strategy`` as written, e.g. ``merge``, ``merge,retainKeys``, ``replace``."""
        value = self._ext("x-kubernetes-patch-strategy")
        return value if isinstance(value, str) else None

    @property
    def patch_strategies(self) -> frozenset[str]:
        """The comma-separated parts of ``patch_strategy`` (empty when there is none)."""
        value = self.patch_strategy
        return frozenset(p.strip() for p in value.split(",")) if value else frozenset()

    @property
    def list_type(self) -> str | None:
        """``x-kubernetes-list-type``: ``atomic``, ``set`` or ``map``."""
        value = self._ext("x-kubernetes-list-type")
        return value if isinstance(value, str) else None

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        """``x-kubernetes-list-map-keys`` of a ``map`` list (``()`` when absent)."""
        value = self._ext("x-kubernetes-list-map-keys")
        return tuple(value) if isinstance(value, list) else ()

    @property
    def map_type(self) -> str | None:
        """``x-kubernetes-map-type``: ``atomic`` or ``granular``."""
        value = self._ext("x-kubernetes-map-type")
        return value if isinstance(value, str) else None

    # Defined last: inside the class body the name ``property`` would shadow the builtin decorator.
    def property(self, name: str) -> SchemaNode | None:
        """The schema of property ``name`` of an object schema, or None if it declares none."""
        props = self.resolved.get("properties")
        if not props or name not in props:
            return None
        return self._child("p:" + name, lambda: props[name])


def _resolve(schema: Schema, defs: Mapping[str, Schema]) -> Schema:
    """Follow ``$ref`` chains (``#/$defs/<name>`` or ``#/definitions/<name>``) to a concrete schema.

    An unknown reference resolves to the referencing schema itself, so navigation degrades to
    "nothing known" instead of failing.
    """
    seen = 0
    while True:
        ref = schema.get("$ref")
        if not isinstance(ref, str) or seen > 32:
            return schema
        target = defs.get(ref.rpartition("/")[2])
        if target is None:
            return schema
        schema = target
        seen += 1
