"""kplane: a Kubernetes control plane and operator toolkit in Python.

Three products share one API model: ``kplane.server`` (a Kubernetes-compatible API server),
``kplane.client`` (client-go for Python) and, on top of the client, informers and work queues.
"""

__version__ = "0.1.0"
