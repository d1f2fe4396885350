"""Storage: the etcd-shaped key-value model every backend implements (see ``interface``).

Backends: ``memory`` (tests), ``sqlite`` (embedded default). ``cacher`` decorates any backend and
serves lists and watches from memory.
"""

from kplane.server.storage.interface import (
    ADDED,
    DELETED,
    MODIFIED,
    STALE_READ,
    Event,
    Expired,
    KeyExists,
    KeyNotFound,
    ListResult,
    NoSpace,
    Object,
    PreconditionFailed,
    Preconditions,
    Storage,
    StorageError,
    TooLargeRevision,
    UpdateFunc,
    Watch,
    stamped_copy,
)

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "Event",
    "Expired",
    "KeyExists",
    "KeyNotFound",
    "ListResult",
    "NoSpace",
    "Object",
    "PreconditionFailed",
    "Preconditions",
    "STALE_READ",
    "Storage",
    "StorageError",
    "TooLargeRevision",
    "UpdateFunc",
    "Watch",
    "stamped_copy",
]
