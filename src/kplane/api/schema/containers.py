"""Object and array nodes of the schema compiler: the per-write walk over a value's containers.

The compiler (``compiler``) reads a schema node once into an ``ObjectShape`` or the arguments of
``array_node``; the closures built here are what every write runs. An object node is one loop over
the value's keys with a dict lookup into its compiled properties; fields whose node is a plain
leaf (``leaf`` type) are stored without a call. Pruning, ``null`` handling,
defaulting (parents before children, defaults walked like input), the per-definition hook, then
``required`` and the node's other checks, in that order. With an old value, children are given
their correlated old values (object keys; ``list-type: map`` keys; other lists only when unchanged
as a whole) so ``Ctx.fail`` can ratchet.

Shaping nodes return new containers and never mutate their input. Validate-only nodes
(``object_checker``, arrays with ``shaping=False``) only check: they modify nothing, and return the
value itself (an array node, a new list of the same items).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kplane.api import errors
from kplane.api.schema import checks

Fn = checks.Fn
Hook = Callable[[dict[str, Any]], None]

_IDX = tuple(f"[{i}]" for i in range(512))


class Never:
    """A type no JSON value has: the leaf type of nodes without a call-free fast path."""


@dataclass(frozen=True, slots=True)
class ObjectShape:
    """What an object node does, read from its schema once.

    ``props`` are the declared properties' nodes; ``leaf`` maps a node to the one Python type it
    accepts unchanged and unchecked (``Never`` when none); ``extra`` is the
    ``additionalProperties`` node; ``keep_rest`` keeps undeclared keys (deep-copied) instead of
    pruning them; ``defaults`` are ``(key, default, node)``; ``tail`` runs after ``required``.
    """

    props: dict[str, Fn]
    leaf: dict[Fn, type]
    nullable_props: frozenset[str]
    extra: Fn | None
    extra_nullable: bool
    keep_rest: bool
    defaults: tuple[tuple[str, Any, Fn], ...]
    hook: Hook | None
    required: tuple[str, ...]
    tail: tuple[checks.Check, ...]
    mismatch: Fn
    map_key: Callable[[str, str], str]


def copy_json(value: Any) -> Any:
    """A deep copy of decoded JSON (dicts, lists, scalars), several times faster than ``copy.deepcopy``."""
    t = type(value)
    if t is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if t is list:
        return [copy_json(v) for v in value]
    return value


def keep(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
    """The node of preserved unknown JSON: a deep copy, unchecked."""
    return copy_json(v)


def same(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
    """The validate-only counterpart of ``keep``: the value itself."""
    return v


def index(path: str, i: int) -> str:
    """The path of element ``i`` of the list at ``path``."""
    return path + (_IDX[i] if i < 512 else f"[{i}]")


def object_node(shape: ObjectShape) -> Fn:
    """The shaping node of an object: prunes, defaults and validates into a new dict."""
    get_prop = {k: (shape.leaf.get(fn, Never), fn) for k, fn in shape.props.items()}.get
    nullable_props = shape.nullable_props
    extra_fn = shape.extra
    extra_leaf = shape.leaf.get(extra_fn, Never) if extra_fn is not None else Never
    extra_nullable = shape.extra_nullable
    keep_rest = shape.keep_rest
    defaults = shape.defaults
    hook = shape.hook
    required = shape.required
    tail = shape.tail
    mismatch = shape.mismatch
    map_key = shape.map_key

    def obj(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
        if type(v) is not dict:
            return mismatch(v, path, old, ctx)
        prefix = path + "." if path else ""
        out: dict[str, Any] = {}
        if type(old) is not dict:
            # The create path: no old value to correlate with; leaves of a plain type are
            # stored without a call.
            for k, x in v.items():
                entry = get_prop(k)
                if entry is not None:
                    leaf, child = entry
                    if type(x) is leaf:
                        out[k] = x
                    elif x is not None or k in nullable_props:
                        out[k] = child(x, prefix + k, None, ctx)
                elif type(x) is extra_leaf:  # a map's plain value (labels, data): no call
                    out[k] = x
                elif extra_fn is not None:
                    if x is not None or extra_nullable:
                        out[k] = extra_fn(x, map_key(path, k), None, ctx)
                elif keep_rest:
                    out[k] = copy_json(x)
                elif ctx.unknown is not None:
                    ctx.unknown.append(prefix + k)
        else:
            old_get = old.get
            for k, x in v.items():
                entry = get_prop(k)
                if entry is not None:
                    leaf, child = entry
                    if type(x) is leaf:
                        out[k] = x  # a leaf without checks: no error to ratchet
                    elif x is not None or k in nullable_props:
                        out[k] = child(x, prefix + k, old_get(k), ctx)
                elif extra_fn is not None:
                    if x is not None or extra_nullable:
                        out[k] = extra_fn(x, map_key(path, k), old_get(k), ctx)
                elif keep_rest:
                    out[k] = copy_json(x)
                elif ctx.unknown is not None:
                    ctx.unknown.append(prefix + k)
        for k, default, child in defaults:
            if k not in out:
                out[k] = child(copy_json(default), prefix + k, None, ctx)
        if hook is not None:
            hook(out)
        for k in required:
            if k not in out:
                ctx.fail(errors.required(prefix + k), v, old)
        for check in tail:
            check(out, path, old, ctx)
        return out

    return obj


def object_checker(shape: ObjectShape) -> Fn:
    """The validate-only node of an object (``allOf``/``anyOf``/``oneOf``/``not`` subschemas):
    no pruning, defaulting, hook or old values; returns the value itself."""
    props = shape.props
    items = tuple(props.items())
    nullable_props = shape.nullable_props
    extra_fn = shape.extra
    required = shape.required
    tail = shape.tail
    mismatch = shape.mismatch
    map_key = shape.map_key

    def obj_check(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
        if type(v) is not dict:
            return mismatch(v, path, old, ctx)
        prefix = path + "." if path else ""
        for k, child in items:
            x = v.get(k)
            if x is not None or (k in v and k in nullable_props):
                child(x, prefix + k, None, ctx)
        if extra_fn is not None:
            for k, x in v.items():
                if k not in props and x is not None:
                    extra_fn(x, map_key(path, k), None, ctx)
        for k in required:
            if k not in v:
                ctx.fail(errors.required(prefix + k), v, old)
        for check in tail:
            check(v, path, old, ctx)
        return v

    return obj_check


def array_node(
    item_fn: Fn | None,
    keys: tuple[str, ...],
    tail: tuple[checks.Check, ...],
    mismatch: Fn,
    *,
    shaping: bool,
) -> Fn:
    """The node of an array whose items are ``item_fn`` (None: items unconstrained) and whose
    ``list-type: map`` keys are ``keys``; with ``shaping=False`` unconstrained items are not copied."""

    def arr(v: Any, path: str, old: Any, ctx: checks.Ctx) -> Any:
        if type(v) is not list:
            return mismatch(v, path, old, ctx)
        olds = _correlate(v, old, keys) if old is not None and type(old) is list else None
        if item_fn is None:
            out = copy_json(v) if shaping else v
        elif olds is None:
            out = [item_fn(x, path + (_IDX[i] if i < 512 else f"[{i}]"), None, ctx) for i, x in enumerate(v)]
        else:
            out = [item_fn(x, index(path, i), olds[i], ctx) for i, x in enumerate(v)]
        for check in tail:
            check(out, path, old, ctx)
        return out

    return arr


def _correlate(new: list[Any], old: list[Any], keys: tuple[str, ...]) -> list[Any] | None:
    """Old elements aligned with ``new``: by map keys for ``list-type: map``, else only if unchanged."""
    if not keys:
        return old if old == new else None
    by_key: dict[tuple[Any, ...], Any] = {}
    for x in old:
        if type(x) is dict:
            by_key[tuple(checks.canonical(x.get(k)) for k in keys)] = x
    return [
        by_key.get(tuple(checks.canonical(x.get(k)) for k in keys)) if type(x) is dict else None for x in new
    ]
