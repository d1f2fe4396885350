"""kplane client: client-go for Python, talking to any conformant Kubernetes API server.

``Config`` says where the server is and how to authenticate (kubeconfig, in-cluster or
``Config.load()``). ``Client`` bundles the REST client, discovery, the REST mapper and the
dynamic (dict) and typed (``kplane.client.models``) clients; ``kplane.client.sync`` is its
blocking facade for scripts and REPLs. ``ListOptions`` says what to list or watch; a namespaced
resource without a namespace uses the context's, ``namespace=ALL`` spans every namespace.
"""

from kplane._util.backoff import Backoff
from kplane.client import kubeconfig
from kplane.client.config import Config, ConfigError
from kplane.client.discovery import DiscoveryClient
from kplane.client.dynamic import DynamicClient, Resource, ResourceClient
from kplane.client.exec_plugin import ExecPluginError
from kplane.client.kubeconfig import KubeconfigError
from kplane.client.mapper import NoMatchError, RESTMapper
from kplane.client.options import ALL, ListOptions
from kplane.client.rest import RESTClient
from kplane.client.retry import on_error, retry_on_conflict
from kplane.client.typed import Client, ObjectList, TypedClient
from kplane.client.watch import WatchEvent

__all__ = [
    "ALL",
    "Backoff",
    "Client",
    "Config",
    "ConfigError",
    "DiscoveryClient",
    "DynamicClient",
    "ExecPluginError",
    "KubeconfigError",
    "ListOptions",
    "NoMatchError",
    "ObjectList",
    "RESTClient",
    "RESTMapper",
    "Resource",
    "ResourceClient",
    "TypedClient",
    "WatchEvent",
    "kubeconfig",
    "on_error",
    "retry_on_conflict",
]
