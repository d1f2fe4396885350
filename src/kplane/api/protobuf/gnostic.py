"""Swagger 2.0 documents as gnostic's ``openapi.v2.Document`` protobuf.

kubectl and client-go ask ``/openapi/v2`` for ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``
only, and read the answer with gnostic's generated Go types (``github.com/google/gnostic-models/
openapiv2/OpenAPIv2.proto``). kube-apiserver produces it by parsing its JSON document with gnostic
(``openapi_v2.ParseDocument``) and marshalling the result; this module does the same walk over the
JSON document, for the subset of Swagger that Kubernetes documents use.

Field numbers are those of ``OpenAPIv2.proto``. Values gnostic keeps as ``Any`` (vendor extensions,
``default``, ``enum``, ``example``) carry their YAML text; JSON is YAML, so that text is the value's
JSON, which is what readers (kube-openapi's ``VendorExtensionToMap``, kubectl) unmarshal.
Repeated name/value pairs keep the JSON document's key order. Pure functions; no state.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from kplane.api.protobuf.encoding import varint

Json = dict[str, Any]


def _key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def _msg(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + varint(len(payload)) + payload


def _str(number: int, value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        return b""
    return _msg(number, value.encode())


def _strs(number: int, values: Any) -> bytes:
    if not isinstance(values, list):
        return b""
    return b"".join(_msg(number, v.encode()) for v in values if isinstance(v, str))


def _bool(number: int, value: Any) -> bytes:
    return _key(number, 0) + b"\x01" if value is True else b""


def _int(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or value == 0:
        return b""
    return _key(number, 0) + varint(value)


def _double(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float) or value == 0:
        return b""
    return _key(number, 1) + struct.pack("<d", float(value))


def _any(value: Any) -> bytes:
    """gnostic ``Any``: the value's YAML text in field 2."""
    return _msg(2, orjson.dumps(value) + b"\n")


def _extensions(number: int, obj: Json) -> bytes:
    """Every ``x-`` key of ``obj`` as a repeated ``NamedAny`` field."""
    return b"".join(
        _msg(number, _str(1, name) + _msg(2, _any(value)))
        for name, value in obj.items()
        if name.startswith("x-")
    )


def _named(number: int, mapping: Any, encode: Callable[[Any], bytes]) -> bytes:
    """A JSON object as a repeated ``Named*`` field (name 1, value 2), in key order."""
    if not isinstance(mapping, dict):
        return b""
    return b"".join(_msg(number, _str(1, name) + _msg(2, encode(value))) for name, value in mapping.items())


def _repeated(number: int, items: Any, encode: Callable[[Any], bytes]) -> bytes:
    if not isinstance(items, list):
        return b""
    return b"".join(_msg(number, encode(item)) for item in items)


# --- Schema ----------------------------------------------------------------------------------------


def schema(s: Any) -> bytes:
    """One JSON Schema (Swagger dialect) as ``openapi.v2.Schema``."""
    if not isinstance(s, dict):
        return b""
    out = [
        _str(1, s.get("$ref")),
        _str(2, s.get("format")),
        _str(3, s.get("title")),
        _str(4, s.get("description")),
        _msg(5, _any(s["default"])) if "default" in s else b"",
        _double(6, s.get("multipleOf")),
        _double(7, s.get("maximum")),
        _bool(8, s.get("exclusiveMaximum")),
        _double(9, s.get("minimum")),
        _bool(10, s.get("exclusiveMinimum")),
        _int(11, s.get("maxLength")),
        _int(12, s.get("minLength")),
        _str(13, s.get("pattern")),
        _int(14, s.get("maxItems")),
        _int(15, s.get("minItems")),
        _bool(16, s.get("uniqueItems")),
        _int(17, s.get("maxProperties")),
        _int(18, s.get("minProperties")),
        _strs(19, s.get("required")),
        _repeated(20, s.get("enum"), _any),
    ]
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        out.append(_msg(21, _msg(1, schema(extra))))
    elif isinstance(extra, bool):
        out.append(_msg(21, _key(2, 0) + (b"\x01" if extra else b"\x00")))
    kind = s.get("type")
    if isinstance(kind, str):
        out.append(_msg(22, _msg(1, kind.encode())))
    items = s.get("items")
    if isinstance(items, dict):
        out.append(_msg(23, _msg(1, schema(items))))
    out.append(_repeated(24, s.get("allOf"), schema))
    if isinstance(s.get("properties"), dict):
        out.append(_msg(25, _named(1, s["properties"], schema)))
    out.append(_str(26, s.get("discriminator")))
    out.append(_bool(27, s.get("readOnly")))
    if "example" in s:
        out.append(_msg(30, _any(s["example"])))
    out.append(_extensions(31, s))
    return b"".join(out)


