"""Schemas of API kinds: the built-in Kubernetes definitions and a navigator over any schema.

``SchemaNode`` walks a schema (built-in or a CRD's structural schema) with ``$ref`` resolved;
``builtin`` loads the Kubernetes 1.32 definitions lazily. Everything here is read-only and pure.
"""

from kplane.api.schema.builtin import (
    KUBERNETES_VERSION,
    definition_name_for_gvk,
    definitions,
    node_for_definition,
    node_for_gvk,
)
from kplane.api.schema.node import SchemaNode

__all__ = [
    "KUBERNETES_VERSION",
    "SchemaNode",
    "definition_name_for_gvk",
    "definitions",
    "node_for_definition",
    "node_for_gvk",
]
