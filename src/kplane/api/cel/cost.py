"""CEL cost estimation as Kubernetes uses it (cel-go ``checker/cost.go`` and apiserver
``pkg/cel/library/cost.go`` under apiextensions' size rules), over cel-cpp's checked AST.

cel-expr-python exposes no cost tracking, but ``Expression.serialize()`` gives the checked
expression (``cel.expr.CheckedExpr``); ``decode`` reads its ``expr`` tree and ``type_map`` with a
small protobuf wire reader. ``estimate(node, sizes)`` then walks the tree as cel-go's estimator
does and returns the maximum cost:

- constants 0; identifiers and field selections 1 (``has()`` too); calls 1 plus their arguments,
  except ``&&``/``||``/``?:`` (their arguments only; the dearer branch of ``?:``); string
  traversals (``contains``, ``startsWith``, ``endsWith``, ``==`` on strings, ``+`` of strings)
  ``ceil(size * 0.1)``; ``matches``/``find``/``findAll`` the traversal times
  ``ceil(pattern size * 0.25)``; ``in`` and the Lists library's functions the list's size;
  list literals 10, map and message literals 30, plus their elements; comprehensions (the
  expanded macros) their range, plus the range's size times the loop condition and step.
- Sizes come from a ``Sizes`` callback: the maximum size of the value a path of field names from
  a root variable (``self``) denotes, ``@each`` standing for what a comprehension iterates (list
  items, map keys). At CRD write
  it reads the schema (``maxItems``, ``maxProperties``, ``maxLength``; unbounded collections hold
  as many minimal elements as fit in 3 MiB, as upstream); at run time the object's actual sizes.

It is an approximation of cel-go's estimator, not a port: the structure and constants are
upstream's, the less common overloads are charged 1 (documented in ARCHITECTURE.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_REQUEST_BYTES = 3 * 1024 * 1024
PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000
STATIC_RULE_LIMIT = 10_000_000
STATIC_CRD_LIMIT = 100_000_000
_TRAVERSAL = 0.1
_REGEX = 0.25
_UNKNOWN = MAX_REQUEST_BYTES  # size of a value nothing bounds

Path = tuple[str, ...]
EACH = "@each"
"""A path step: what a comprehension iterates, a list's items or a map's keys."""
Sizes = Callable[[str, Path], int | None]
"""(root variable, path) → the value's maximum size (items, properties, characters), or None."""


# -- protobuf wire reading ------------------------------------------------------------------


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def _fields(buf: bytes) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i : i + n], i + n
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:  # groups are not used by cel.expr
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, value))
    return out


@dataclass(slots=True)
class Node:
    """One ``cel.expr.Expr``: ``kind`` is const/ident/select/call/list/struct/comprehension."""

    id: int = 0
    kind: str = ""
    name: str = ""  # ident name, select field, call function
    text_size: int = 0  # string/bytes constant size
    test_only: bool = False
    children: list[Node] = field(default_factory=list)  # select operand; call target+args; elements
    has_target: bool = False
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    parts: dict[str, Node] = field(default_factory=dict)  # comprehension parts


_KINDS = {3: "const", 4: "ident", 5: "select", 6: "call", 7: "list", 8: "struct", 9: "comprehension"}
_COMPREHENSION = {2: "range", 4: "init", 5: "cond", 6: "step", 7: "result"}


def _expr(buf: bytes) -> Node:
    node = Node()
    for number, value in _fields(buf):
        if number == 2:
            node.id = value
        elif number in _KINDS:
            node.kind = _KINDS[number]
            _fill(node, number, value)
    return node


def _fill(node: Node, number: int, buf: bytes) -> None:
    for sub, value in _fields(buf):
        if number == 3 and sub in (6, 7):
            node.text_size = len(value.decode("utf-8", "replace")) if sub == 6 else len(value)
        elif number == 4 and sub == 1:
            node.name = value.decode()
        elif number == 5:
            if sub == 1:
                node.children.append(_expr(value))
            elif sub == 2:
                node.name = value.decode()
            elif sub == 3:
                node.test_only = bool(value)
        elif number == 6:
            if sub == 1:
                node.children.insert(0, _expr(value))
                node.has_target = True
            elif sub == 2:
                node.name = value.decode()
            elif sub == 3:
                node.children.append(_expr(value))
        elif number == 7 and sub == 1:
            node.children.append(_expr(value))
        elif number == 8 and sub == 2:
            for part, entry in _fields(value):
                if part in (3, 4):
                    node.children.append(_expr(entry))
        elif number == 9:
            if sub == 1:
                node.iter_var = value.decode()
            elif sub == 3:
                node.accu_var = value.decode()
            elif sub == 8:
                node.iter_var2 = value.decode()
            elif sub in _COMPREHENSION:
                node.parts[_COMPREHENSION[sub]] = _expr(value)


