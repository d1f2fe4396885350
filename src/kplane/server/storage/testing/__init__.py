"""Test support for storage: the backend-agnostic contract suite (``contract``) that every
``Storage`` implementation, including the cache, must pass."""

from kplane.server.storage.testing import contract

__all__ = ["contract"]
