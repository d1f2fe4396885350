"""Declarations on CRD types: field constraints in ``Annotated`` metadata and the ``kind`` decorator.

A custom resource is a msgspec Struct; its schema constraints ride on the field types, as
controller-tools' ``+kubebuilder:validation:*`` markers ride on Go fields (reference/controllers.md
§7.2)::

    class WebAppSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
        image: Annotated[str, MinLength(1)]
        replicas: Annotated[int, Minimum(0), Default(1)] | None = None

    @kind(group="example.com", version="v1", short_names=("wa",), status=True)
    class WebApp(msgspec.Struct, kw_only=True, omit_defaults=True):
        \"\"\"A web application.\"\"\"
        api_version: str | None = msgspec.field(default=None, name="apiVersion")
        kind: str | None = None
        metadata: meta_v1.ObjectMeta | None = None
        spec: WebAppSpec | None = None

``msgspec.Meta`` constraints (``ge``, ``gt``, ``le``, ``lt``, ``multiple_of``, ``pattern``,
``min_length``, ``max_length``, ``description``) are read too. ``Items(...)`` applies markers to a
list's elements (controller-tools' ``items:`` prefix). ``kplane.runtime.crdgen`` turns the types
into CustomResourceDefinitions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kplane.api.gvk import GroupVersionKind

T = TypeVar("T")


class Marker:
    """A schema constraint; ``apply`` writes it into the field's schema dict."""

    def apply(self, schema: dict[str, Any]) -> None:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class _Keyword(Marker):
    """Sets one OpenAPI keyword to ``value``."""

    value: Any
    keyword = ""

    def apply(self, schema: dict[str, Any]) -> None:
        schema[self.keyword] = self.value


def _keyword(name: str, keyword: str, doc: str) -> type[_Keyword]:
    cls = type(name, (_Keyword,), {"keyword": keyword, "__doc__": doc, "__module__": __name__})
    return dataclasses.dataclass(frozen=True)(cls)


Minimum = _keyword("Minimum", "minimum", "``minimum``: the smallest allowed number.")
Maximum = _keyword("Maximum", "maximum", "``maximum``: the largest allowed number.")
MultipleOf = _keyword("MultipleOf", "multipleOf", "``multipleOf``.")
MinLength = _keyword("MinLength", "minLength", "``minLength`` of a string.")
MaxLength = _keyword("MaxLength", "maxLength", "``maxLength`` of a string.")
Pattern = _keyword("Pattern", "pattern", "``pattern``: an ECMA-262 regular expression a string matches.")
MinItems = _keyword("MinItems", "minItems", "``minItems`` of a list.")
MaxItems = _keyword("MaxItems", "maxItems", "``maxItems`` of a list.")
MinProperties = _keyword("MinProperties", "minProperties", "``minProperties`` of an object.")
MaxProperties = _keyword("MaxProperties", "maxProperties", "``maxProperties`` of an object.")
Format = _keyword("Format", "format", "``format`` (date-time, int32, byte, ...).")
Default = _keyword("Default", "default", "``default``: the value the API server fills in when absent.")
Example = _keyword("Example", "example", "``example``.")
Description = _keyword("Description", "description", "``description`` (else the attribute docstring).")
ListType = _keyword("ListType", "x-kubernetes-list-type", "``x-kubernetes-list-type``: atomic, set or map.")
MapType = _keyword("MapType", "x-kubernetes-map-type", "``x-kubernetes-map-type``: granular or atomic.")


@dataclasses.dataclass(frozen=True)
class ExclusiveMinimum(Marker):
    """``minimum`` with ``exclusiveMinimum: true`` (structural schemas' boolean form)."""

    value: float

    def apply(self, schema: dict[str, Any]) -> None:
        schema["minimum"] = self.value
        schema["exclusiveMinimum"] = True


@dataclasses.dataclass(frozen=True)
class ExclusiveMaximum(Marker):
    """``maximum`` with ``exclusiveMaximum: true``."""

    value: float

    def apply(self, schema: dict[str, Any]) -> None:
        schema["maximum"] = self.value
        schema["exclusiveMaximum"] = True


class Enum(Marker):
    """``enum``: the allowed values (``Enum("a", "b")``)."""

    def __init__(self, *values: Any) -> None:
        self.values = list(values)

    def apply(self, schema: dict[str, Any]) -> None:
        schema["enum"] = list(self.values)


class ListMapKeys(Marker):
    """``x-kubernetes-list-map-keys`` (and list type ``map``)."""

    def __init__(self, *keys: str) -> None:
        self.keys = list(keys)

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-list-type"] = "map"
        schema["x-kubernetes-list-map-keys"] = list(self.keys)


@dataclasses.dataclass(frozen=True)
class XValidation(Marker):
    """A CEL rule, appended to ``x-kubernetes-validations`` (several may stack)."""

    rule: str
    message: str = ""
    message_expression: str = ""
    reason: str = ""
    field_path: str = ""
    optional_old_self: bool | None = None

    def apply(self, schema: dict[str, Any]) -> None:
        entry: dict[str, Any] = {"rule": self.rule}
        # controller-tools' default message: "failed rule: <rule>" (CT pkg/crd/markers/validation.go).
        entry["message"] = self.message or ("" if self.message_expression else f"failed rule: {self.rule}")
        if not entry["message"]:
            del entry["message"]
        for key, value in (
            ("messageExpression", self.message_expression),
            ("reason", self.reason),
            ("fieldPath", self.field_path),
            ("optionalOldSelf", self.optional_old_self),
        ):
            if value not in ("", None):
                entry[key] = value
        schema.setdefault("x-kubernetes-validations", []).append(entry)


