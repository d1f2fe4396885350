"""Content negotiation: decoding request bodies and choosing the response form.

Request bodies: JSON (``application/json``, or no content type), YAML (``application/yaml``),
Kubernetes protobuf (``application/vnd.kubernetes.protobuf``, decoded to the same JSON shape) and the
four patch types. Responses are JSON, or a ``meta.k8s.io/v1`` Table when the ``Accept`` header asks
for one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import orjson
import yaml

from kplane._util.lazy import lazy_module
from kplane.api import errors, jsonbody, yamlbody

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


def media_type(content_type: str | None) -> str:
    """The bare media type, lower-cased, without parameters such as ``charset``."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def decode_object(body: bytes, content_type: str | None, *, kind: str = "") -> dict[str, Any]:
    """A JSON, YAML or protobuf request body as an object of ``kind``; 400 for malformed, too deeply
    nested or alias-bomb input (upstream's ``transformDecodeError`` text), 415 for any other media
    type (upstream matches the type exactly: ``text/plain`` or ``*/*`` are refused)."""
    mt = media_type(content_type)
    if mt in ("", JSON):
        try:
            value = jsonbody.loads(body) if body.strip() else _empty()
        except jsonbody.TooDeep as err:
            # upstream: serializer/json/meta.go Interpret, then handlers/rest.go transformDecodeError
            raise _unrecognized(kind, f"couldn't get version/kind; json parse error: {err}", body) from None
        except jsonbody.Malformed as err:
            raise errors.BadRequest(f"the request body is not valid JSON: {err}") from None
    elif mt == YAML:
        try:
            value = yamlbody.loads(body) if body.strip() else _empty()
        except yamlbody.YAMLError as err:
            raise _unrecognized(kind, str(err), body) from None
    elif mt == PROTOBUF:
        value = _loads_protobuf(body)
        if jsonbody.too_deep(value):  # raw JSON fields (RawExtension) may nest past the limit
            raise errors.BadRequest(
                f"the object nests deeper than {jsonbody.MAX_DEPTH} levels, the most this server stores"
            )
    else:
        # handlers/negotiation/errors.go errUnsupportedMediaType, listing the serializers of the
        # built-in and the custom resource codecs alike (JSON, YAML, protobuf)
        raise errors.UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf"
        )
    if not isinstance(value, dict):
        raise errors.BadRequest("the request body must be a JSON or YAML object")
    return value


_QUOTE = ord('"')


def duplicate_fields(body: bytes, content_type: str | None, value: Any) -> list[str]:
    """Fields that appear twice in one JSON object of ``body`` (``duplicate field "name"``), for
    ``fieldValidation`` Strict/Warn. ``value`` is the body as decoded, before anything changed it."""
    if media_type(content_type) not in ("", JSON, MERGE_PATCH, STRATEGIC_PATCH):
        return []
    if _QUOTE not in body:  # an integer test: see go_escape
        return []
    return jsonbody.duplicate_fields(body, value)


def decode_patch(body: bytes, mt: str) -> Any:
    """A patch body: JSON for JSON/merge/strategic patches, YAML (or JSON) for apply patches.
    Too deep or alias-bomb bodies get upstream's 400 (handlers/patch.go)."""
    if mt == APPLY_PATCH:
        try:
            value = yamlbody.loads(body) if body.strip() else _empty()
        except yamlbody.YAMLError as err:
            # upstream: applyPatcher, around sigs.k8s.io/yaml.Unmarshal
            raise errors.BadRequest(f"error decoding patch: error converting YAML to JSON: {err}") from None
        if not isinstance(value, dict):
            raise errors.BadRequest("the apply patch must be a YAML or JSON object")
        return value
    try:
        value = jsonbody.loads(body) if body.strip() else _empty()
    except jsonbody.TooDeep as err:
        # upstream: strategicPatchObject answers the decode error as it is; the JSON and merge
        # patchers prefix it (handlers/patch.go)
        message = str(err) if mt == STRATEGIC_PATCH else f"error decoding patch: {err}"
        raise errors.BadRequest(message) from None
    except jsonbody.Malformed as err:
        raise errors.BadRequest(f"the request body is not valid JSON: {err}") from None
    if mt == JSON_PATCH and not isinstance(value, list):
        raise errors.BadRequest("json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp")
    if mt != JSON_PATCH and not isinstance(value, dict):
        raise errors.BadRequest("the patch must be a JSON object")
    return value


