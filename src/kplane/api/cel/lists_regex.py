"""Kubernetes' CEL Lists and Regex libraries (apiserver pkg/cel/library/{lists,regex}.go, 1.0).

Lists: ``isSorted() sum() min() max() indexOf(x) lastIndexOf(x)`` on lists of comparable element
types; ``min``/``max`` of an empty list are errors, ``sum`` of an empty list is the type's zero.
Regex: ``s.find(re)`` (the first match or ``''``), ``s.findAll(re)`` and ``s.findAll(re, n)``
(at most ``n`` matches, all when ``n < 0``). Patterns are RE2 (``google-re2``), as upstream's, so
matching stays linear in the input whatever the pattern (no catastrophic backtracking on hostile
objects); they are compiled once and cached.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import re2
from cel_expr_python import cel

T = cel.Type

_ORDERED: dict[str, Any] = {
    "int": T.INT,
    "uint": T.UINT,
    "double": T.DOUBLE,
    "string": T.STRING,
    "bool": T.BOOL,
    "bytes": T.BYTES,
    "duration": T.DURATION,
    "timestamp": T.TIMESTAMP,
}
_ZERO = ("int", "uint", "double")
# The engine takes no duration or timestamp back from a Python function declared dyn, so min, max
# and sum of such lists are not offered (upstream has them).
_TIMES = ("duration", "timestamp")


def _is_sorted(items: Sequence[Any]) -> bool:
    return all(items[i] <= items[i + 1] for i in range(len(items) - 1))


def _extreme(name: str, pick: Callable[[Sequence[Any]], Any]) -> Callable[[Sequence[Any]], Any]:
    def impl(items: Sequence[Any]) -> Any:
        if not items:
            raise ValueError(f"{name} called on empty list")
        return pick(items)

    return impl


def _index_of(items: Sequence[Any], x: Any) -> int:
    for i, item in enumerate(items):
        if item == x and type(item) is type(x):
            return i
    return -1


def _last_index_of(items: Sequence[Any], x: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if items[i] == x and type(items[i]) is type(x):
            return i
    return -1


def _kind(t: Any) -> str:
    name = str(t.name()).lower()
    return "list" if name.startswith("list") else name


def _decls(overloads: dict[str, list[tuple[str, Any, list[Any], Any]]]) -> list[Any]:
    """FunctionDecls from ``name -> [(id, result, params, impl)]``. The runtime dispatches on
    argument kinds only (every list is "list"), so each kind signature gets one implementation
    (the first, written to serve every element type) and the checker sees every typed overload.
    The runtime also checks the implementation's result against its overload's declared type, so
    an implementing overload whose result varies with the element type declares ``dyn``."""
    decls = []
    for name, items in overloads.items():
        seen: set[tuple[str, ...]] = set()
        built = []
        for oid, result, params, impl in items:
            key = tuple(_kind(p) for p in params)
            if key in seen:
                built.append(cel.Overload(oid, result, params, is_member=True))
            else:
                seen.add(key)
                varies = name in ("min", "max", "sum")
                built.append(
                    cel.Overload(oid, T.DYN if varies else result, params, is_member=True, impl=impl)
                )
        decls.append(cel.FunctionDecl(name, built))
    return decls


def list_functions(extra: Sequence[tuple[str, str, Any, list[Any], Any]] = ()) -> list[Any]:
    """The Lists library's declarations, one overload per element type; ``extra`` adds
    ``(name, id, result, params, impl)`` member overloads of other libraries sharing a name
    (the strings extension's ``indexOf``/``lastIndexOf``)."""
    table: dict[str, list[tuple[str, Any, list[Any], Any]]] = {
        n: [] for n in ("isSorted", "sum", "min", "max", "indexOf", "lastIndexOf")
    }
    for name, elem in _ORDERED.items():
        lst = T.List(elem)
        table["isSorted"].append((f"list_{name}_is_sorted", T.BOOL, [lst], _is_sorted))
        if name not in _TIMES:
            table["min"].append((f"list_{name}_min", elem, [lst], _extreme("min", min)))
            table["max"].append((f"list_{name}_max", elem, [lst], _extreme("max", max)))
        table["indexOf"].append((f"list_{name}_index_of", T.INT, [lst, elem], _index_of))
        table["lastIndexOf"].append((f"list_{name}_last_index_of", T.INT, [lst, elem], _last_index_of))
        if name in _ZERO:
            table["sum"].append((f"list_{name}_sum", elem, [lst], _sum_any))
    for name, oid, result, params, impl in extra:
        table[name].append((oid, result, params, impl))
    return _decls(table)


def _sum_any(items: Sequence[Any]) -> Any:
    if not items:
        return 0  # the checker knows the element type; an empty typed list sums to its zero
    total = items[0]
    for item in items[1:]:
        total = total + item
    return total


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise ValueError(f"error parsing regexp: {exc}") from None


def _find(s: str, pattern: str) -> str:
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    out = []
    for m in _regex(pattern).finditer(s):
        out.append(m.group(0))
        if n > 0 and len(out) >= n:
            break
    return out


def regex_functions() -> list[Any]:
    """The Regex library's declarations."""
    return [
        cel.FunctionDecl(
            "find",
            [cel.Overload("string_find_string", T.STRING, [T.STRING, T.STRING], is_member=True, impl=_find)],
        ),
        cel.FunctionDecl(
            "findAll",
            [
                cel.Overload(
                    "string_find_all_string",
                    T.List(T.STRING),
                    [T.STRING, T.STRING],
                    is_member=True,
                    impl=_find_all,
                ),
                cel.Overload(
                    "string_find_all_string_int",
                    T.List(T.STRING),
                    [T.STRING, T.STRING, T.INT],
                    is_member=True,
                    impl=_find_all,
                ),
            ],
        ),
    ]
