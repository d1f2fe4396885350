"""A complete operator: a ``WebApp`` custom resource owning a Deployment, a Service and a ConfigMap.

``crd.py`` defines the resource, ``operator.py`` reconciles it (owned objects by server-side apply,
status conditions, a finalizer that cleans up) and ``python -m examples.webapp`` runs it against
the cluster of ``$KUBECONFIG``.
"""
