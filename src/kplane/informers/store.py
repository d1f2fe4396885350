"""The informer cache: a thread-safe keyed store of objects with secondary indexes.

Semantics are client-go's ``ThreadSafeStore`` + ``Indexer`` (``tools/cache``): objects are keyed by
``meta_namespace_key`` ("namespace/name", or "name" for cluster-scoped objects); each index is a
function ``obj -> list[str]`` and maps every value it returns to the set of keys of the objects
that produced it. The built-in ``"namespace"`` index maps a namespace to its objects' keys.

Every write updates the indexes under the same lock as the items, so a reader never sees an index
that disagrees with the items: replacing an object removes its old index values and adds the new
ones. Objects are stored and returned as given, never copied: callers must treat them as read-only
(mutating one would silently corrupt the indexes).

Objects may be JSON-shaped dicts (``{"metadata": {"namespace": ..., "name": ...}}``) or typed
models with a ``metadata`` attribute; ``object_meta`` reads either.

The lock is a ``threading.Lock``: uncontended it costs well under a microsecond, and it keeps the
store safe for code that reads it from a worker thread.
"""

from __future__ import annotations

import builtins
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

O = TypeVar("O")  # noqa: E741 - the object type, as in client-go's generics.

IndexFunc = Callable[[Any], list[str]]
"""Computes the values under which an object is indexed (may be empty)."""

KeyFunc = Callable[[Any], str]
"""Computes an object's store key."""

NAMESPACE_INDEX = "namespace"


class IndexerError(Exception):
    """An index operation named an index that does not exist, or added one that already does."""


def object_meta(obj: Any, field: str) -> Any:
    """``obj.metadata.<field>`` for a dict or a typed object; ``None`` when absent.

    ``field`` is the JSON name (``resourceVersion``); a typed model's attribute is its snake_case
    spelling (``resource_version``), as the generated models name them.
    Decoded JSON (exact ``dict``s) is tested first: ``isinstance(x, Mapping)`` is an ABC check
    that costs a Python-level ``__instancecheck__``, and an informer reads several fields of every
    event's object."""
    if type(obj) is dict or isinstance(obj, Mapping):
        meta = obj.get("metadata")
        return meta.get(field) if type(meta) is dict or isinstance(meta, Mapping) else None
    meta = getattr(obj, "metadata", None)
    if meta is None:
        return None
    if isinstance(meta, Mapping):
        return meta.get(field)
    attribute = _ATTRIBUTES.get(field)
    if attribute is None:
        attribute = _ATTRIBUTES[field] = re.sub(r"(?<!^)([A-Z])", r"_\1", field).lower()
    return getattr(meta, attribute, None)


_ATTRIBUTES: dict[str, str] = {}
"""JSON field name → typed model attribute name (a handful of metadata fields: bounded)."""


def meta_namespace_key(obj: Any) -> str:
    """``"namespace/name"``, or ``"name"`` when the object has no namespace (client-go's key func).

    A plain string is taken to be a key already, as client-go does for explicit keys.
    """
    if type(obj) is dict:  # decoded JSON: read its metadata once
        meta = obj.get("metadata")
        if type(meta) is dict:
            name, namespace = meta.get("name"), meta.get("namespace")
            if not name:
                raise ValueError("object has no metadata.name")
            return f"{namespace}/{name}" if namespace else str(name)
    if isinstance(obj, str):
        return obj
    name = object_meta(obj, "name")
    if not name:
        raise ValueError("object has no metadata.name")
    namespace = object_meta(obj, "namespace")
    return f"{namespace}/{name}" if namespace else str(name)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """The inverse of ``meta_namespace_key``: ``(namespace, name)``, namespace ``""`` if none."""
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f'unexpected key format: "{key}"')


def namespace_index_func(obj: Any) -> list[str]:
    """The built-in ``"namespace"`` index: ``[namespace]`` (``[""]`` for cluster-scoped objects)."""
    return [object_meta(obj, "namespace") or ""]


