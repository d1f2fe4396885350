"""Bounded memos of the encodings of stored objects, so that reads do not re-encode them: protobuf
(``ProtobufMemo``) and the JSON items of built-in lists (``JsonLists``).

Design note. Encoding an object as protobuf in Python costs ~20 µs against ~1.5 µs for orjson's
JSON, so a list of 2,000 objects would answer several times slower in protobuf than in JSON. But
the watch cache hands out the same dict for an object until it is written again (objects in the
cache are never mutated in place), so an object's bytes can be kept beside it: the memo is keyed
by the dict's identity and holds a reference to it, so the identity cannot be reused by another
object while the entry lives. A write makes a new dict, and so a new entry; the old one ages out.
Least recently used entries are dropped past a byte budget. Upstream does the same for watch
events (``cachingObject``): encode once per serializer, serve many times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from kplane._util.lazy import lazy_module

if TYPE_CHECKING:
    from kplane.api import protobuf
else:
    protobuf = lazy_module("kplane.api.protobuf")

Object = dict[str, Any]
_BODIES = 1024


class ProtobufMemo:
    """Encodings of objects, by object identity, within a byte budget (oldest entries go first).

    Each entry keeps the object's message framed as a list item (``protobuf.item_field``), which
    both lists (concatenated) and single replies (sliced, then enveloped) are made from; the last
    1,024 single replies are kept whole too (within a quarter of the budget). Callers
    must not mutate an object after asking for its encoding (objects from storage are immutable
    by contract). Not thread-safe: used from the event loop only.
    """

    def __init__(self, budget_bytes: int = 32 * 1024 * 1024) -> None:
        self._budget = budget_bytes
        self._size = 0
        # id(obj) -> (obj, apiVersion + "/" + kind, item field, length of its tag and size prefix)
        self._entries: dict[int, tuple[Object, str, bytes, int]] = {}
        # Whole single-object replies, for objects read again and again (a controller's GETs).
        self._bodies: dict[int, tuple[Object, bytes]] = {}
        self._bodies_size = 0

    def _field(self, obj: Object, api_version: str, kind: str) -> tuple[bytes, int]:
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0] is obj and entry[1] == f"{api_version}/{kind}":
            return entry[2], entry[3]
        message = protobuf.item_message(api_version, kind, obj)
        field = protobuf.item_field(message)
        if entry is not None:
            self._size -= len(entry[2])
            del self._entries[id(obj)]
        self._entries[id(obj)] = (obj, f"{api_version}/{kind}", field, len(field) - len(message))
        self._size += len(field)
        while self._size > self._budget and self._entries:  # dicts iterate oldest first
            oldest = next(iter(self._entries))
            self._size -= len(self._entries.pop(oldest)[2])
        return field, len(field) - len(message)

    def items(self, objs: list[Object], api_version: str, kind: str) -> list[bytes]:
        """The ``items`` fields of a list of ``kind`` objects, for ``protobuf.encode_list``."""
        entries = self._entries
        tag = f"{api_version}/{kind}"
        out = []
        for obj in objs:
            entry = entries.get(id(obj))
            if entry is not None and entry[0] is obj and entry[1] == tag:
                out.append(entry[2])
            else:
                out.append(self._field(obj, api_version, kind)[0])
        return out

    def encode(self, obj: Object, api_version: str = "", kind: str = "") -> bytes:
        """A whole reply body for ``obj`` (enveloped, as ``protobuf.encode``), as its own kind or as
        ``kind`` at ``api_version`` (a view such as PartialObjectMetadata); the last few are kept."""
        body = self._bodies.get(id(obj))
        if body is not None and body[0] is obj and not kind:
            return body[1]
        if kind:
            field, prefix = self._field(obj, api_version, kind)
            return protobuf.envelope(api_version, kind, field[prefix:])
        api_version, kind = obj.get("apiVersion") or "", obj.get("kind") or ""
        field, prefix = self._field(obj, api_version, kind)  # ProtobufError for kinds without descriptors
        data = protobuf.envelope(api_version, kind, field[prefix:])
        if body is not None:  # a dead object's entry under a reused identity
            self._bodies_size -= len(self._bodies.pop(id(obj))[1])
        self._bodies[id(obj)] = (obj, data)
        self._bodies_size += len(data)
        while len(self._bodies) > _BODIES or self._bodies_size > self._budget // 4:
            self._bodies_size -= len(self._bodies.pop(next(iter(self._bodies)))[1])
        return data

    def __len__(self) -> int:
        return len(self._entries)


class JsonLists:
    """JSON bodies of lists of built-in objects, as upstream's typed lists are encoded: items carry
    no ``apiVersion``/``kind`` (custom resources, unstructured, keep theirs).

    Copying every item to drop its type on each list would cost as much as encoding the list, so
    each item's JSON is memoised under its ``resourceVersion``: a resourceVersion names one stored
    state of one object, so an entry never goes stale, it only stops being used, and it holds no
    reference to the object. A list is then the join of its items' bytes (a 2,000-item list: ~0.2 ms
    instead of ~0.5 ms once warm). Per server (resourceVersions of two servers in one process
    collide); past ``max_bytes`` it starts over. Not thread-safe: used from the event loop only.
    """

    def __init__(self, *, max_bytes: int = 16 << 20) -> None:
        self.max_bytes = max_bytes
        self._memo: dict[str, dict[str, bytes]] = {}  # apiVersion -> resourceVersion -> item JSON
        self._bytes = 0

    def encode(self, api_version: str, list_kind: str, meta: Object, items: list[Object]) -> bytes:
        """The list's JSON body (ending in a newline, as Go's json.Encoder writes it). ``items``
        are objects of ``api_version`` as stored; they are not modified."""
        memo = self._memo.setdefault(api_version, {})
        parts = []
        added = 0
        for obj in items:
            rv = obj["metadata"].get("resourceVersion")
            encoded = memo.get(rv) if rv else None
            if encoded is None:
                encoded = orjson.dumps(untyped(obj))
                if rv:
                    memo[rv] = encoded
                    added += len(encoded)
            parts.append(encoded)
        self._bytes += added
        if self._bytes > self.max_bytes:
            self._memo.clear()
            self._bytes = 0
        head = orjson.dumps({"kind": list_kind, "apiVersion": api_version, "metadata": meta})
        return head[:-1] + b',"items":[' + b",".join(parts) + b"]}\n"


def untyped(obj: Object) -> Object:
    """``obj`` without ``apiVersion`` and ``kind``: a shallow copy, ``obj`` itself is untouched."""
    item = obj.copy()
    item.pop("apiVersion", None)
    item.pop("kind", None)
    return item
