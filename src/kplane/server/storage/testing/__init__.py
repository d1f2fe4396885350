"""Test support for storage: the backend-agnostic contract suite (``contract``) that every
``Storage`` implementation, including the cache, must pass, and the objects, keys and bounded
waits its checks share (``fixtures``), which single-backend tests use too."""

from kplane.server.storage.testing import contract, fixtures

__all__ = ["contract", "fixtures"]
