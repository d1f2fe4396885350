"""The etcd v3 backend: several kplane servers share one etcd cluster, as kube-apiservers do.

``EtcdStorage`` implements ``kplane.server.storage.Storage`` over ``EtcdClient`` (gRPC, hand-coded
messages in ``wire``); see ``backend`` for the key layout and transactions, ``watch`` for streams.
"""

from kplane.server.storage.etcd.backend import EtcdStorage
from kplane.server.storage.etcd.client import EtcdClient, TLSFiles, parse_endpoints

__all__ = ["EtcdClient", "EtcdStorage", "TLSFiles", "parse_endpoints"]