def _empty() -> Any:
    raise errors.BadRequest("the request body is empty: an object is required")


def _unrecognized(kind: str, err: str, body: bytes) -> errors.BadRequest:
    """Upstream's 400 for a body that does not decode (handlers/rest.go ``transformDecodeError``
    with ``summarizeData(body, 30)``)."""
    if not kind:
        return errors.BadRequest(err)
    head = body[:30]
    summary = head.decode("utf-8", "replace") if body[:1] == b"{" else head.hex()
    if len(body) > 30:
        summary += " ..."
    return errors.BadRequest(
        f"the object provided is unrecognized (must be of type {kind}): {err} ({summary})"
    )


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


# --- responses ------------------------------------------------------------------------------
#
# Upstream (apiserver handlers/negotiation/negotiate.go): the Accept header's clauses, ordered by
# q then specificity, are tried in turn against the serializers in the order JSON, YAML, protobuf;
# the first clause a serializer matches (exact, ``type/*`` or ``*/*``) whose parameters the
# endpoint allows wins. ``as=Table`` is allowed in JSON and YAML only; custom resources (and the
# kinds without protobuf descriptors) cannot be written as protobuf; ``stream=watch`` needs a
# stream serializer (JSON or protobuf, not YAML). Nothing acceptable: 406 with the list below.
# An error is negotiated the same way without transformations; when even that fails it is written
# as indented JSON (responsewriters.WriteRawJSON).

MEDIA_TYPES = (JSON, YAML, PROTOBUF)
STREAM_MEDIA_TYPES = (JSON, PROTOBUF)
PROTOBUF_WATCH = PROTOBUF + ";stream=watch"
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
_NOT_ACCEPTABLE = "only the following media types are accepted: "


@dataclass(frozen=True, slots=True)
class ResponseForm:
    """How to render a reply: its media type, and whether as a Table (with which row objects) or
    as metadata only (``partial``).

    ``error`` is set when the Accept header allows nothing this endpoint can write; it is raised
    only when a successful body is about to be written, so an error found first keeps its code.
    """

    table: bool = False
    include_object: Literal["None", "Metadata", "Object"] = "Metadata"
    media: str = JSON
    error: errors.APIError | None = None
    partial: str = ""  # PartialObjectMetadata or PartialObjectMetadataList: metadata only
    partial_version: str = "v1"  # of meta.k8s.io


@dataclass(frozen=True, slots=True)
class _Clause:
    type: str
    subtype: str
    q: float
    params: dict[str, str]


def _clauses(accept: str) -> list[_Clause]:
    """The header's media ranges, best first: higher q, then ``*`` types after concrete ones."""
    out: list[_Clause] = []
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        kind, _, sub = fields[0].lower().partition("/")
        params: dict[str, str] = {}
        q = 1.0
        for f in fields[1:]:
            k, _, v = f.partition("=")
            k = k.strip().lower()
            if k == "q":
                try:
                    q = float(v)
                except ValueError:
                    q = 0.0
            elif k:
                params[k] = v.strip()
        out.append(_Clause(kind.strip(), sub.strip() or "*", q, params))
    out.sort(key=lambda c: (-c.q, c.type == "*", c.subtype == "*"))
    return out


def _allows(media: str, params: dict[str, str], *, transforms: bool) -> tuple[bool, str, str]:
    """Whether the clause's parameters allow writing ``media`` here, and the transformation it asks
    (``as`` kind and meta.k8s.io version, or empty strings)."""
    if params.get("stream") and (media == YAML or params["stream"] != "watch"):
        return False, "", ""
    if params.get("sv") and (not transforms or params["sv"] != "v1"):
        return False, "", ""
    kind, group, version = (params.get(k) or "" for k in ("as", "g", "v"))
    if not (kind or group or version):
        return True, "", ""
    if not transforms or group != "meta.k8s.io" or version not in ("v1", "v1beta1"):
        return False, "", ""
    if kind == "Table":
        return media in (JSON, YAML), kind, version
    if kind in (PARTIAL, PARTIAL_LIST):
        # Any serializer, custom resources included; kplane has the v1 descriptors only.
        return media != PROTOBUF or version == "v1", kind, version
    return False, "", ""


