"""Python types → structural OpenAPI v3 schemas, as controller-gen turns Go types into CRD schemas.

The mapping (reference/controllers.md §7.3, in Python terms):

* ``str`` → string; ``bool`` → boolean; ``int`` → integer; ``bytes`` → string/byte;
  ``datetime.datetime`` → string/date-time, ``datetime.date`` → string/date; ``float`` is refused
  unless ``allow_dangerous_types`` (then number), as controller-gen refuses float32/64;
* ``list[T]``, ``tuple[T, ...]`` → array of T; ``dict[str, T]`` → object with additionalProperties;
* ``T | None`` → T (the field is optional); ``int | str`` → int-or-string; ``Literal[...]`` and
  ``enum.Enum`` subclasses → ``enum``; ``Any`` and ``dict[str, Any]`` → preserve unknown fields;
* a msgspec Struct → object with ``properties`` under their wire names and a sorted ``required``
  list; kplane's ``ObjectMeta`` → just ``type: object`` (the API server owns metadata);
* descriptions: the class docstring, and for a field its attribute docstring (the string literal
  after the field, read from the source), ``Description(...)`` or ``msgspec.Meta(description=)``.

A field is required when it has no default and is not marked ``Optional``; ``Required`` forces it.
A scalar default (``replicas: int = 1``) becomes the schema's ``default``, so the API server and
the Python type agree on the value of an omitted field. Markers: ``kplane.runtime.markers``.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import enum
import inspect
import itertools
import textwrap
import types
import typing
from typing import Any

import msgspec

from kplane.runtime import markers

Schema = dict[str, Any]


class SchemaError(TypeError):
    """A type that has no CRD schema (recursive, a float without permission, an odd union...)."""


@dataclasses.dataclass(frozen=True)
class Options:
    """``allow_dangerous_types``: floats become ``number``; ``max_description_length``: None keeps
    descriptions whole, 0 drops them, N truncates (controller-gen's ``crd:maxDescLen``)."""

    allow_dangerous_types: bool = False
    max_description_length: int | None = None


DEFAULT_OPTIONS = Options()


def root_schema(cls: type[Any], options: Options = DEFAULT_OPTIONS) -> Schema:
    """The ``openAPIV3Schema`` of a root type: apiVersion, kind, metadata and the class's fields."""
    schema = _Walker(options).struct(cls, root=True)
    return schema


def schema_of(tp: Any, options: Options = DEFAULT_OPTIONS) -> Schema:
    """The schema of any supported type (see the module docstring)."""
    schema, _ = _Walker(options).field(tp)
    return schema


_API_VERSION_DOC = (
    "The versioned schema this object is written in (group/version). "
    "Servers convert known versions and may refuse unknown ones."
)
_KIND_DOC = (
    "The REST resource type this object represents; servers may infer it from the endpoint. "
    "In CamelCase; cannot be updated."
)


class _Walker:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.stack: list[type[Any]] = []

    def describe(self, schema: Schema, doc: str | None) -> None:
        limit = self.options.max_description_length
        if not doc or limit == 0:
            return
        text = inspect.cleandoc(doc)
        schema["description"] = text if limit is None else text[:limit]

    def field(self, tp: Any) -> tuple[Schema, bool | None]:
        """(schema, presence): presence is True/False when a Required/Optional marker decides it."""
        presence: bool | None = None
        extra: list[Any] = []
        while typing.get_origin(tp) is typing.Annotated:
            tp, *meta = typing.get_args(tp)
            extra = [*meta, *extra]
        optional = False
        args = typing.get_args(tp)
        if _is_union(tp) and type(None) in args:
            optional = True
            rest = tuple(a for a in args if a is not type(None))
            tp = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
            inner, presence = self.field(tp)
            schema = inner
        else:
            schema = self.plain(tp)
        for meta in extra:
            if isinstance(meta, markers._Presence):
                presence = meta.required
            elif isinstance(meta, markers.Items):
                for marker in meta.markers:
                    marker.apply(schema.setdefault("items", {}))
            elif isinstance(meta, markers.Marker):
                marker_schema = schema
                meta.apply(marker_schema)
            elif isinstance(meta, msgspec.Meta):
                _apply_meta(meta, schema)
        if optional and presence is None:
            presence = False
        return schema, presence

    def plain(self, tp: Any) -> Schema:
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if tp is Any or tp is object:
            return {"x-kubernetes-preserve-unknown-fields": True}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            if not self.options.allow_dangerous_types:
                raise SchemaError(
                    "float has no exact CRD type (number loses precision across clients); "
                    "use int or str, or allow dangerous types"
                )
            return {"type": "number"}
        if tp is str:
            return {"type": "string"}
        if tp is bytes:
            return {"type": "string", "format": "byte"}
        if tp is datetime.datetime:
            return {"type": "string", "format": "date-time"}
        if tp is datetime.date:
            return {"type": "string", "format": "date"}
        if origin is typing.Literal:
            return {**_scalar_type(args), "enum": list(args)}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            values = [m.value for m in tp]
            schema = {**_scalar_type(tuple(values)), "enum": values}
            self.describe(schema, tp.__dict__.get("__doc__"))
            return schema
        if _is_union(tp):
            if set(args) == {int, str}:
                return {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                }
            raise SchemaError(f"unions other than int | str have no structural schema: {tp!r}")
        if origin in (list, tuple, set, frozenset) or origin in _ABC_SEQUENCES:
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                raise SchemaError(f"fixed-length tuples have no CRD schema: {tp!r}")
            item, _ = self.field(args[0]) if args else ({"x-kubernetes-preserve-unknown-fields": True}, None)
            return {"type": "array", "items": item}
        if origin is dict or tp is dict:
            if args and args[0] is not str:
                raise SchemaError(f"map keys must be strings: {tp!r}")
            if not args or args[1] is Any:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            value, _ = self.field(args[1])
            return {"type": "object", "additionalProperties": value}
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            if tp.__name__ == "ObjectMeta" and tp.__module__.startswith("kplane.client.models"):
                return {"type": "object"}
            return self.struct(tp, root=False)
        if isinstance(tp, str):
            raise SchemaError(f"unresolved forward reference {tp!r}")
        raise SchemaError(f"no CRD schema for type {tp!r}")

    def struct(self, cls: type[Any], *, root: bool) -> Schema:
        if cls in self.stack:
            chain = " → ".join(c.__name__ for c in [*self.stack, cls])
            raise SchemaError(f"recursive types have no structural schema: {chain}")
        self.stack.append(cls)
        try:
            try:
                hints = typing.get_type_hints(cls, include_extras=True)
            except NameError as err:
                raise SchemaError(f"{cls.__qualname__}: cannot resolve annotation: {err}") from err
            docs = attribute_docs(cls)
            properties: Schema = {}
            required: list[str] = []
            for info in msgspec.structs.fields(cls):
                wire = info.encode_name
                if root and wire in ("apiVersion", "kind"):
                    properties[wire] = {"type": "string"}
                    self.describe(properties[wire], _API_VERSION_DOC if wire == "apiVersion" else _KIND_DOC)
                    continue
                if root and wire == "metadata":
                    properties[wire] = {"type": "object"}
                    continue
                schema, presence = self.field(hints[info.name])
                if info.name in docs:
                    self.describe(schema, docs[info.name])
                default = info.default
                if (
                    "default" not in schema
                    and not isinstance(default, type(msgspec.NODEFAULT))
                    and isinstance(default, (str, int, bool, float, enum.Enum))
                ):
                    schema["default"] = default.value if isinstance(default, enum.Enum) else default
                if presence is None:
                    presence = info.required
                if presence:
                    required.append(wire)
                properties[wire] = schema
            out: Schema = {"type": "object", "properties": properties}
            if required:
                out["required"] = sorted(required)
            self.describe(out, cls.__dict__.get("__doc__"))
            return out
        finally:
            self.stack.pop()


_ABC_SEQUENCES = {
    typing.get_origin(typing.Sequence[int]),
    typing.get_origin(typing.List[int]),  # noqa: UP006
}


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _scalar_type(values: tuple[Any, ...]) -> Schema:
    kinds = {type(v) for v in values}
    if kinds <= {str}:
        return {"type": "string"}
    if kinds <= {int}:
        return {"type": "integer"}
    if kinds <= {bool}:
        return {"type": "boolean"}
    raise SchemaError(f"enum values must share one type: {values!r}")


def _apply_meta(meta: msgspec.Meta, schema: Schema) -> None:
    for attr, keyword in (
        ("ge", "minimum"),
        ("le", "maximum"),
        ("multiple_of", "multipleOf"),
        ("pattern", "pattern"),
        ("min_length", "minLength" if schema.get("type") == "string" else "minItems"),
        ("max_length", "maxLength" if schema.get("type") == "string" else "maxItems"),
        ("description", "description"),
        ("title", "title"),
    ):
        value = getattr(meta, attr)
        if value is not None:
            schema[keyword] = value
    if meta.gt is not None:
        markers.ExclusiveMinimum(meta.gt).apply(schema)
    if meta.lt is not None:
        markers.ExclusiveMaximum(meta.lt).apply(schema)


def attribute_docs(cls: type[Any]) -> dict[str, str]:
    """Attribute docstrings of ``cls``: a string literal right after an annotated field.

    Read from the class's source; empty when the source is unavailable (a REPL, a zipped module).
    """
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    tree = ast.parse(source)
    body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef)), [])
    out: dict[str, str] = {}
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            out[node.target.id] = following.value.value
    return out
