"""Informers: client-side caches of API objects kept current by list and watch.

A ``Reflector`` lists and watches one resource into a store, relisting when the server can no longer
resume the watch; ``SharedIndexInformer`` puts an indexed ``Store`` behind it and notifies event
handlers of every change; ``SharedInformerFactory`` shares one informer per resource between
consumers. ``Lister`` and ``NamespaceLister`` read the caches. Controllers read from these caches
and write through the client. Cached objects are shared: treat them as read-only.
"""

from kplane.informers.factory import FactoryOptions, SharedInformerFactory
from kplane.informers.handlers import (
    DeletedFinalStateUnknown,
    HandlerFuncs,
    HandlerRegistration,
    ResourceEventHandler,
)
from kplane.informers.informer import (
    InformerOptions,
    InformerStateError,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from kplane.informers.listers import Lister, NamespaceLister
from kplane.informers.reflector import (
    Reflector,
    ReflectorOptions,
    ReflectorStore,
    StoreWriter,
    strip_managed_fields,
)
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
    "DeletedFinalStateUnknown",
    "FactoryOptions",
    "HandlerFuncs",
    "HandlerRegistration",
    "IndexFunc",
    "IndexerError",
    "InformerOptions",
    "InformerStateError",
    "Lister",
    "NamespaceLister",
    "Reflector",
    "ReflectorOptions",
    "ReflectorStore",
    "ResourceEventHandler",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "Store",
    "StoreWriter",
    "meta_namespace_key",
    "namespace_index_func",
    "split_meta_namespace_key",
    "strip_managed_fields",
    "wait_for_cache_sync",
]