def _matches(clause: _Clause, media: str) -> bool:
    kind, _, sub = media.partition("/")
    if clause.type == "*":
        return clause.subtype == "*"
    return clause.type == kind and clause.subtype in (sub, "*")


class Chosen(NamedTuple):
    """A negotiated reply: its media type and the transformation asked (``as``, meta.k8s.io version)."""

    media: str
    target: str = ""
    version: str = ""


def negotiate(
    accept: str | None,
    *,
    protobuf_ok: Callable[[], bool] = lambda: True,
    transforms: bool = True,
    stream: bool = False,
) -> Chosen | None:
    """What to answer in, or None when nothing is acceptable.

    ``protobuf_ok`` says whether the endpoint's kind has a protobuf form (asked only when the
    header names protobuf); ``transforms`` is False for errors; ``stream`` is True for watches.
    """
    if not accept:
        return Chosen(JSON)
    return _negotiate(accept, "protobuf" not in accept or protobuf_ok(), transforms, stream)


@functools.lru_cache(maxsize=1024)  # clients send a handful of distinct headers
def _negotiate(accept: str, protobuf_ok: bool, transforms: bool, stream: bool) -> Chosen | None:
    if not accept.strip():
        return Chosen(JSON)
    for clause in _clauses(accept):
        for media in MEDIA_TYPES:
            if not _matches(clause, media):
                continue
            if media == PROTOBUF and not clause.params.get("as") and not protobuf_ok:
                continue
            ok, target, version = _allows(media, clause.params, transforms=transforms)
            if not ok:
                continue
            if stream and media == YAML:
                return None  # upstream picks YAML, then finds it has no stream serializer
            return Chosen(media, target, version)
    return None


def not_acceptable(*, stream: bool = False) -> errors.NotAcceptable:
    """Upstream's 406 for an Accept header that allows nothing (errNotAcceptable)."""
    if stream:
        return errors.NotAcceptable(
            _NOT_ACCEPTABLE + ", ".join(f"{m};stream=watch" for m in STREAM_MEDIA_TYPES)
        )
    return errors.NotAcceptable(_NOT_ACCEPTABLE + ", ".join(MEDIA_TYPES))


def response_form(
    accept: str | None,
    include_object: str | None,
    *,
    protobuf_ok: Callable[[], bool] = lambda: True,
    stream: bool = False,
) -> ResponseForm:
    """The form of a resource endpoint's replies (see the module notes); never raises.

    Forms are immutable, so one is shared by every request with the same inputs (a bounded memo:
    clients send a handful of Accept headers); a form that carries an error is never shared."""
    ok = not accept or "protobuf" not in accept or protobuf_ok()
    key = (accept, include_object, stream, ok)
    form = _FORMS.get(key)
    if form is None:
        form = _response_form(accept, include_object, ok, stream)
        if form.error is None and len(accept or "") + len(include_object or "") <= _FORMS_KEY_CHARS:
            if len(_FORMS) >= _FORMS_BOUND:
                _FORMS.clear()
            _FORMS[key] = form
    return form


_FORMS: dict[tuple[str | None, str | None, bool, bool], ResponseForm] = {}
_FORMS_BOUND = 1024
_FORMS_KEY_CHARS = 512  # headers are client-chosen: the memo holds at most ~0.5 MiB of them


def _response_form(accept: str | None, include_object: str | None, ok: bool, stream: bool) -> ResponseForm:
    chosen = negotiate(accept, protobuf_ok=lambda: ok, stream=stream)
    if chosen is None:
        return ResponseForm(error=not_acceptable(stream=stream))
    if chosen.target == "Table":
        inc = include_object if include_object in ("None", "Metadata", "Object") else "Metadata"
        return ResponseForm(True, inc, chosen.media)  # type: ignore[arg-type]
    if chosen.target:
        return ResponseForm(media=chosen.media, partial=chosen.target, partial_version=chosen.version)
    return ResponseForm(media=chosen.media)


_SafeDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _GoYamlDumper(_SafeDumper):  # type: ignore[misc]
    """go-yaml v2's choices of string style, which sigs.k8s.io/yaml uses: a string with a newline
    is a literal block, one that would read back as another type (``"1"``, ``"true"``, ``""``) is
    double-quoted; the emitter decides the rest, as libyaml's does for both."""


def _represent_str(dumper: Any, value: str) -> Any:
    style = None
    if "\n" in value:
        style = "|"
    elif dumper.resolve(yaml.ScalarNode, value, (True, False)) != "tag:yaml.org,2002:str":
        style = '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_GoYamlDumper.add_representer(str, _represent_str)


def dumps_yaml(obj: Any) -> bytes:
    """YAML as upstream writes it (JSON → sigs.k8s.io/yaml): keys sorted, block style, two spaces."""
    text: str = yaml.dump(
        obj, Dumper=_GoYamlDumper, sort_keys=True, default_flow_style=False, allow_unicode=True
    )
    return text.encode()


def encode(obj: Any, media: str, *, pretty: bool = False) -> bytes:
    """``obj`` (which carries apiVersion and kind) as a body of ``media``: JSON, YAML or protobuf."""
    if media == PROTOBUF:
        return protobuf.encode(obj)
    if media == YAML:
        return dumps_yaml(obj)
    return encode_json(obj, pretty=pretty)


def encode_json(obj: Any, *, pretty: bool = False) -> bytes:
    """A JSON body as upstream's serializer writes it: Go's ``json.Encoder`` (compact, ending in a
    newline) or, ``pretty``, ``json.MarshalIndent`` (two spaces, no newline); both escape as
    ``go_escape`` says. Clients that compare bodies byte for byte see the same bytes."""
    if pretty:
        return go_escape(orjson.dumps(obj, option=orjson.OPT_INDENT_2))
    return go_escape(orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE))


_GO_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


_LT, _GT, _AMP, _E2 = b"<>&\xe2"  # the bytes that start what go_escape rewrites


def go_escape(body: bytes) -> bytes:
    """JSON bytes with what Go's encoding/json escapes inside strings and orjson does not: ``<``,
    ``>``, ``&`` (HTML-safe by default) and the JavaScript line separators U+2028/U+2029. They can
    only occur inside strings, so the document means the same."""
    # single-byte scans (memchr) first: the common case has nothing to escape. An integer
    # membership test is the cheapest: ``b"<" in body`` first tries its argument as an integer
    # and builds and drops a TypeError (~2,000 instructions), ``find`` parses its arguments as a
    # tuple (~4x the integer test's time); ``translate`` is slower still.
    if _LT not in body and _GT not in body and _AMP not in body and _E2 not in body:
        return body
    for raw, escaped in _GO_ESCAPES:
        body = body.replace(raw, escaped)
    return body


_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_HUMAN_AGENTS = ("curl", "Wget", "Mozilla/5.0")


def is_pretty(query: Any, user_agent: str) -> bool:
    """Whether upstream pretty-prints the JSON reply (handlers/negotiation isPrettyPrint): the
    ``pretty`` query parameter when set (Go's ParseBool, anything else false), else a user agent
    of a human's tool (curl, Wget, a browser)."""
    value = query.get("pretty")
    if value:
        return bool(value in _TRUE)
    return user_agent.startswith(_HUMAN_AGENTS)


def error_body(status: dict[str, Any], accept: str | None, *, pretty: bool = False) -> tuple[bytes, str]:
    """An error's Status negotiated as upstream's ErrorNegotiated does: no transformations; when
    nothing is acceptable, indented JSON whatever the Accept header (WriteRawJSON)."""
    chosen = negotiate(accept, transforms=False)
    if chosen is None:
        return encode_json(status, pretty=True), JSON
    return encode(status, chosen.media, pretty=pretty), chosen.media
