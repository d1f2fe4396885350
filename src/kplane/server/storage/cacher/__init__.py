"""The watch cache: a ``Storage`` decorator that serves reads and watches from memory.

``CachedStorage`` wraps a backend (``KeyedStorage``), keeps every current object and a bounded
window of recent events, and fans events out to bounded per-watcher queues (``fanout``).
"""

from kplane.server.storage.cacher.cache import CachedStorage, KeyedStorage

__all__ = ["CachedStorage", "KeyedStorage"]
