"""The schema compiler: reads a schema once and builds its tree of node closures.

A ``Compiler`` serves one family of schemas sharing ``defs``: each ``$ref`` is compiled once and
shared (a recursive definition is resolved at call time), and each node is dispatched on its
declared type to the builders of ``scalars`` and ``containers``; ``allOf``/``anyOf``/``oneOf``/
``not`` become ``composition`` checks over validate-only subschema nodes built by a twin compiler
(``shaping=False``). ``builtin_compiler()`` is the one compiler of the built-in definitions, so a
definition such as ``PodSpec`` is compiled once per process.

Compilation reads the schema and never modifies it; a compiler is not thread-safe while it
compiles (its tables grow), the nodes it returns are immutable and may be shared.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from kplane.api.schema import builtin, builtin_defaults, checks, composition, containers, scalars

Fn = checks.Fn
Hook = containers.Hook

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
_MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
_TIMES = (_TIME, _MICRO_TIME)


@functools.cache
def builtin_compiler() -> Compiler:
    """One compiler for all built-in kinds, so shared definitions are compiled once."""
    return Compiler(builtin.validation_definitions(), builtin=True, hooks=builtin_defaults.HOOKS)


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _map_key(path: str, key: str) -> str:
    return f"{path}[{key}]"


def _types(schema: Mapping[str, Any]) -> tuple[tuple[str, ...], bool]:
    """The declared JSON types without ``null``, and whether ``null`` was among them."""
    t = schema.get("type")
    if t is None:
        return (), False
    listed = [t] if isinstance(t, str) else list(t)
    return tuple(x for x in listed if x != "null"), "null" in listed


def _is_int_or_string(schema: Mapping[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string") is True:
        return True
    one_of = schema.get("oneOf")
    if not isinstance(one_of, list) or len(one_of) != 2:
        return False
    kinds = {_types(s)[0] for s in one_of if isinstance(s, Mapping) and len(s) == 1}
    return kinds == {("string",), ("integer",)}


def _nullable(schema: Mapping[str, Any]) -> bool:
    return schema.get("nullable") is True or _types(schema)[1]


class Compiler:
    """Builds node closures for one family of schemas sharing ``defs``.

    ``builtin=True`` applies Go decoding's rules (every ``null`` is absent, map keys reported as
    ``[key]``, no list-type checks) and runs ``hooks`` (per definition name) on each defined
    object. ``shaping=False`` builds validate-only closures (no pruning, defaulting or copying)
    for the subschemas of ``allOf``/``anyOf``/``oneOf``/``not``.
    """

    def __init__(
        self, defs: Mapping[str, Any], *, builtin: bool, hooks: Mapping[str, Hook], shaping: bool = True
    ) -> None:
        self.defs = defs
        self.builtin = builtin
        self.hooks = hooks
        self.shaping = shaping
        self.map_key = _map_key if builtin else _child
        self._by_ref: dict[str, Fn] = {}
        self._pending: set[str] = set()
        self._checker: Compiler | None = None
        # Node functions that accept a value of exactly this Python type unchanged and unchecked.
        self._leaf: dict[Fn, type] = {}

    def checker(self) -> Compiler:
        """The validate-only twin of this compiler (itself when it is one)."""
        if not self.shaping:
            return self
        if self._checker is None:
            self._checker = Compiler(self.defs, builtin=self.builtin, hooks={}, shaping=False)
        return self._checker

    # --- entry points ----------------------------------------------------------------------

    def node(self, schema: Mapping[str, Any]) -> Fn:
        """The node of ``schema`` (a ``$ref`` is followed into ``defs``)."""
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.ref(ref.rpartition("/")[2])
        return self._build(schema, None)

    def ref(self, name: str) -> Fn:
        """The node of definition ``name``, compiled on first use; an unknown name keeps anything."""
        fn = self._by_ref.get(name)
        if fn is not None:
            return fn
        if name in self._pending:  # a recursive definition: resolve at call time
            table = self._by_ref

            def late(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
                return table[name](v, path, old, ctx)

            return late
        target = self.defs.get(name)
        if name == _QUANTITY:
            fn = scalars.quantity()
        elif name in _TIMES and target is not None:
            fn = scalars.time(self._build(target, None), micro=name == _MICRO_TIME)
        elif target is None:
            fn = containers.keep
        else:
            self._pending.add(name)
            try:
                fn = self._build(target, self.hooks.get(name))
            finally:
                self._pending.discard(name)
        self._by_ref[name] = fn
        return fn

    def root(self, schema: Mapping[str, Any]) -> Fn:
        """A custom resource's root: ``apiVersion``/``kind`` strings and ``ObjectMeta`` metadata."""
        return self._build(schema, None, resource=True)

    # --- node construction -------------------------------------------------------------------

    def _build(self, schema: Mapping[str, Any], hook: Hook | None, *, resource: bool = False) -> Fn:
        types, null_listed = _types(schema)
        nullable = not self.builtin and (null_listed or schema.get("nullable") is True)
        composite = self._composition(schema)
        enum = schema.get("enum")
        if _is_int_or_string(schema):
            return scalars.int_or_string(schema, nullable, composite)
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        if types == ("object",) or resource or embedded:
            return self._object(schema, hook, nullable, composite, resource=resource or embedded)
        if types == ("array",):
            return self._array(schema, nullable, composite)
        if len(types) == 1 and types[0] in ("string", "integer", "number", "boolean"):
            return scalars.scalar(types[0], schema, nullable, composite, self._leaf)
        shapeless = not any(k in schema for k in ("properties", "additionalProperties", "items"))
        if (
            schema.get("x-kubernetes-preserve-unknown-fields") is True
            and shapeless
            and not composite
            and not enum
        ):
            return containers.keep if self.shaping else containers.same
        return self._untyped(schema, nullable, composite)

    def _untyped(self, schema: Mapping[str, Any], nullable: bool, composite: list[checks.Check]) -> Fn:
        """A node without ``type``: checks chosen by the value's runtime type; unknown fields kept."""
        obj = self._object(schema, None, nullable, composite, keep_rest=True)
        arr = self._array(schema, nullable, composite)
        for_str = tuple(scalars.string_checks(schema) + composite)
        for_num = tuple(scalars.number_checks(schema) + composite)
        enum = schema.get("enum")
        for_bool = tuple(([checks.enum(enum)] if isinstance(enum, list) else []) + composite)

        def untyped(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
            t = type(v)
            if t is dict:
                return obj(v, path, old, ctx)
            if t is list:
                return arr(v, path, old, ctx)
            tests = (
                for_str if t is str else for_bool if t is bool else for_num if v is not None else composite
            )
            for check in tests:
                check(v, path, old, ctx)
            return v

        return untyped

    def _composition(self, schema: Mapping[str, Any]) -> list[checks.Check]:
        out: list[checks.Check] = []
        sub = self.checker()
        for keyword in ("allOf", "anyOf", "oneOf"):
            subs = schema.get(keyword)
            if isinstance(subs, list) and subs and not (keyword == "oneOf" and _is_int_or_string(schema)):
                fns = tuple(sub.node(s) for s in subs if isinstance(s, Mapping))
                out.append(composition.COMPOSERS[keyword](fns))
        if isinstance(schema.get("not"), Mapping):
            out.append(composition.not_(sub.node(schema["not"])))
        return out

    def _object(
        self,
        schema: Mapping[str, Any],
        hook: Hook | None,
        nullable: bool,
        composite: list[checks.Check],
        *,
        resource: bool = False,
        keep_rest: bool = False,
    ) -> Fn:
        declared: Mapping[str, Any] = schema.get("properties") or {}
        props: dict[str, Fn] = {k: self.node(s) for k, s in declared.items() if isinstance(s, Mapping)}
        nullable_props = frozenset(
            k for k, s in declared.items() if not self.builtin and isinstance(s, Mapping) and _nullable(s)
        )
        post: list[checks.Check] = []
        if resource:
            self._resource_fields(props, declared)
            if schema.get("x-kubernetes-embedded-resource") is True:
                post.append(checks.embedded_resource(_child))
        defaults = tuple(
            (k, s["default"], props[k])
            for k, s in declared.items()
            if isinstance(s, Mapping) and "default" in s
        )
        extra = schema.get("additionalProperties")
        extra_fn = self.node(extra) if isinstance(extra, Mapping) else None
        extra_nullable = isinstance(extra, Mapping) and not self.builtin and _nullable(extra)
        keep_rest = keep_rest or extra is True or schema.get("x-kubernetes-preserve-unknown-fields") is True
        if self.builtin and not declared and extra is None:
            keep_rest = True  # FieldsV1, RawExtension: opaque JSON
        required = tuple(k for k in schema.get("required") or () if isinstance(k, str))
        if isinstance(schema.get("maxProperties"), int):
            post.append(checks.max_properties(schema["maxProperties"]))
        if isinstance(schema.get("minProperties"), int):
            post.append(checks.min_properties(schema["minProperties"]))
        if isinstance(schema.get("enum"), list):
            post.append(checks.enum(schema["enum"]))
        shape = containers.ObjectShape(
            props=props,
            leaf=self._leaf,
            nullable_props=nullable_props,
            extra=extra_fn,
            extra_nullable=extra_nullable,
            keep_rest=keep_rest,
            defaults=defaults,
            hook=hook,
            required=required,
            tail=tuple(post + composite),
            mismatch=scalars.type_mismatch("object", nullable),
            map_key=self.map_key,
        )
        return containers.object_node(shape) if self.shaping else containers.object_checker(shape)

    def _resource_fields(self, props: dict[str, Fn], declared: Mapping[str, Any]) -> None:
        """Give a resource root ``apiVersion``/``kind`` strings and ``ObjectMeta`` metadata."""
        for field in ("apiVersion", "kind"):
            if field not in props:
                props[field] = self._build({"type": "string"}, None)
        base = builtin_compiler().ref(_OBJECT_META)
        restrict = declared.get("metadata")
        if not isinstance(restrict, Mapping) or not restrict.get("properties"):
            props["metadata"] = base
            return
        extra = self.checker().node(restrict)

        def metadata(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
            out = base(v, path, old, ctx)
            extra(out, path, old, ctx)
            return out

        props["metadata"] = metadata

    def _array(self, schema: Mapping[str, Any], nullable: bool, composite: list[checks.Check]) -> Fn:
        items = schema.get("items")
        item_fn = self.node(items) if isinstance(items, Mapping) else None
        list_type = schema.get("x-kubernetes-list-type")
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ()) if list_type == "map" else ()
        post: list[checks.Check] = []
        if isinstance(schema.get("maxItems"), int):
            post.append(checks.max_items(schema["maxItems"]))
        if isinstance(schema.get("minItems"), int):
            post.append(checks.min_items(schema["minItems"]))
        if not self.builtin:
            if list_type == "set":
                post.append(checks.list_set(containers.index))
            elif keys:
                post.append(checks.list_map(keys, containers.index))
        if isinstance(schema.get("enum"), list):
            post.append(checks.enum(schema["enum"]))
        mismatch = scalars.type_mismatch("array", nullable)
        return containers.array_node(item_fn, keys, tuple(post + composite), mismatch, shaping=self.shaping)
