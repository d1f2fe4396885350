"""Storage: the etcd-shaped key-value model every backend implements (see ``interface``).

Backends: ``memory`` (tests), ``sqlite`` (embedded default). ``cacher`` decorates any backend and
serves lists and watches from memory.
"""

from kplane.server.storage.interface import (
    ADDED,
    DELETED,
    MODIFIED,
    STALE_READ,
    WRITER,
    Event,
    Expired,
    History,
    HistoryNotKept,
    KeyExists,
    KeyNotFound,
    ListResult,
    NoSpace,
    Object,
    PreconditionFailed,
    Preconditions,
    Revision,
    Storage,
    StorageError,
    TooLargeRevision,
    UpdateFunc,
    Watch,
    history_of,
    stamped_copy,
)

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "Event",
    "Expired",
    "History",
    "HistoryNotKept",
    "KeyExists",
    "KeyNotFound",
    "ListResult",
    "NoSpace",
    "Object",
    "PreconditionFailed",
    "Preconditions",
    "Revision",
    "STALE_READ",
    "Storage",
    "StorageError",
    "TooLargeRevision",
    "UpdateFunc",
    "WRITER",
    "Watch",
    "history_of",
    "stamped_copy",
]
