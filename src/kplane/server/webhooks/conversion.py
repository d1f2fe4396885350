"""CRD conversion webhooks: ConversionReview v1/v1beta1 (apiextensions-apiserver 1.32
``pkg/apiserver/conversion/webhook_converter.go``).

``WebhookConverter.convert(record, objects, api_version, as_list=...)`` sends every object not
already at ``api_version`` in one review (a list is converted in one call, as upstream converts an
``UnstructuredList``) and checks the answer: the same number of objects, each at the desired version
and kind, with the same name, namespace and UID. As upstream, the converted objects keep the
original metadata except labels and annotations, which the webhook may change. Failures raise an
``APIError`` (500, no reason: upstream's conversion errors are plain Go errors) with upstream's
text, e.g. ``conversion webhook for example.com/v1, Kind=Widget failed: Post "https://...": ...``.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

import orjson

from kplane.api import errors, names
from kplane.api.catalog import ResourceRecord
from kplane.server.webhooks import client as webhookclient

Object = dict[str, Any]
SUPPORTED = ("v1", "v1beta1")
_GROUP = "apiextensions.k8s.io"
TIMEOUT = 30
"""Seconds a conversion call may take: upstream sets none beyond the request's own deadline."""


def _fail(message: str) -> errors.APIError:
    return errors.APIError(message, code=500, reason="")


def _gvk(obj: Object, kind: str) -> str:
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _string_map(value: Any) -> dict[str, str] | None:
    return value if isinstance(value, dict) else None


def restore_metadata(original: Object, converted: Object) -> str:
    """Upstream's ``restoreObjectMeta``: the original metadata with the converted labels and
    annotations; an error text, or "" (``converted`` is changed in place)."""
    meta = converted.get("metadata")
    if meta is None:
        return "missing metadata in converted object"
    if not isinstance(meta, dict):
        return f"invalid metadata of type {type(meta).__name__} in converted object"
    restored = copy.deepcopy(original.get("metadata") or {})
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            restored.pop(key, None)
            continue
        if not isinstance(value, dict):
            return f"invalid metadata.{key} of type {type(value).__name__} in converted object"
        for k, v in value.items():
            if not isinstance(v, str):
                return f"metadata.{key}[{k}] must be a string, but is {type(v).__name__} in converted object"
        if key == "labels" and value != restored.get(key):
            problems = [m for k in value for m in names.qualified_name_errors(k)]
            problems += [m for v in value.values() for m in names.label_value_errors(v)]
            if problems:
                return problems[0]
        restored[key] = value
    converted["metadata"] = restored
    return ""


def _same_identity(original: Object, converted: Object) -> str:
    """Upstream's ``validateConvertedObject``."""
    if original.get("kind") != converted.get("kind"):
        return f"must have the same kind: {original.get('kind')} != {converted.get('kind')}"
    a = original.get("metadata") or {}
    b = converted.get("metadata") if isinstance(converted.get("metadata"), dict) else {}
    assert isinstance(a, dict) and isinstance(b, dict)
    for key, what in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        if (a.get(key) or "") != (b.get(key) or ""):
            return f"must have the same {what}: {a.get(key) or ''} != {b.get(key) or ''}"
    return ""