# --- paths -----------------------------------------------------------------------------------------


def _non_body(p: Json) -> bytes:
    """A query, path or header parameter (``NonBodyParameter``)."""
    where = p.get("in")
    common = (
        _bool(1, p.get("required")) + _str(2, where) + _str(3, p.get("description")) + _str(4, p.get("name"))
    )
    if where == "query":
        # QueryParameterSubSchema: type 6, format 7, uniqueItems 20, extensions 23
        sub = common + _str(6, p.get("type")) + _str(7, p.get("format")) + _bool(20, p.get("uniqueItems"))
        return _msg(3, sub + _extensions(23, p))
    # Path and header sub-schemas share their numbers: type 5, format 6, uniqueItems 19, extensions 22
    sub = common + _str(5, p.get("type")) + _str(6, p.get("format")) + _bool(19, p.get("uniqueItems"))
    return _msg(4 if where == "path" else 1, sub + _extensions(22, p))


def parameter(p: Any) -> bytes:
    """One entry of a ``parameters`` list (``ParametersItem``)."""
    if not isinstance(p, dict):
        return b""
    if "$ref" in p:
        return _msg(2, _str(1, p["$ref"]))
    if p.get("in") == "body":
        body = (
            _str(1, p.get("description"))
            + _str(2, p.get("name"))
            + _str(3, "body")
            + _bool(4, p.get("required"))
            + _msg(5, schema(p.get("schema")))
            + _extensions(6, p)
        )
        return _msg(1, _msg(1, body))
    return _msg(1, _msg(2, _non_body(p)))


def _response(r: Any) -> bytes:
    if not isinstance(r, dict):
        return b""
    if "$ref" in r:
        return _msg(2, _str(1, r["$ref"]))
    body = _str(1, r.get("description"))
    if isinstance(r.get("schema"), dict):
        body += _msg(2, _msg(1, schema(r["schema"])))
    return _msg(1, body + _extensions(5, r))


def operation(op: Any) -> bytes:
    if not isinstance(op, dict):
        return b""
    return b"".join(
        (
            _strs(1, op.get("tags")),
            _str(2, op.get("summary")),
            _str(3, op.get("description")),
            _str(5, op.get("operationId")),
            _strs(6, op.get("produces")),
            _strs(7, op.get("consumes")),
            _repeated(8, op.get("parameters"), parameter),
            _msg(9, _named(1, op.get("responses"), _response)) if "responses" in op else b"",
            _strs(10, op.get("schemes")),
            _bool(11, op.get("deprecated")),
            _extensions(13, op),
        )
    )


_METHODS = (("get", 2), ("put", 3), ("post", 4), ("delete", 5), ("options", 6), ("head", 7), ("patch", 8))


def path_item(item: Any) -> bytes:
    if not isinstance(item, dict):
        return b""
    out = [_str(1, item.get("$ref"))]
    out.extend(_msg(number, operation(item[method])) for method, number in _METHODS if method in item)
    out.append(_repeated(9, item.get("parameters"), parameter))
    out.append(_extensions(10, item))
    return b"".join(out)


# --- document --------------------------------------------------------------------------------------


def _security_requirement(req: Any) -> bytes:
    return _named(1, req, lambda scopes: _strs(1, scopes))


def _security_definition(d: Any) -> bytes:
    if not isinstance(d, dict) or d.get("type") != "apiKey":
        return b""
    api_key = (
        _str(1, "apiKey") + _str(2, d.get("name")) + _str(3, d.get("in")) + _str(4, d.get("description"))
    )
    return _msg(2, api_key + _extensions(5, d))


def document(doc: Json) -> bytes:
    """A whole Swagger 2.0 document as a serialized ``openapi.v2.Document``."""
    raw_info = doc.get("info")
    info: Json = raw_info if isinstance(raw_info, dict) else {}
    parts: Iterable[bytes] = (
        _str(1, doc.get("swagger")),
        _msg(2, _str(1, info.get("title")) + _str(2, info.get("version")) + _str(3, info.get("description"))),
        _str(3, doc.get("host")),
        _str(4, doc.get("basePath")),
        _strs(5, doc.get("schemes")),
        _strs(6, doc.get("consumes")),
        _strs(7, doc.get("produces")),
        _msg(8, _named(2, doc.get("paths"), path_item)),
        _msg(9, _named(1, doc.get("definitions"), schema)),
        _repeated(12, doc.get("security"), _security_requirement),
        _msg(13, _named(1, doc.get("securityDefinitions"), _security_definition))
        if "securityDefinitions" in doc
        else b"",
        _extensions(16, doc),
    )
    return b"".join(parts)
