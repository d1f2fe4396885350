"""kplane runtime: controller-runtime and kubebuilder for Python.

Sits above the client stack (``kplane.client``, ``kplane.informers``, ``kplane.workqueue``) and below
the built-in controllers; it never imports ``kplane.server``: it reaches an API server over HTTP.
"""