def decode(serialized: bytes) -> Node:
    """The expression tree of ``Expression.serialize()`` (an ``Any`` holding a CheckedExpr)."""
    body = next(v for n, v in _fields(serialized) if n == 2)
    return _expr(next(v for n, v in _fields(body) if n == 4))


# -- estimation -----------------------------------------------------------------------------


def _traversal(size: int) -> int:
    return math.ceil(size * _TRAVERSAL)


_STRING_TRAVERSALS = frozenset({"contains", "startsWith", "endsWith"})
_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})
_SAME_SIZE = frozenset({"substring", "lowerAscii", "upperAscii", "trim", "charAt"})
_LIST_FUNCTIONS = frozenset({"isSorted", "sum", "min", "max", "indexOf", "lastIndexOf", "@in"})


@dataclass(slots=True)
class _Estimate:
    cost: int
    size: int | None = None  # the value's maximum size, when known
    path: tuple[str, Path] | None = None  # where it comes from (root, path)


class Estimator:
    """Maximum cost of an expression under ``sizes``; comprehension variables are bound to the
    path of their range's elements."""

    def __init__(self, sizes: Sizes) -> None:
        self._sizes = sizes
        self._scopes: list[dict[str, tuple[str, Path] | None]] = []

    def _lookup(self, root: str, path: Path) -> int | None:
        return self._sizes(root, path)

    def estimate(self, node: Node) -> _Estimate:
        match node.kind:
            case "const":
                return _Estimate(0, node.text_size)
            case "ident":
                for scope in reversed(self._scopes):
                    if node.name in scope:
                        where = scope[node.name]
                        return _Estimate(1, self._lookup(*where) if where else None, where)
                where = (node.name, ())
                return _Estimate(1, self._lookup(*where), where)
            case "select":
                operand = self.estimate(node.children[0]) if node.children else _Estimate(0)
                where = (operand.path[0], (*operand.path[1], node.name)) if operand.path else None
                if node.test_only:
                    return _Estimate(operand.cost + 1)
                return _Estimate(operand.cost + 1, self._lookup(*where) if where else None, where)
            case "call":
                return self._call(node)
            case "list":
                items = [self.estimate(c) for c in node.children]
                return _Estimate(10 + sum(e.cost for e in items), len(items))
            case "struct":
                items = [self.estimate(c) for c in node.children]
                return _Estimate(30 + sum(e.cost for e in items), len(items) // 2)
            case "comprehension":
                return self._comprehension(node)
        return _Estimate(1)

    def _comprehension(self, node: Node) -> _Estimate:
        rng = self.estimate(node.parts["range"]) if "range" in node.parts else _Estimate(0, 0)
        init = self.estimate(node.parts["init"]) if "init" in node.parts else _Estimate(0)
        n = rng.size if rng.size is not None else _UNKNOWN
        element = (rng.path[0], (*rng.path[1], EACH)) if rng.path else None
        scope: dict[str, tuple[str, Path] | None] = {node.accu_var: None}
        if node.iter_var2:  # two-variable forms: index/key, then value
            scope[node.iter_var], scope[node.iter_var2] = None, element
        else:
            scope[node.iter_var] = element
        self._scopes.append(scope)
        try:
            cond = self.estimate(node.parts["cond"]).cost if "cond" in node.parts else 0
            step = self.estimate(node.parts["step"]).cost if "step" in node.parts else 0
            result = self.estimate(node.parts["result"]) if "result" in node.parts else _Estimate(0)
        finally:
            self._scopes.pop()
        total = rng.cost + init.cost + n * (cond + step) + result.cost
        return _Estimate(total, n if result.size is None else result.size)

    def _call(self, node: Node) -> _Estimate:
        args = [self.estimate(c) for c in node.children]
        base = sum(a.cost for a in args)
        name = node.name
        if name in ("_&&_", "_||_"):
            return _Estimate(base)
        if name == "_?_:_" and len(args) == 3:
            return _Estimate(args[0].cost + max(args[1].cost, args[2].cost))
        sizes = [a.size if a.size is not None else _UNKNOWN for a in args]
        if name in _STRING_TRAVERSALS and sizes:
            return _Estimate(base + 1 + _traversal(sizes[0]))
        if name in _REGEX_FUNCTIONS and len(sizes) >= 2:
            return _Estimate(base + 1 + _traversal(sizes[0]) * math.ceil(sizes[1] * _REGEX))
        if (
            name in ("_==_", "_!=_")
            and len(args) == 2
            and args[0].size is not None
            and args[1].size is not None
        ):
            return _Estimate(base + 1 + _traversal(min(sizes)))
        if name == "_+_" and len(args) == 2 and args[0].size is not None and args[1].size is not None:
            return _Estimate(base + 1 + _traversal(sizes[0] + sizes[1]), sizes[0] + sizes[1])
        if name in _LIST_FUNCTIONS and sizes:
            return _Estimate(base + 1 + (sizes[-1] if name == "@in" else sizes[0]))
        if name in _SAME_SIZE and node.has_target and args[0].size is not None:
            # a string derived from its receiver is no longer than it (cel-go's size estimate)
            return _Estimate(base + 1 + _traversal(args[0].size), args[0].size)
        return _Estimate(base + 1)


def estimate(node: Node, sizes: Sizes) -> int:
    """The maximum cost of ``node`` (see the module docstring)."""
    return Estimator(sizes).estimate(node).cost


def exceeds_message(description: str, cost: int, limit: int) -> str:
    """apiextensions ``getCostErrorMessage``."""
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return (
        f"{description} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, "
        "maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )


# -- sizes ----------------------------------------------------------------------------------

_MIN_SIZE = {"string": 2, "integer": 1, "number": 1, "boolean": 4, "object": 2, "array": 2}


def _min_serialized(node: Any) -> int:
    kind = node.get("type") if isinstance(node, dict) else None
    return _MIN_SIZE.get(kind, 1) if isinstance(kind, str) else 1


def cardinality(node: Any) -> int:
    """How many values a collection node may hold: ``maxItems``/``maxProperties``, or as many
    minimal elements as fit in a request (upstream's unbounded cardinality)."""
    if not isinstance(node, dict):
        return 1
    if node.get("type") == "array":
        bound = node.get("maxItems")
        if isinstance(bound, int):
            return bound
        return (MAX_REQUEST_BYTES - 2) // (_min_serialized(node.get("items")) + 1)
    bound = node.get("maxProperties")
    if isinstance(bound, int):
        return bound
    return (MAX_REQUEST_BYTES - 2) // (_min_serialized(node.get("additionalProperties")) + 3 + 1)


def node_size(node: Any) -> int | None:
    """The maximum CEL size of values at a schema node (None for scalars other than strings)."""
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    if kind == "string":
        bound = node.get("maxLength")
        return bound if isinstance(bound, int) else MAX_REQUEST_BYTES - 2
    if kind == "array" or (kind == "object" and isinstance(node.get("additionalProperties"), dict)):
        return cardinality(node)
    if kind == "object" and isinstance(node.get("properties"), dict):
        return len(node["properties"])
    return None


def schema_sizes(roots: dict[str, Any], unescape: Callable[[Any, str], str | None]) -> Sizes:
    """Sizes read from schema nodes: ``roots`` maps variable names to their node; ``unescape``
    (node, CEL field name) gives the property name a selection reads."""

    def sizes(root: str, path: Path) -> int | None:
        node = roots.get(root)
        for step in path:
            if not isinstance(node, dict):
                return None
            if step == EACH:
                if node.get("type") != "array":
                    # map keys: upstream's key type carries no size (StringType), estimated 0
                    return 0
                node = node.get("items")
                continue
            props = node.get("properties")
            if isinstance(props, dict):
                name = unescape(node, step)
                node = props.get(name) if name is not None else None
            else:
                node = node.get("additionalProperties")
        return node_size(node)

    return sizes


def value_sizes(roots: dict[str, Any]) -> Sizes:
    """Sizes of actual values (the largest along ``*`` steps): the run-time side of the same
    estimate."""

    def sizes(root: str, path: Path) -> int | None:
        values = [roots.get(root)]
        for step in path:
            nxt: list[Any] = []
            for value in values:
                if step == EACH:
                    if isinstance(value, list):
                        nxt.extend(value)
                    elif isinstance(value, dict):
                        nxt.extend(value.keys())
                elif isinstance(value, dict) and step in value:
                    nxt.append(value[step])
            values = nxt
            if not values:
                return None
        found = [len(v) for v in values if isinstance(v, (str, bytes, list, dict))]
        return max(found) if found else None

    return sizes
