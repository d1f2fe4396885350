"""Server-side apply as pure functions: field sets, managedFields, merging and conflicts.

``apply`` performs an apply patch; ``update_managed_fields`` records ownership for every other
write; ``fields_of`` computes the fields an object sets; ``FieldSet`` converts to and from the
``fieldsV1`` wire form. Everything is driven by a ``kplane.api.schema.SchemaNode`` (list and map
types), or by no schema at all. Semantics follow structured-merge-diff and apiserver's
``managedfields`` package; nothing here does I/O or reads the clock.
"""

from kplane.api.apply.conflict import ApplyConflict, Conflict, format_conflicts
from kplane.api.apply.fieldmanager import (
    BEFORE_FIRST_APPLY,
    LAST_APPLIED_ANNOTATION,
    apply,
    default_manager,
    update_managed_fields,
)
from kplane.api.apply.fieldpath import FieldSet
from kplane.api.apply.managed import Entry
from kplane.api.apply.pathelement import Path, path_string
from kplane.api.apply.walk import Comparison, compare, fields_of

__all__ = [
    "BEFORE_FIRST_APPLY",
    "LAST_APPLIED_ANNOTATION",
    "ApplyConflict",
    "Comparison",
    "Conflict",
    "Entry",
    "FieldSet",
    "Path",
    "apply",
    "compare",
    "default_manager",
    "fields_of",
    "format_conflicts",
    "path_string",
    "update_managed_fields",
]
