"""gnostic ``openapi.v2.Document`` encoding: the field numbers of OpenAPIv2.proto, read back with
the wire reader."""

from __future__ import annotations

from typing import Any

from kplane.api.protobuf import gnostic, wire


def _fields(buf: Any) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for number, _, value in wire.fields(memoryview(bytes(buf))):
        out.setdefault(number, []).append(value)
    return out


DOC = {
    "swagger": "2.0",
    "info": {"title": "Kubernetes", "version": "v1.32.4"},
    "paths": {
        "/api/v1/namespaces/{namespace}/configmaps/{name}": {
            "parameters": [{"name": "name", "in": "path", "required": True, "type": "string"}],
            "patch": {
                "operationId": "patchCoreV1NamespacedConfigMap",
                "parameters": [
                    {"name": "body", "in": "body", "required": True, "schema": {"type": "object"}},
                    {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": True},
                ],
                "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/X"}}},
                "x-kubernetes-group-version-kind": {"group": "", "kind": "ConfigMap", "version": "v1"},
            },
        }
    },
    "definitions": {
        "X": {
            "type": "object",
            "required": ["a"],
            "properties": {"a": {"type": "array", "items": {"type": "string"}}},
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "X", "version": "v1"}],
        }
    },
}


def test_document_fields() -> None:
    """swagger 1, info 2, paths 8 (NamedPathItem 2), definitions 9 (NamedSchema 1)."""
    top = _fields(gnostic.document(DOC))
    assert bytes(top[1][0]) == b"2.0"
    assert bytes(_fields(top[2][0])[1][0]) == b"Kubernetes"
    (named_path,) = _fields(top[8][0])[2]
    path = _fields(named_path)
    assert bytes(path[1][0]) == b"/api/v1/namespaces/{namespace}/configmaps/{name}"
    item = _fields(path[2][0])
    patch = _fields(item[8][0])  # PathItem.patch
    assert bytes(patch[5][0]) == b"patchCoreV1NamespacedConfigMap"
    body, query = (_fields(p) for p in patch[8])
    assert 1 in _fields(body[1][0])  # Parameter.body_parameter
    query_sub = _fields(_fields(_fields(query[1][0])[2][0])[3][0])  # non_body -> query sub-schema
    assert bytes(query_sub[4][0]) == b"fieldValidation" and bytes(query_sub[2][0]) == b"query"
    (ext,) = patch[13]
    ext_fields = _fields(ext)
    assert bytes(ext_fields[1][0]) == b"x-kubernetes-group-version-kind"
    yaml_text = bytes(_fields(ext_fields[2][0])[2][0])
    assert yaml_text == b'{"group":"","kind":"ConfigMap","version":"v1"}\n'


def test_schema_fields() -> None:
    """Schema: type 22, required 19, properties 25, items 23, vendor extensions 31."""
    s = _fields(gnostic.schema(DOC["definitions"]["X"]))
    assert bytes(_fields(s[22][0])[1][0]) == b"object"
    assert bytes(s[19][0]) == b"a"
    (prop,) = _fields(s[25][0])[1]
    a = _fields(_fields(prop)[2][0])
    items = _fields(_fields(a[23][0])[1][0])
    assert bytes(_fields(items[22][0])[1][0]) == b"string"
    assert 31 in s