class WebhookConverter:
    """Converts custom resources by calling their CRD's conversion webhook."""

    def __init__(self, client: webhookclient.Client, *, timeout: int = TIMEOUT) -> None:
        self._client = client
        self._timeout = timeout

    async def convert(
        self, record: ResourceRecord, objects: list[Object], api_version: str, *, as_list: bool = False
    ) -> list[Object]:
        """``objects`` at ``api_version``, in order (objects already there are returned as they are)."""
        config = record.conversion_webhook or {}
        pending = [i for i, o in enumerate(objects) if o.get("apiVersion") != api_version]
        if not pending:
            return objects
        first = objects[pending[0]]
        gvk = _gvk(first, record.list_kind if as_list else record.kind)
        raw_versions = config.get("conversionReviewVersions")
        versions = [v for v in raw_versions if isinstance(v, str)] if isinstance(raw_versions, list) else []
        version = next((v for v in versions if v in SUPPORTED), None)
        if version is None:
            raise _fail("no supported conversion review versions")
        uid = str(uuid.uuid4())
        review = {
            "kind": "ConversionReview",
            "apiVersion": f"{_GROUP}/{version}",
            "request": {
                "uid": uid,
                "desiredAPIVersion": api_version,
                "objects": [objects[i] for i in pending],
            },
        }
        cc = config.get("clientConfig")
        target = webhookclient.Target.parse(cc if isinstance(cc, dict) else {})
        try:
            answer = await self._client.post(
                target, orjson.dumps(review), self._timeout, timeout_in_url=False
            )
        except webhookclient.CallError as exc:
            raise _fail(f"conversion webhook for {gvk} failed: {exc}") from None
        converted = _converted_objects(uid, version, answer)
        if isinstance(converted, str):
            raise _fail(f"conversion webhook for {gvk} failed: {converted}")
        if len(converted) != len(pending):
            raise _fail(
                f"conversion webhook for {gvk} returned {len(converted)} objects, expected {len(pending)}"
            )
        out = list(objects)
        where = "invalid converted object at index {i}" if as_list else "invalid object at index {i}"
        for n, (i, new) in enumerate(zip(pending, converted, strict=True)):
            original = objects[i]
            at = where.format(i=n)
            if not isinstance(new, dict):
                raise _fail(f"conversion webhook for {gvk} returned {at}: invalid type")
            if new.get("apiVersion") != api_version:
                raise _fail(
                    f"conversion webhook for {gvk} returned {at}: invalid groupVersion "
                    f"(expected {api_version}, received {new.get('apiVersion') or ''})"
                )
            if new.get("kind") != original.get("kind"):
                raise _fail(
                    f"conversion webhook for {gvk} returned {at}: invalid kind "
                    f"(expected {original.get('kind')}, received {new.get('kind') or ''})"
                )
            problem = _same_identity(original, new)
            if problem:
                text = (
                    f"invalid converted object at index {n}: {problem}"
                    if as_list
                    else f"invalid object: {problem}"
                )
                raise _fail(f"conversion webhook for {gvk} returned {text}")
            problem = restore_metadata(original, new)
            if problem:
                text = f"invalid metadata in object at index {n}" if as_list else "invalid metadata"
                raise _fail(f"conversion webhook for {gvk} returned {text}: {problem}")
            out[i] = new
        return out


def _converted_objects(uid: str, version: str, answer: Any) -> list[Any] | str:
    """``getConvertedObjectsFromResponse``: the converted objects, or what is wrong."""
    if not isinstance(answer, dict):
        return "no response provided"
    if version == "v1" and (
        answer.get("apiVersion") != f"{_GROUP}/v1" or answer.get("kind") != "ConversionReview"
    ):
        group, _, got = str(answer.get("apiVersion") or "").rpartition("/")
        got_kind = answer.get("kind") or ""
        expected = f"{_GROUP}/v1, Kind=ConversionReview"
        return f"expected webhook response of {expected}, got {group}/{got}, Kind={got_kind}"
    response = answer.get("response")
    if not isinstance(response, dict):
        return "no response provided"
    if version == "v1" and response.get("uid") != uid:
        return f'expected response.uid="{uid}", got "{response.get("uid") or ""}"'
    result = response.get("result") if isinstance(response.get("result"), dict) else {}
    assert isinstance(result, dict)
    if result.get("status") != "Success":
        message = result.get("message")
        if isinstance(message, str) and message:
            return message
        return f"response.result.status was '{result.get('status') or ''}', not 'Success'"
    objects = response.get("convertedObjects")
    return objects if isinstance(objects, list) else []
