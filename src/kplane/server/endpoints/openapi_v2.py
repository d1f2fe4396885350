"""The ``/openapi/v2`` document (Swagger 2.0), in JSON and as gnostic protobuf.

kubectl falls back to it when ``/openapi/v3`` is unusable (validation, ``apply``'s patch
computation, ``explain --output=plaintext-openapiv2``), and it is what client-go's
``OpenAPISchema()`` and older kubectls read. It is derived from the OpenAPI v3 group-version
documents (``openapi``), so both always describe the same catalog, custom resources included:

- schemas move from ``#/components/schemas`` to ``#/definitions`` under the same names
  (``io.k8s.api.apps.v1.Deployment``), a lone ``allOf: [$ref]`` becomes a ``$ref`` with its
  siblings (as upstream's v2 writes it), IntOrString and Quantity become ``type: string``
  (``format: int-or-string`` for the former), and what Swagger 2.0 cannot say (``oneOf``,
  ``anyOf``, ``not``, ``nullable``) is dropped, as kube-apiserver does for its v2 document;
- each operation's ``requestBody`` becomes a ``body`` parameter, its responses keep the JSON
  schema, query and path parameters carry their type inline; ``x-kubernetes-*`` extensions stay.

The document is built on first request and cached until the catalog changes; its ETag is the
upper-case SHA-512 of the JSON bytes for both media types, as kube-openapi does.
"""

from __future__ import annotations

from typing import Any

import orjson

from kplane.api import catalog as catalog_mod
from kplane.api.protobuf import gnostic
from kplane.server.endpoints import discovery, openapi

Json = dict[str, Any]

JSON = "application/json"
# The media type kubectl asks for, and the one kube-openapi also accepts; both are answered with
# the second as Content-Type (kube-openapi pkg/handler/handler.go).
PROTOBUF_REQUESTED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

_V3_PREFIX = "#/components/schemas/"
_V2_PREFIX = "#/definitions/"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_DROPPED = frozenset({"oneOf", "anyOf", "not", "nullable"})
_PRODUCES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]

_cache = discovery.GenerationCache()


def _schema(node: Any) -> Any:
    """One v3 schema node in the Swagger 2.0 dialect (a new value; the input is not modified)."""
    if isinstance(node, list):
        return [_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: Json = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "$ref" and isinstance(value, str):
            out[key] = _V2_PREFIX + value.removeprefix(_V3_PREFIX)
        elif key == "allOf" and isinstance(value, list) and len(value) == 1 and "$ref" in value[0]:
            out["$ref"] = _V2_PREFIX + str(value[0]["$ref"]).removeprefix(_V3_PREFIX)
        elif key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _schema(s) for name, s in value.items()}
        elif key in ("items", "additionalProperties", "allOf"):
            out[key] = _schema(value)
        else:
            out[key] = value
    return out


def _definition(name: str, node: Json) -> Json:
    if name == _INT_OR_STRING:
        return {"description": node.get("description", ""), "type": "string", "format": "int-or-string"}
    if name == _QUANTITY:
        return {"description": node.get("description", ""), "type": "string"}
    converted: Json = _schema(node)
    return converted


def _parameter(p: Json) -> Json:
    out: Json = {k: v for k, v in p.items() if k != "schema"}
    kind = (p.get("schema") or {}).get("type")
    if kind:
        out["type"] = kind
    if p.get("in") == "query":
        out["uniqueItems"] = True
    return out


def _operation(op: Json) -> Json:
    out: Json = {}
    for key, value in op.items():
        if key in ("requestBody", "responses", "parameters"):
            continue
        out[key] = value
    params = [_parameter(p) for p in op.get("parameters") or ()]
    body = op.get("requestBody")
    if isinstance(body, dict):
        content: Json = body.get("content") or {}
        first: Json = next(iter(content.values()), {})
        params.insert(
            0, {"name": "body", "in": "body", "required": True, "schema": _schema(first.get("schema"))}
        )
        consumes = [t for t in content if t != "*/*"]
        out["consumes"] = consumes or ["*/*"]
    out["produces"] = _PRODUCES
    out["schemes"] = ["https"]
    if params:
        out["parameters"] = params
    responses: Json = {}
    for code, response in (op.get("responses") or {}).items():
        converted: Json = {"description": response.get("description", "")}
        media: Json = response.get("content") or {}
        chosen: Json = media.get("application/json") or next(iter(media.values()), {})
        schema = chosen.get("schema")
        if schema is not None:
            converted["schema"] = _schema(schema)
        responses[code] = converted
    out["responses"] = responses
    return out


def _path_item(item: Json) -> Json:
    out: Json = {}
    for key, value in item.items():
        if key == "parameters":
            out[key] = [_parameter(p) for p in value]
        elif key in ("get", "put", "post", "delete", "patch", "head", "options"):
            out[key] = _operation(value)
        else:
            out[key] = value
    return out


def document(catalog: catalog_mod.Catalog) -> Json:
    """The whole Swagger 2.0 document of every served group-version (cached per catalog generation)."""

    def build() -> Json:
        paths: Json = {}
        definitions: Json = {}
        for gv in catalog.group_versions():
            found = openapi.document_bytes_and_etag(catalog, gv.group, gv.version)
            if found is None:
                continue
            v3 = orjson.loads(found[0])
            for path, item in v3.get("paths", {}).items():
                paths[path] = _path_item(item)
            for name, node in v3.get("components", {}).get("schemas", {}).items():
                if name not in definitions:
                    definitions[name] = _definition(name, node)
        return {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": discovery.GIT_VERSION},
            "paths": dict(sorted(paths.items())),
            "definitions": dict(sorted(definitions.items())),
            "securityDefinitions": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "type": "apiKey",
                    "name": "authorization",
                    "in": "header",
                }
            },
            "security": [{"BearerToken": []}],
        }

    doc: Json = _cache.get(catalog, "document", build)
    return doc


def json_bytes_and_etag(catalog: catalog_mod.Catalog) -> tuple[bytes, str]:
    """The JSON document and its ETag (upper-case SHA-512 hex of these bytes, unquoted)."""

    def build() -> tuple[bytes, str]:
        body = orjson.dumps(document(catalog))
        return body, discovery.etag_of(body).upper()

    found: tuple[bytes, str] = _cache.get(catalog, "json", build)
    return found


def protobuf_bytes_and_etag(catalog: catalog_mod.Catalog) -> tuple[bytes, str]:
    """The gnostic protobuf document and the JSON document's ETag."""

    def build() -> tuple[bytes, str]:
        return gnostic.document(document(catalog)), json_bytes_and_etag(catalog)[1]

    found: tuple[bytes, str] = _cache.get(catalog, "protobuf", build)
    return found


def negotiate(accept: str) -> str | None:
    """The media type to answer (``JSON`` or ``PROTOBUF``), or None (406), as kube-openapi
    chooses: clauses by decreasing quality, the first that matches wins; ``*/*`` means JSON."""
    clauses: list[tuple[float, int, str]] = []
    for i, raw in enumerate((accept or "*/*").split(",")):
        media, *params = (p.strip() for p in raw.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if media and quality > 0:
            clauses.append((-quality, i, media.lower()))
    for _, _, media in sorted(clauses):
        kind, _, sub = media.partition("/")
        if kind in ("application", "*") and sub in ("json", "*"):
            return JSON
        if kind in ("application", "*") and media.endswith(
            (
                "com.github.proto-openapi.spec.v2@v1.0+protobuf",
                "com.github.proto-openapi.spec.v2.v1.0+protobuf",
            )
        ):
            return PROTOBUF
    return None
