"""The watch cache's index: every live object, grouped per resource, with its keys kept sorted.

A key's bucket is its resource prefix (``/registry/<group>/<resource>/``), so listing one resource
or one namespace of it is a bisection plus a slice over that bucket's sorted keys, and a prefix
above the resource level (``/registry/``) merges the buckets under it. The index holds the stored
objects themselves: they are shared with every reader and must be treated as read-only. Nothing
here waits or locks; ``CachedStorage`` is its only writer, from the event loop.
"""

from __future__ import annotations

import bisect
import builtins
from collections.abc import Iterable

from kplane.server.storage import interface
from kplane.server.storage.cacher.fanout import RESOURCE_PREFIX


def resource_prefix(key: str) -> str:
    """The index bucket of ``key``: its first four ``/``-separated segments (``/registry/g/r/``)."""
    found = RESOURCE_PREFIX(key)  # every key of the server
    if found is not None:
        return found.group()
    end = -1
    for _ in range(4):
        nxt = key.find("/", end + 1)
        if nxt < 0:
            break
        end = nxt
    return key[: end + 1]


def key_range(keys: list[str], prefix: str, start_after: str) -> tuple[int, int]:
    """``keys[lo:hi]`` are the sorted ``keys`` under ``prefix`` that come after ``start_after``."""
    lo = bisect.bisect_left(keys, prefix)
    if start_after >= prefix:
        lo = max(lo, bisect.bisect_right(keys, start_after))
    if not prefix:
        return lo, len(keys)
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return lo, max(lo, bisect.bisect_left(keys, end, lo))


class Bucket:
    """Live objects of one resource; ``keys`` is sorted and holds exactly the keys of ``objects``."""

    __slots__ = ("keys", "objects")

    def __init__(self) -> None:
        self.objects: dict[str, interface.Object] = {}
        self.keys: builtins.list[str] = []

    def put(self, key: str, obj: interface.Object) -> None:
        if key not in self.objects:
            keys = self.keys
            if not keys or key > keys[-1]:
                keys.append(key)
            else:
                bisect.insort(keys, key)
        self.objects[key] = obj

    def remove(self, key: str) -> None:
        if self.objects.pop(key, None) is not None:
            del self.keys[bisect.bisect_left(self.keys, key)]


Buckets = dict[str, Bucket]
"""Buckets by resource prefix; a bucket is dropped when its last object is removed."""


def build(pairs: Iterable[tuple[str, interface.Object]]) -> Buckets:
    """Fresh buckets holding every ``(key, object)`` of a snapshot."""
    buckets: Buckets = {}
    for key, obj in pairs:
        name = resource_prefix(key)
        bucket = buckets.get(name)
        if bucket is None:
            bucket = buckets[name] = Bucket()
        bucket.put(key, obj)
    return buckets


def keys_objects(buckets: Buckets, prefix: str) -> tuple[builtins.list[str], dict[str, interface.Object]]:
    """Sorted keys (a superset of those under ``prefix``) and their objects. Shared with the index
    when one bucket answers: read them, never modify them."""
    if prefix.count("/") >= 4:
        bucket = buckets.get(resource_prefix(prefix))
        return (bucket.keys, bucket.objects) if bucket is not None else ([], {})
    found = [b for name, b in buckets.items() if name.startswith(prefix)]
    if len(found) == 1:
        return found[0].keys, found[0].objects
    objects: dict[str, interface.Object] = {}
    for b in found:
        objects.update(b.objects)
    return sorted(objects), objects


def page(buckets: Buckets, prefix: str, start_after: str, limit: int, revision: int) -> interface.ListResult:
    """The objects under ``prefix`` after ``start_after`` in key order, at most ``limit`` of them
    (0: all), as a ``ListResult`` at ``revision`` (the revision the index is at)."""
    keys, objects = keys_objects(buckets, prefix)
    lo, hi = key_range(keys, prefix, start_after)
    remaining = 0
    if limit and hi - lo > limit:
        remaining = hi - lo - limit
        hi = lo + limit
    items = [objects[k] for k in keys[lo:hi]]
    return interface.ListResult(
        items=items,
        revision=revision,
        more=remaining > 0,
        remaining=remaining,
        last_key=keys[hi - 1] if remaining else "",
    )
