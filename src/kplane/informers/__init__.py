"""Informers: client-side caches of API objects kept current by list and watch.

``Store`` is the indexed, thread-safe cache an informer fills; ``Lister`` and ``NamespaceLister``
read it. Controllers read from these caches and write through the client.
"""

from kplane.informers.listers import Lister, NamespaceLister
from kplane.informers.store import (
    NAMESPACE_INDEX,
    IndexerError,
    IndexFunc,
    Store,
    meta_namespace_key,
    namespace_index_func,
    split_meta_namespace_key,
)

__all__ = [
    "NAMESPACE_INDEX",
    "IndexFunc",
    "IndexerError",
    "Lister",
    "NamespaceLister",
    "Store",
    "meta_namespace_key",
    "namespace_index_func",
    "split_meta_namespace_key",
]
