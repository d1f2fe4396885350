"""Bounded YAML request bodies, decoded as upstream's ``sigs.k8s.io/yaml`` decodes them.

Design note. PyYAML resolves an alias to the anchored object itself, so a few hundred bytes of
nested aliases (a "billion laughs" document) become a graph that every later walk, and the JSON
encoder, expands in full. Upstream decodes with go-yaml v2, which counts every node it decodes,
including each one reached again through an alias, and fails a document whose decoding is mostly
alias expansion (``decode.go``: more than 100 alias-driven decodes, more than 1000 decodes in all,
and an alias share above ``allowedAliasRatio``: 99 % up to 400,000 decodes, falling to 10 % at
4,000,000) with ``yaml: document contains excessive aliasing``. This module builds values straight
from libyaml's events (one pass, no recursion), keeps go-yaml's two counters, and copies an
anchored value for each alias only once the counters allow it, so what is built is bounded by what
upstream would decode. Nesting is limited as for JSON (``jsonbody.MAX_DEPTH``; go-yaml's own
limit is 10000).

Then ``sigs.k8s.io/yaml`` turns map keys into JSON strings: booleans become ``"true"``/``"false"``,
integers their decimal text, floats Go's ``strconv.FormatFloat(f, 'g', -1, 64)``; any other key
(null, a list, a map) fails with ``unsupported map key of type: ...``. Only the first document of
a stream is read, as ``yaml.Unmarshal`` does. Timestamps stay strings (go-yaml v2 decodes them into
``interface{}`` as strings); ``!!binary`` becomes the decoded text.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import math
from typing import Any

import yaml

from kplane.api.errors import go_quote
from kplane.api.jsonbody import MAX_DEPTH

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

_T = "tag:yaml.org,2002:"


class YAMLError(ValueError):
    """The document cannot be decoded; the message is go-yaml's or sigs.k8s.io/yaml's text."""


def _excessive(decodes: int, aliases: int) -> bool:
    """go-yaml v2's test for a decode that is mostly alias expansion."""
    if aliases <= 100 or decodes <= 1000:
        return False
    if decodes <= 400_000:
        allowed = 0.99
    elif decodes >= 4_000_000:
        allowed = 0.10
    else:
        allowed = 0.99 - 0.89 * ((decodes - 400_000) / 3_600_000)
    return aliases / decodes > allowed


def loads(body: bytes | str) -> Any:
    """The first document of ``body`` as JSON-compatible values (``None`` when there is none).
    Raises ``YAMLError`` for syntax errors, excessive aliasing, excessive nesting and keys JSON
    cannot hold."""
    loader = _Loader(body)
    try:
        return _Builder(loader).document()
    except yaml.YAMLError as err:
        raise YAMLError(str(err)) from None
    finally:
        loader.dispose()


class _Frame:
    __slots__ = ("anchor", "depth", "key", "key_set", "sub", "value", "visits_at_start")

    def __init__(
        self, value: dict[str, Any] | list[Any], depth: int, anchor: str | None, visits: int
    ) -> None:
        self.value = value
        self.depth = depth
        self.anchor = anchor
        self.visits_at_start = visits
        self.key: Any = None
        self.key_set = False
        self.sub = 0  # deepest nesting below this collection


class _Merge:
    """The ``<<`` merge key."""


_MERGE = _Merge()


