"""Go's JSON decode errors for built-in kinds, derived from their schemas.

Upstream decodes every request body (and every patched object) into the kind's Go struct before any
validation runs, so a value of the wrong JSON type is refused by ``encoding/json`` (the
``sigs.k8s.io/json`` fork), not by a schema::

    json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32

The struct is the innermost Go struct holding the field, the path the JSON names of the struct
fields from the root (array indices and map keys are not part of it), the type the Go type of the
field. Go names come from the definitions: ``io.k8s.api.core.v1.PodSpec`` is ``v1.PodSpec``,
``format: int32`` is ``int32``, arrays ``[]T``, maps ``map[string]T``; named non-struct types
(``v1.Protocol``, ``v1.ResourceList``), which the definitions cannot tell, come from the Go
sources (``_go_types.NAMED``). Types with their own ``UnmarshalJSON`` answer as theirs do:
``metav1.Time`` decodes a string (then parsed by Go's ``time.Parse``: ``timestamps.parse_error``)
and ``IntOrString`` a string or an int32, whose type errors get the field's context (``... of type
string``); a ``Quantity`` that does not parse gives
``resource.ParseQuantity``'s error alone; raw extensions and the like are not checked.

Go keeps decoding after a type error and reports the first one; so does ``decode_error``, in the
object's key order.
"""

from __future__ import annotations

import re
from typing import Any

from kplane.api.schema import timestamps
from kplane.api.schema._go_types import NAMED
from kplane.api.schema.node import SchemaNode

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY_FORMAT = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_QUANTITY_SUFFIX = re.compile(r"^(|[numkMGTPE]|[KMGTPE]i|[eE][-+]?[0-9]+)$")
_OWN_UNMARSHAL = frozenset(
    {
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Duration",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
    }
)
_TIMES = frozenset({_META + "Time", _META + "MicroTime"})
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def decode_error(
    root: SchemaNode, kind: str, obj: dict[str, Any], *, touched: dict[str, Any] | None = None
) -> str | None:
    """The error upstream's typed decode of ``obj`` (a ``kind``) gives, or None when it decodes.

    ``touched``: ``obj`` is an object that decodes with a JSON merge patch ``touched`` applied, so
    only the members the patch set can fail; the walk skips the others (same answer, without
    walking a whole pod for a patch of its status)."""
    if touched is not None:
        return _touched_fields(root, kind, "", obj, touched)
    return _fields(root, kind, "", obj)


def _touched_fields(
    node: SchemaNode, struct: str, path: str, obj: dict[str, Any], touched: dict[str, Any]
) -> str | None:
    """``_fields`` for the members of ``obj`` that ``touched`` names: a member whose patch is an
    object merged into a struct is walked the same way, any other is checked whole."""
    named = NAMED.get(_definition(node) or "", {})
    for key, value in obj.items():
        if key not in touched:
            continue
        child = node.property(key)
        if child is None:
            continue
        here = f"{path}.{key}" if path else key
        patch = touched[key]
        definition = _definition(child)
        if (
            isinstance(patch, dict)
            and isinstance(value, dict)
            and definition not in _OWN_UNMARSHAL
            and definition not in _TIMES
            and definition not in (_INT_OR_STRING, _QUANTITY)
            and child.types[:1] == ("object",)
            and child.resolved.get("properties")
        ):
            type_name = definition.rpartition(".")[2] if definition else struct
            found = _touched_fields(child, type_name, here, value, patch)
        else:
            found = _value(child, struct, here, value, named.get(key))
        if found is not None:
            return found
    return None


def _definition(node: SchemaNode) -> str | None:
    ref = node.raw.get("$ref")
    return ref.rpartition("/")[2] if isinstance(ref, str) else None


