"""Cell formatting shared by the printers: ages, label sets, selectors, container lists.

Each helper reproduces the string kube-apiserver's printers put in the same cell (for
example ``"<none>"`` for an empty label set, ``"a=b,c in (x,y)"`` for a selector), because
kubectl prints cells verbatim.
"""

from __future__ import annotations

import datetime
import decimal
import math
from dataclasses import dataclass, field
from typing import Any

from kplane.api import duration

Obj = dict[str, Any]

NONE = "<none>"
UNKNOWN = "<unknown>"


@dataclass(slots=True)
class Context:
    """Per-table state: the instant ages are measured from, and a cache of computed ages.

    Objects created in the same second share an age string, so caching by timestamp text makes
    large lists cheap. One context serves one table; it is not shared between requests.
    """

    now: datetime.datetime
    _ages: dict[str, str] = field(default_factory=dict)

    def age(self, timestamp: object) -> str:
        """Human duration since ``timestamp``; ``"<unknown>"`` when absent or invalid."""
        if not isinstance(timestamp, str):
            return UNKNOWN
        cached = self._ages.get(timestamp)
        if cached is None:
            cached = self._ages[timestamp] = duration.age(timestamp, self.now)
        return cached

    def between(self, start: object, end: object) -> str:
        """Human duration from ``start`` to ``end`` (both RFC 3339); ``""`` if either is bad."""
        a, b = duration.parse_timestamp(start), duration.parse_timestamp(end)
        if a is None or b is None:
            return ""
        return duration.human_duration((b - a).total_seconds())


def get(obj: Any, *keys: str) -> Any:
    """Walk nested dicts; None as soon as a level is missing or not a dict."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def as_dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any, default: int = 0) -> int:
    """An integer field; ``default`` when absent or not a number (never raises)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return go_int64(value)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def go_int64(value: int | float) -> int:
    """Go's ``int64(v)`` of a decoded JSON number: integers beyond int64 arrive as float64, and a
    float64 outside int64's range (or NaN) converts to the minimum int64, as on amd64."""
    if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
        return value
    number = float(value)
    if number != number or not _INT64_MIN <= number < 2.0**63:
        return _INT64_MIN
    return int(number)


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def format_labels(labels: Any) -> str:
    """``k=v`` pairs sorted by key, comma-separated; ``"<none>"`` when empty."""
    if not isinstance(labels, dict) or not labels:
        return NONE
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def selector_string(selector: Any) -> str:
    """A ``LabelSelector`` in label-selector syntax; ``""`` for nil or empty selectors.

    Requirements are sorted by key (match labels before expressions on ties); ``In``/``NotIn``
    values are sorted; an invalid expression gives ``"<error>"``.
    """
    if not isinstance(selector, dict):
        return ""
    parts: list[tuple[str, str]] = []
    for key, value in sorted(as_dict(selector.get("matchLabels")).items()):
        parts.append((key, f"{key}={value}"))
    for expr in as_list(selector.get("matchExpressions")):
        key = as_str(get(expr, "key"))
        op = get(expr, "operator")
        values = sorted(str(v) for v in as_list(get(expr, "values")))
        if op == "In" and values:
            text = f"{key} in ({','.join(values)})"
        elif op == "NotIn" and values:
            text = f"{key} notin ({','.join(values)})"
        elif op == "Exists" and not values:
            text = key
        elif op == "DoesNotExist" and not values:
            text = f"!{key}"
        else:
            return "<error>"
        parts.append((key, text))
    parts.sort(key=lambda p: p[0])
    return ",".join(text for _, text in parts)


def format_selector(selector: Any) -> str:
    """Like ``selector_string`` but ``"<none>"`` for nil or empty (metav1.FormatLabelSelector)."""
    return selector_string(selector) or NONE


def containers(pod_spec: Any) -> tuple[str, str]:
    """Comma-separated container names and images of a pod spec."""
    items = [c for c in as_list(get(pod_spec, "containers")) if isinstance(c, dict)]
    names = ",".join(as_str(c.get("name")) for c in items)
    images = ",".join(as_str(c.get("image")) for c in items)
    return names, images


def list_with_more(items: list[str], total: int, limit: int = 3, empty: str = "") -> str:
    """The first ``limit`` items joined by commas, with ``" + N more..."`` when truncated."""
    text = ",".join(items[:limit])
    if total > limit:
        return f"{text} + {total - limit} more..."
    return text or empty


def bool_text(value: Any, default: bool = False) -> str:
    """``"True"``/``"False"`` as Go's printers spell booleans."""
    flag = value if isinstance(value, bool) else default
    return "True" if flag else "False"


def go_text(value: Any) -> str:
    """``value`` as Go's ``fmt.Sprint`` prints decoded JSON (how JSONPath string cells read)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_text(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    return str(value)


def go_float(value: float) -> str:
    """A float as Go's ``%v`` prints it: shortest digits, exponent form below 1e-4 or from 1e6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    number = decimal.Decimal(repr(value)).normalize()
    sign, digits, exp = number.as_tuple()
    assert isinstance(exp, int)  # finite by the checks above
    point = len(digits) + exp - 1
    if -4 <= point < 6:
        return format(number, "f")
    text = "".join(map(str, digits))
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'+' if point >= 0 else '-'}{abs(point):02d}"
