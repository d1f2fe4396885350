"""Records of the built-in resources kplane serves (Kubernetes 1.32 names, scopes and verbs)."""

from kplane.api.builtin.records import BUILTIN_RECORDS, builtin_catalog

__all__ = ["BUILTIN_RECORDS", "builtin_catalog"]
