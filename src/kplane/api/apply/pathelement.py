"""Path elements: the steps of a field path in their ``FieldsV1`` spelling, how to order and print them.

A path element is kept as the string ``FieldsV1`` uses for it, because that spelling is already a
canonical, hashable identity:

* ``f:<name>``: a field of a struct or a key of a map;
* ``k:<json>``: the entry of a ``map`` list whose key fields have these values
  (``k:{"containerPort":80,"protocol":"TCP"}``, keys sorted, compact JSON);
* ``v:<json>``: the member of a ``set`` list with this value (``v:"foregroundDeletion"``);
* ``i:<n>``: a position in a list (read and written, never produced by kplane).

The JSON inside ``k:``/``v:`` is written as Go's ``encoding/json`` writes it (``canonical_json``), so
equal values give equal strings. Order follows structured-merge-diff's ``PathElement.Compare``:
``f:`` < ``k:`` < ``v:`` < ``i:``, each ordered by value (numbers < strings < booleans < lists <
maps < null). ``element_string`` and ``path_string`` print paths as its ``Path.String()`` does
(apply conflict messages). Pure functions; the two per-element ones are memoised (bounded).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import orjson

from kplane.api import errors

Path = tuple[str, ...]


def canonical_json(value: Any) -> str:
    """Compact JSON of ``value`` as Go's ``encoding/json`` writes it inside ``k:``/``v:`` elements.

    Map keys are sorted, integral floats are written as integers and ``<``, ``>``, ``&``, U+2028
    and U+2029 are escaped as Go does. Floats otherwise use Python's shortest form, which differs
    from Go's only for exponents (``1e21`` against ``1e+21``).
    """
    if isinstance(value, str | int) or (
        isinstance(value, dict) and all(type(v) is str or type(v) is int for v in value.values())
    ):
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    else:
        text = orjson.dumps(_normalize_numbers(value), option=orjson.OPT_SORT_KEYS).decode()
    if any(c in text for c in "<>&\u2028\u2029"):
        for raw, esc in (
            ("<", "\\u003c"),
            (">", "\\u003e"),
            ("&", "\\u0026"),
            ("\u2028", "\\u2028"),
            ("\u2029", "\\u2029"),
        ):
            text = text.replace(raw, esc)
    return text


def _normalize_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _normalize_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize_numbers(v) for v in value]
    return value


def field(name: str) -> str:
    """The path element of a struct field or map key."""
    return "f:" + name


def key(fields: Mapping[str, Any]) -> str:
    """The path element of a ``map`` list entry with these key field values."""
    return "k:" + canonical_json(dict(fields))


def value(item: Any) -> str:
    """The path element of a ``set`` list member."""
    return "v:" + canonical_json(item)


def index(i: int) -> str:
    """The path element of a list position."""
    return f"i:{i}"


# ---------------------------------------------------------------------------------------------
# Display, as structured-merge-diff's Path.String(): ".spec.containers[name=\"nginx\"].image".


def _go_value(v: Any) -> str:
    """Render a value as structured-merge-diff's ``value.ToString``: strings quoted as Go ``%q``."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return errors.go_quote(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, list):
        return "[" + ",".join(_go_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "".join(f"{k}={_go_value(x)}" for k, x in v.items())
    return str(v)


@functools.lru_cache(maxsize=8192)
def element_string(pe: str) -> str:
    """One path element for humans: ``.name``, ``[name="x",port=80]``, ``[="x"]``, ``[3]``."""
    kind, body = pe[:2], pe[2:]
    if kind == "f:":
        return "." + body
    if kind == "k:":
        parsed = orjson.loads(body)
        return "[" + ",".join(f"{k}={_go_value(parsed[k])}" for k in sorted(parsed)) + "]"
    if kind == "v:":
        return "[=" + _go_value(orjson.loads(body)) + "]"
    if kind == "i:":
        return "[" + body + "]"
    return "{{invalid path element}}"


def path_string(path: Path) -> str:
    """A whole path for humans, as in apply conflict messages: ``.spec.replicas``."""
    return "".join(element_string(pe) for pe in path)


# ---------------------------------------------------------------------------------------------
# Ordering of path elements (structured-merge-diff PathElement.Compare).


def _value_order(v: Any) -> tuple[Any, ...]:
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, int | float):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, list):
        return (3, tuple(_value_order(x) for x in v))
    if isinstance(v, dict):
        return (4, tuple((k, _value_order(v[k])) for k in sorted(v)))
    return (5,)


@functools.lru_cache(maxsize=8192)
def element_order(pe: str) -> tuple[Any, ...]:
    """A sort key giving upstream's order of path elements (see the module docstring)."""
    kind, body = pe[:2], pe[2:]
    if kind == "f:":
        return (0, body)
    if kind == "k:":
        parsed = orjson.loads(body)
        return (1, tuple((k, _value_order(parsed[k])) for k in sorted(parsed)))
    if kind == "v:":
        return (2, _value_order(orjson.loads(body)))
    if kind == "i:":
        return (3, int(body))
    return (4, body)
