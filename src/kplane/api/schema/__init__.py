"""Schemas of API kinds: the built-in Kubernetes definitions and a navigator over any schema.

``SchemaNode`` walks a schema (built-in or a CRD's structural schema) with ``$ref`` resolved;
``builtin`` loads the Kubernetes 1.32 definitions lazily. ``compile_schema``/``compiled_for_gvk``
turn a schema into a ``CompiledSchema`` that prunes, defaults and validates an object in one walk.
Everything here is read-only and pure.
"""

from kplane.api.schema.builtin import (
    KUBERNETES_VERSION,
    definition_name_for_gvk,
    definitions,
    node_for_definition,
    node_for_gvk,
    zero_object_for_gvk,
)
from kplane.api.schema.compile import (
    CompiledSchema,
    Result,
    compile_schema,
    compiled_for_gvk,
    strict_decoding_message,
)
from kplane.api.schema.formats import SchemaError
from kplane.api.schema.node import SchemaNode

__all__ = [
    "KUBERNETES_VERSION",
    "CompiledSchema",
    "Result",
    "SchemaError",
    "SchemaNode",
    "compile_schema",
    "compiled_for_gvk",
    "definition_name_for_gvk",
    "definitions",
    "node_for_definition",
    "node_for_gvk",
    "strict_decoding_message",
    "zero_object_for_gvk",
]
