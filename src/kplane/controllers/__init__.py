"""Built-in controllers of ``kplane serve``, each written with ``kplane.runtime``.

They reach the API server over HTTP like any other client and never import ``kplane.server``.
"""