class Store(Generic[O]):
    """A keyed, indexed, thread-safe object cache (client-go ``cache.Indexer``).

    ``indexers`` adds custom indexes beside the built-in ``"namespace"`` one. All methods are
    atomic with respect to each other; lists are snapshots (new lists, shared objects).
    """

    def __init__(
        self,
        *,
        indexers: Mapping[str, IndexFunc] | None = None,
        key_func: KeyFunc = meta_namespace_key,
    ) -> None:
        self._lock = threading.Lock()
        self._key_func = key_func
        self._ns_keyed = key_func is meta_namespace_key
        self._items: dict[str, O] = {}
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: namespace_index_func}
        self._indices: dict[str, dict[str, set[str]]] = {NAMESPACE_INDEX: {}}
        self._resource_version = ""
        if indexers:
            self.add_indexers(indexers)

    def key(self, obj: O) -> str:
        """The store key of ``obj``."""
        return self._key_func(obj)

    # Writes.

    def add(self, obj: O) -> None:
        """Insert ``obj``, or replace the object with the same key (same as ``update``)."""
        self.put(obj)

    update = add

    def put(self, obj: O) -> O | None:
        """``add``, returning the object ``obj`` replaced (``None`` if its key was new): an
        informer's read-then-write of one event in one step."""
        key = self._key_func(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._reindex(key, old, obj)
            return old

    def delete(self, obj: O) -> None:
        """Remove the object with ``obj``'s key and its index entries; a no-op if absent."""
        self.delete_key(self._key_func(obj))

    def delete_key(self, key: str) -> None:
        """Remove the object stored under ``key``; a no-op if absent."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._reindex(key, old, None)

    def replace(self, items: Iterable[O], resource_version: str = "") -> None:
        """Atomically make ``items`` the whole content and remember ``resource_version``."""
        new_items = {self._key_func(obj): obj for obj in items}
        with self._lock:
            self._items = new_items
            self._resource_version = resource_version
            self._rebuild_indices()

    # Reads.

    def get(self, obj: O) -> O | None:
        """The stored object with ``obj``'s key, or ``None``."""
        return self.get_by_key(self._key_func(obj))

    def get_by_key(self, key: str) -> O | None:
        """The object stored under ``key``, or ``None``."""
        with self._lock:
            return self._items.get(key)

    def list(self) -> builtins.list[O]:
        """Every stored object, in no particular order."""
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        """Every key, in no particular order."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    @property
    def resource_version(self) -> str:
        """The resource version passed to the last ``replace`` (``""`` before any)."""
        return self._resource_version

    # Indexes.

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes; allowed while the store holds objects (they are indexed at once).

        Raises ``IndexerError`` if a name is already taken; nothing is added then.
        """
        with self._lock:
            taken = sorted(set(indexers) & set(self._indexers))
            if taken:
                raise IndexerError(f"indexer conflict: {taken}")
            for name, fn in indexers.items():
                self._indexers[name] = fn
                index: dict[str, set[str]] = {}
                for key, obj in self._items.items():
                    for value in fn(obj):
                        index.setdefault(value, set()).add(key)
                self._indices[name] = index

    def index(self, name: str, obj: O) -> builtins.list[O]:
        """Objects sharing at least one of ``obj``'s values in index ``name`` (each once)."""
        with self._lock:
            fn = self._indexer(name)
            index = self._indices[name]
            keys: set[str] = set()
            for value in fn(obj):
                keys |= index.get(value, set())
            return [self._items[k] for k in keys]

    def by_index(self, name: str, value: str) -> builtins.list[O]:
        """Objects whose values in index ``name`` include ``value``."""
        with self._lock:
            self._indexer(name)
            return [self._items[k] for k in self._indices[name].get(value, ())]

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        """Keys of the objects whose values in index ``name`` include ``value``."""
        with self._lock:
            self._indexer(name)
            return list(self._indices[name].get(value, ()))

    def list_index_values(self, name: str) -> builtins.list[str]:
        """Every value that index ``name`` currently holds at least one key for."""
        with self._lock:
            self._indexer(name)
            return list(self._indices[name])

    def indexers(self) -> dict[str, IndexFunc]:
        """A copy of the index functions by name, including ``"namespace"``."""
        with self._lock:
            return dict(self._indexers)

    # Internals; the caller holds the lock.

    def _indexer(self, name: str) -> IndexFunc:
        fn = self._indexers.get(name)
        if fn is None:
            raise IndexerError(f"Index with name {name} does not exist")
        return fn

    def _reindex(self, key: str, old: O | None, new: O | None) -> None:
        for name, fn in self._indexers.items():
            if fn is namespace_index_func and self._ns_keyed and old is not None and new is not None:
                continue  # the namespace is part of the default key: a replacement keeps it
            old_values = fn(old) if old is not None else []
            new_values = fn(new) if new is not None else []
            if old_values == new_values:
                continue
            index = self._indices[name]
            for value in old_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)

    def _rebuild_indices(self) -> None:
        for name, fn in self._indexers.items():
            index: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)
            self._indices[name] = index