def _go_type(node: SchemaNode) -> str:
    name = _definition(node)
    if name is not None:
        package, _, type_name = name.rpartition(".")
        return f"{package.rpartition('.')[2]}.{type_name}"
    types = node.types
    kind = types[0] if types else ""
    fmt = node.resolved.get("format")
    if kind == "integer":
        return fmt if fmt in _INT_RANGE else "int64"
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "string":
        return "[]uint8" if fmt == "byte" else "string"
    if kind == "array":
        items = node.items()
        return "[]" + (_go_type(items) if items is not None else "interface {}")
    if kind == "object":
        values = node.additional()
        return "map[string]" + (_go_type(values) if values is not None else "interface {}")
    return "interface {}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def _fields(node: SchemaNode, struct: str, path: str, obj: dict[str, Any]) -> str | None:
    named = NAMED.get(_definition(node) or "", {})
    for key, value in obj.items():
        child = node.property(key)
        if child is None:
            continue  # unknown fields are fieldValidation's business
        found = _value(child, struct, f"{path}.{key}" if path else key, value, named.get(key))
        if found is not None:
            return found
    return None


def _value(node: SchemaNode, struct: str, path: str, value: Any, go_type: str | None = None) -> str | None:
    """The first error decoding ``value`` into the field of schema ``node`` (Go type ``go_type``
    when it is a named type the schema cannot tell)."""
    if value is None:
        return None  # null decodes to the zero value of any type
    definition = _definition(node)
    if definition in _OWN_UNMARSHAL:
        return None
    into = f"Go struct field {struct}.{path}" if struct else "Go value"
    if definition in _TIMES or (definition == _INT_OR_STRING and not isinstance(value, str)):
        # Their UnmarshalJSON decode a string (an int32) with json.Unmarshal; the outer decoder
        # adds the field's context to the inner error.
        go_type = "int32" if definition == _INT_OR_STRING else "string"
        if isinstance(value, str):
            return (
                timestamps.parse_error(value, micro=definition.endswith("MicroTime"))
                if go_type == "string"
                else None
            )
        if go_type == "int32" and _fits(value, go_type):
            return None
        number = _json_kind(value) == "number" and go_type == "int32"  # Go shows a non-int's text
        shown = f"number {value}" if number else _json_kind(value)
        return f"json: cannot unmarshal {shown} into {into} of type {go_type}"
    if definition == _INT_OR_STRING:
        return None
    if definition == _QUANTITY:
        return _quantity_error(value)
    types = node.types
    if not types:
        return None
    expected = types[0]
    got = _json_kind(value)
    if expected == "object" and got == "object":
        if node.resolved.get("properties"):
            type_name = definition.rpartition(".")[2] if definition else struct
            return _fields(node, type_name, path, value)
        values = node.additional()
        if values is None:
            return None
        for item in value.values():
            found = _value(values, struct, path, item)
            if found is not None:
                return found
        return None
    if expected == "array" and got == "array":
        items = node.items()
        if items is None:
            return None
        element = go_type[2:] if go_type and go_type.startswith("[]") else None
        for item in value:
            found = _value(items, struct, path, item, element)
            if found is not None:
                return found
        return None
    shown = got
    if expected == "integer" and got == "number":
        if _fits(value, _go_type(node)):
            return None
        shown = f"number {value}"
    elif (expected, got) in (("number", "number"), ("boolean", "bool"), ("string", "string")):
        return None
    return f"json: cannot unmarshal {shown} into {into} of type {go_type or _go_type(node)}"


def _fits(value: Any, go_type: str) -> bool:
    """Whether a JSON number decodes into the Go integer type (no fraction, in range)."""
    low, high = _INT_RANGE.get(go_type, _INT_RANGE["int64"])
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _quantity_error(value: Any) -> str | None:
    """``Quantity.UnmarshalJSON``: a string (quotes dropped) or a bare number, parsed."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        text = "x"  # true, [...], {...} never parse
    else:
        text = value.strip() if isinstance(value, str) else str(value)
    found = _QUANTITY_FORMAT.match(text)
    if not found:
        return "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    if not _QUANTITY_SUFFIX.match(found.group(2)):
        return "unable to parse quantity's suffix"
    return None