class _Flag(Marker):
    keyword = ""

    def apply(self, schema: dict[str, Any]) -> None:
        schema[self.keyword] = True


class UniqueItemsMarker(_Flag):
    keyword = "uniqueItems"


class NullableMarker(_Flag):
    keyword = "nullable"


class PreserveUnknownFieldsMarker(_Flag):
    keyword = "x-kubernetes-preserve-unknown-fields"


class EmbeddedResourceMarker(Marker):
    """``x-kubernetes-embedded-resource`` (apiVersion, kind and metadata are validated)."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-embedded-resource"] = True
        schema.setdefault("type", "object")


class IntOrStringMarker(Marker):
    """``x-kubernetes-int-or-string`` with controller-gen's ``anyOf`` of integer and string."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema.pop("type", None)
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        schema["x-kubernetes-int-or-string"] = True


class _Presence:
    """Required / Optional: decide a field's place in its object's ``required`` list."""

    def __init__(self, required: bool) -> None:
        self.required = required

    def __repr__(self) -> str:
        return "Required" if self.required else "Optional"


UniqueItems = UniqueItemsMarker()
Nullable = NullableMarker()
PreserveUnknownFields = PreserveUnknownFieldsMarker()
EmbeddedResource = EmbeddedResourceMarker()
IntOrString = IntOrStringMarker()
Required = _Presence(True)
Optional = _Presence(False)


class Items:
    """Markers for the elements of a list (``Annotated[list[str], Items(MinLength(1))]``)."""

    def __init__(self, *markers: Marker) -> None:
        self.markers = markers


# Class-level declarations.


@dataclasses.dataclass(frozen=True)
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry (kubectl get's columns)."""

    name: str
    json_path: str
    type: str = "string"
    description: str = ""
    format: str = ""
    priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"jsonPath": self.json_path, "name": self.name, "type": self.type}
        if self.description:
            out["description"] = self.description
        if self.format:
            out["format"] = self.format
        if self.priority:
            out["priority"] = self.priority
        return out


@dataclasses.dataclass(frozen=True)
class Scale:
    """The scale subresource: where replicas live in spec and status, and the selector string."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {"specReplicasPath": self.spec_replicas_path, "statusReplicasPath": self.status_replicas_path}
        if self.label_selector_path:
            out["labelSelectorPath"] = self.label_selector_path
        return out


@dataclasses.dataclass(frozen=True)
class KindInfo:
    """What ``kind(...)`` declared about a root type (one served version of one CRD)."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    list_kind: str
    scope: str
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    printer_columns: tuple[PrinterColumn, ...]
    status: bool
    scale: Scale | None
    storage: bool
    served: bool
    deprecated: bool
    deprecation_warning: str

    @property
    def gvk(self) -> GroupVersionKind:
        return GroupVersionKind(self.group, self.version, self.kind)

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


KIND_ATTRIBUTE = "__kplane_kind__"


def kind(
    *,
    group: str,
    version: str,
    kind: str = "",
    plural: str = "",
    singular: str = "",
    scope: str = "Namespaced",
    short_names: Sequence[str] = (),
    categories: Sequence[str] = (),
    printer_columns: Sequence[PrinterColumn] = (),
    status: bool = False,
    scale: Scale | None = None,
    storage: bool = False,
    served: bool = True,
    deprecated: bool = False,
    deprecation_warning: str = "",
) -> Callable[[type[T]], type[T]]:
    """Declare a class the root type of ``group/version`` (kind: the class name unless given).

    As controller-gen's ``+kubebuilder:resource``, ``subresource``, ``printcolumn`` and
    ``storageversion`` markers: plural defaults to the pluralized lowercase kind, singular to the
    lowercase kind, scope to Namespaced. Sets ``gvk`` on the class, so the typed client and the
    runtime builder accept it as they accept kplane's built-in models.
    """
    if scope not in ("Namespaced", "Cluster"):
        raise ValueError(f"scope must be Namespaced or Cluster, not {scope!r}")

    def decorate(cls: type[T]) -> type[T]:
        name = kind or cls.__name__
        from kplane.runtime import naming

        info = KindInfo(
            group=group,
            version=version,
            kind=name,
            plural=plural or naming.pluralize(name.lower()),
            singular=singular or name.lower(),
            list_kind=f"{name}List",
            scope=scope,
            short_names=tuple(short_names),
            categories=tuple(categories),
            printer_columns=tuple(printer_columns),
            status=status,
            scale=scale,
            storage=storage,
            served=served,
            deprecated=deprecated,
            deprecation_warning=deprecation_warning,
        )
        setattr(cls, KIND_ATTRIBUTE, info)
        setattr(cls, "gvk", info.gvk)  # noqa: B010 - a ClassVar the typed client reads
        return cls

    return decorate


def kind_info(cls: type[Any]) -> KindInfo | None:
    """The ``KindInfo`` declared on ``cls`` itself (not inherited), or None."""
    info = cls.__dict__.get(KIND_ATTRIBUTE)
    return info if isinstance(info, KindInfo) else None