class _Builder:
    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.decodes = 0
        self.aliases = 0
        self.anchors: dict[str, tuple[Any, int, int]] = {}  # name -> (value, decodes, depth)
        self.open_anchors: set[str] = set()
        self.stack: list[_Frame] = []

    def document(self) -> Any:
        ld = self.loader
        ld.get_event()  # StreamStart
        if ld.check_event(yaml.StreamEndEvent):
            return None
        ld.get_event()  # DocumentStart
        self.decodes += 1  # the document node
        result: list[Any] = []
        while True:
            ev = ld.get_event()
            if isinstance(ev, yaml.ScalarEvent):
                self._count()
                self._place(self._scalar(ev), 0, ev.anchor, result)
            elif isinstance(ev, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                self._count()
                depth = len(self.stack) + 1
                if depth > MAX_DEPTH:
                    raise YAMLError(f"yaml: exceeded max depth of {MAX_DEPTH}")
                container: dict[str, Any] | list[Any] = {} if isinstance(ev, yaml.MappingStartEvent) else []
                if ev.anchor:
                    self.open_anchors.add(ev.anchor)
                self.stack.append(_Frame(container, depth, ev.anchor, self.decodes))
            elif isinstance(ev, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                frame = self.stack.pop()
                if frame.anchor:
                    self.open_anchors.discard(frame.anchor)
                exp = self.decodes - frame.visits_at_start + 1
                self._place(frame.value, frame.sub + 1, frame.anchor, result, exp=exp)
            elif isinstance(ev, yaml.AliasEvent):
                self._place_alias(str(ev.anchor), result)
            elif isinstance(ev, yaml.DocumentEndEvent):
                return result[0] if result else None

    def _count(self) -> None:
        self.decodes += 1
        if _excessive(self.decodes, self.aliases):
            raise YAMLError("yaml: document contains excessive aliasing")

    def _place_alias(self, name: str, result: list[Any]) -> None:
        if name in self.open_anchors:
            raise YAMLError(f"yaml: anchor '{name}' value contains itself")
        if name not in self.anchors:
            raise YAMLError(f"yaml: unknown anchor '{name}' referenced")
        value, exp, depth = self.anchors[name]
        self.decodes += 1 + exp  # the alias node, then its target decoded again
        self.aliases += exp
        if _excessive(self.decodes, self.aliases):
            raise YAMLError("yaml: document contains excessive aliasing")
        if len(self.stack) + depth > MAX_DEPTH:
            raise YAMLError(f"yaml: exceeded max depth of {MAX_DEPTH}")
        self._place(_copy(value), depth, None, result)

    def _place(self, value: Any, depth: int, anchor: str | None, result: list[Any], *, exp: int = 1) -> None:
        """Put a finished value into the open collection (or make it the document's value)."""
        if anchor:
            self.anchors[anchor] = (value, exp, depth)
            if depth:
                value = _copy(value)  # the anchored original stays pristine for later aliases
        frame = self.stack[-1] if self.stack else None
        if value is _MERGE and (frame is None or isinstance(frame.value, list) or frame.key_set):
            value = "<<"  # only a key ``<<`` merges
        if frame is None:
            result.append(value)
            return
        frame.sub = max(frame.sub, depth)
        container = frame.value
        if isinstance(container, list):
            container.append(value)
            return
        if not frame.key_set:
            frame.key = value
            frame.key_set = True
            return
        frame.key_set = False
        if frame.key is _MERGE:
            _merge(container, value)
        else:
            container[_json_key(frame.key, value)] = value

    def _scalar(self, ev: Any) -> Any:
        tag = ev.tag
        value: str = ev.value
        if tag is None or tag == "!":
            if not ev.implicit[0]:
                return value  # quoted: always a string
            tag = self.loader.resolve(yaml.ScalarNode, value, ev.implicit)
        if not tag.startswith(_T):
            return value  # local tags (!foo) are ignored, as go-yaml does into interface{}
        kind = tag[len(_T) :]
        try:
            if kind == "null":
                return None
            if kind == "bool":
                return self.loader.construct_yaml_bool(yaml.ScalarNode(tag, value))
            if kind == "int":
                number = self.loader.construct_yaml_int(yaml.ScalarNode(tag, value))
                # go-yaml falls back to a float for integers beyond int64/uint64
                return number if -(2**63) <= number < 2**64 else float(number)
            if kind == "float":
                return self.loader.construct_yaml_float(yaml.ScalarNode(tag, value))
            if kind == "merge":
                return _MERGE
            if kind == "binary":
                return base64.b64decode(value.encode("ascii"), validate=False).decode("utf-8", "replace")
        except (ValueError, KeyError, binascii.Error, UnicodeEncodeError):
            if kind == "binary":
                raise YAMLError("yaml: !!binary value contains invalid base64 data") from None
            raise YAMLError(f"yaml: cannot decode !!str `{value}` as a !!{kind}") from None
        return value  # str, timestamp and anything else: the text itself


def _merge(target: dict[str, Any], value: Any) -> None:
    """go-yaml v2's ``<<``: a map, or a list of maps where earlier ones win, merged in place."""
    if isinstance(value, dict):
        target.update(value)
        return
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        for item in reversed(value):
            target.update(item)
        return
    raise YAMLError("yaml: map merge requires map or sequence of maps as the value")


def _json_key(key: Any, value: Any) -> str:
    """sigs.k8s.io/yaml's conversion of a map key to a JSON object key (go-yaml's own error for
    collections as keys)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        if -(2**63) <= key < 2**63:
            return str(key)
        if 0 <= key < 2**64:
            raise YAMLError(
                f"unsupported map key of type: uint64, key: {hex(key)}, value: {_go_sharp(value)}"
            )
        return go_format_float(float(key))
    if isinstance(key, float):
        return go_format_float(key)
    if isinstance(key, dict | list):
        raise YAMLError(f"yaml: invalid map key: {_go_sharp(key)}")
    return_type = "%!s(<nil>)" if key is None else type(key).__name__
    raise YAMLError(
        f"unsupported map key of type: {return_type}, key: {_go_sharp(key)}, value: {_go_sharp(value)}"
    )


def _go_sharp(value: Any) -> str:
    """Go's ``%+#v`` of a decoded YAML value, for the simple cases error messages meet."""
    if value is None:
        return "<nil>"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return (
            "map[interface {}]interface {}{"
            + ", ".join(f"{_go_sharp(k)}:{_go_sharp(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_sharp(v) for v in value) + "}"
    return str(value)


def go_format_float(f: float) -> str:
    """Go's ``strconv.FormatFloat(f, 'g', -1, 64)``, with go-yaml's names for infinities and NaN."""
    if math.isnan(f):
        return ".nan"
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    sign, digits, exp = decimal.Decimal(repr(f)).as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp += len("".join(map(str, digits))) - len(ds)
    if ds == "0":
        return "-0" if sign else "0"
    point = len(ds) + exp  # digits before the decimal point
    e = point - 1
    neg = "-" if sign else ""
    if e < -4 or e >= 6:  # shortest formatting decides with precision 6, as Go does
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{neg}{mant}e{'+' if e >= 0 else '-'}{abs(e):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{ds}"
    if point >= len(ds):
        return neg + ds + "0" * (point - len(ds))
    return f"{neg}{ds[:point]}.{ds[point:]}"


def _copy(value: Any) -> Any:
    """A deep copy of JSON-compatible values (at most ``MAX_DEPTH`` deep)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
