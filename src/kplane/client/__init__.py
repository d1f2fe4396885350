"""kplane client: client-go for Python, talking to any conformant Kubernetes API server.

``Config`` says where the server is and how to authenticate (kubeconfig, in-cluster or
``Config.from_env()``); the REST, dynamic and typed clients build on it.
"""

from kplane.client import kubeconfig
from kplane.client.config import Config, ConfigError
from kplane.client.exec_plugin import ExecPluginError
from kplane.client.kubeconfig import KubeconfigError

__all__ = ["Config", "ConfigError", "ExecPluginError", "KubeconfigError", "kubeconfig"]
