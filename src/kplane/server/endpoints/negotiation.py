"""Content negotiation: decoding request bodies and choosing the response form.

Request bodies: JSON (``application/json``, or no content type), YAML (``application/yaml``),
Kubernetes protobuf (``application/vnd.kubernetes.protobuf``, decoded to the same JSON shape) and the
four patch types. Responses are JSON, or a ``meta.k8s.io/v1`` Table when the ``Accept`` header asks
for one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import orjson
import yaml

from kplane._util.lazy import lazy_module
from kplane.api import errors

if TYPE_CHECKING:
    from kplane.api import protobuf
else:
    protobuf = lazy_module("kplane.api.protobuf")  # ~30 ms of tables, needed only for protobuf bodies

MAX_BODY_BYTES = 3 * 1024 * 1024

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader


def media_type(content_type: str | None) -> str:
    """The bare media type, lower-cased, without parameters such as ``charset``."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def decode_object(body: bytes, content_type: str | None) -> dict[str, Any]:
    """A JSON or YAML request body as an object; 400 for malformed input, 415 for other types."""
    mt = media_type(content_type)
    if mt in ("", JSON, "*/*", "text/plain"):
        value = _loads_json(body)
    elif mt in (YAML, "application/x-yaml", "text/yaml"):
        value = _loads_yaml(body)
    elif mt == PROTOBUF:
        value = _loads_protobuf(body)
    else:
        raise errors.UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml"
        )
    if not isinstance(value, dict):
        raise errors.BadRequest("the request body must be a JSON or YAML object")
    return value


def duplicate_fields(body: bytes, content_type: str | None) -> list[str]:
    """Fields that appear twice in one JSON object of ``body`` (``duplicate field "name"``), for
    ``fieldValidation`` Strict/Warn. orjson keeps the last value silently, so the body is parsed once
    more with the standard library, which can see every key of every object."""
    if media_type(content_type) not in ("", JSON, "*/*", "text/plain", MERGE_PATCH, STRATEGIC_PATCH):
        return []
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                found.append(f'duplicate field "{key}"')
            seen.add(key)
        return dict(items)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except ValueError:
        return []
    return found


def decode_patch(body: bytes, mt: str) -> Any:
    """A patch body: JSON for JSON/merge/strategic patches, YAML (or JSON) for apply patches."""
    if mt == APPLY_PATCH:
        value = _loads_yaml(body)
        if not isinstance(value, dict):
            raise errors.BadRequest("the apply patch must be a YAML or JSON object")
        return value
    value = _loads_json(body)
    if mt == JSON_PATCH and not isinstance(value, list):
        raise errors.BadRequest("json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp")
    if mt != JSON_PATCH and not isinstance(value, dict):
        raise errors.BadRequest("the patch must be a JSON object")
    return value


def _loads_protobuf(body: bytes) -> Any:
    if not body:
        raise errors.BadRequest("the request body is empty: an object is required")
    try:
        return protobuf.decode(body)
    except protobuf.ProtobufError as err:
        if str(err).startswith("no protobuf decoder"):
            raise errors.UnsupportedMediaType(
                f"the body of the request was in an unknown format - protobuf: {err}; accepted media types "
                "include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            ) from None
        raise errors.BadRequest(f"the request body is not valid protobuf: {err}") from None


def _loads_json(body: bytes) -> Any:
    if not body.strip():
        raise errors.BadRequest("the request body is empty: an object is required")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise errors.BadRequest(f"the request body is not valid JSON: {err}") from None


def _loads_yaml(body: bytes) -> Any:
    if not body.strip():
        raise errors.BadRequest("the request body is empty: an object is required")
    try:
        return yaml.load(body, Loader=_Loader)
    except yaml.YAMLError as err:
        raise errors.BadRequest(f"the request body is not valid YAML: {err}") from None


@dataclass(frozen=True, slots=True)
class ResponseForm:
    """How to render the response: a plain object, or a Table (with which row objects)."""

    table: bool = False
    include_object: Literal["None", "Metadata", "Object"] = "Metadata"


_SERVABLE = frozenset({JSON, "*/*", "application/*", PROTOBUF, YAML, "application/json-patch+json"})


def response_form(accept: str | None, include_object: str | None) -> ResponseForm:
    """A Table when the first acceptable media range that we can serve asks ``as=Table``; plain JSON
    for anything else we can serve (protobuf and YAML askers also accept JSON); 406 when the
    header names only media types we cannot produce."""
    if not accept:
        return ResponseForm()
    servable = False
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        mt = fields[0].lower()
        params = {}
        for f in fields[1:]:
            k, _, v = f.partition("=")
            params[k.strip().lower()] = v.strip()
        if params.get("q") == "0":
            continue
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and mt == JSON:
            if params.get("v") in ("v1", "v1beta1"):
                inc = include_object if include_object in ("None", "Metadata", "Object") else "Metadata"
                return ResponseForm(True, inc)  # type: ignore[arg-type]
            continue
        if params.get("as"):
            servable = servable or mt == JSON  # PartialObjectMetadata and friends: plain JSON
            continue
        if mt in _SERVABLE:
            return ResponseForm()
    if servable or not accept.strip():
        return ResponseForm()
    raise errors.NotAcceptable(
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf, application/json;as=Table;v=v1;g=meta.k8s.io"
    )
