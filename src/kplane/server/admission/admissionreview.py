"""The AdmissionReview wire format (apiserver ``webhook/request/admissionreview.go``, 1.32).

``request`` builds the review sent to a webhook (v1 or v1beta1: the first of the webhook's
``admissionReviewVersions`` that kplane speaks); ``verify`` checks the answer as
``VerifyAdmissionResponse`` does and returns a ``Verdict``, or raises ``InvalidResponse`` with
upstream's wording.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from kplane.api.catalog import ResourceRecord
from kplane.server.registry import admitting

Object = dict[str, Any]
SUPPORTED = ("v1", "v1beta1")
_GROUP = "admission.k8s.io"
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class InvalidResponse(ValueError):
    """The webhook's answer breaks the protocol."""


def review_version(versions: tuple[str, ...]) -> str | None:
    """The first of ``versions`` kplane speaks (``CreateAdmissionObjects``), or None."""
    return next((v for v in versions if v in SUPPORTED), None)


def _options(attrs: admitting.Attributes) -> Object | None:
    if attrs.options is not None:
        return attrs.options
    kind = _OPTIONS_KIND.get(attrs.operation)
    if kind is None:
        return None
    out: Object = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if attrs.dry_run:
        out["dryRun"] = ["All"]
    return out


def user_info(attrs: admitting.Attributes) -> Object:
    user = attrs.user
    if user is None:
        return {"username": "", "extra": {}}
    out: Object = {"username": user.username}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    out["extra"] = {k: list(v) for k, v in user.extra.items()}
    return out


def admission_request(
    uid: str,
    attrs: admitting.Attributes,
    invoked: ResourceRecord,
    obj: Object | None,
    old: Object | None,
) -> Object:
    """The ``request`` of a review (also what ``matchConditions`` see as ``request``).
    ``invoked`` is the record matched (another version under ``matchPolicy: Equivalent``);
    ``obj``/``old`` are the objects at that record's version."""
    rec = attrs.record
    return {
        "uid": uid,
        "kind": {"group": invoked.group, "version": invoked.version, "kind": invoked.kind},
        "resource": {"group": invoked.group, "version": invoked.version, "resource": invoked.plural},
        **({"subResource": attrs.subresource} if attrs.subresource else {}),
        "requestKind": {"group": rec.group, "version": rec.version, "kind": rec.kind},
        "requestResource": {"group": rec.group, "version": rec.version, "resource": rec.plural},
        **({"requestSubResource": attrs.subresource} if attrs.subresource else {}),
        **({"name": attrs.name} if attrs.name else {}),
        **({"namespace": attrs.namespace} if attrs.namespace else {}),
        "operation": attrs.operation,
        "userInfo": user_info(attrs),
        "object": obj,
        "oldObject": old,
        "dryRun": attrs.dry_run,
        "options": _options(attrs),
    }


def review(version: str, request: Object) -> Object:
    return {"kind": "AdmissionReview", "apiVersion": f"{_GROUP}/{version}", "request": request}


@dataclass(slots=True)
class Verdict:
    allowed: bool
    patch: bytes = b""
    patch_type: str = ""
    result: Object | None = None
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)


def _gvk(answer: Object) -> str:
    api_version = str(answer.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={answer.get('kind') or ''}"


def verify(uid: str, version: str, mutating: bool, answer: Any) -> Verdict:
    """Check a webhook's answer to a review of ``version`` (``VerifyAdmissionResponse``)."""
    if not isinstance(answer, dict):
        raise InvalidResponse("webhook response was absent")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise InvalidResponse("webhook response was absent")
    raw_patch = response.get("patch")
    patch_type = response.get("patchType")
    if version == "v1":
        if response.get("uid") != uid:
            raise InvalidResponse(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
        if answer.get("apiVersion") != f"{_GROUP}/v1" or answer.get("kind") != "AdmissionReview":
            raise InvalidResponse(
                f"expected webhook response of {_GROUP}/v1, Kind=AdmissionReview, got {_gvk(answer)}"
            )
    patch = b""
    if raw_patch not in (None, ""):
        if not isinstance(raw_patch, str):
            raise InvalidResponse("response.patch is not base64 data")
        try:
            patch = base64.b64decode(raw_patch, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidResponse(f"illegal base64 data in response.patch: {exc}") from None
    if version == "v1":
        if mutating:
            if patch and patch_type is None:
                raise InvalidResponse("webhook returned response.patch but not response.patchType")
            if not patch and patch_type is not None:
                raise InvalidResponse("webhook returned response.patchType but not response.patch")
            if patch_type is not None and not patch_type:
                raise InvalidResponse('webhook returned invalid response.patchType of ""')
        else:
            if patch:
                raise InvalidResponse("validating webhook may not return response.patch")
            if patch_type is not None:
                raise InvalidResponse("validating webhook may not return response.patchType")
    elif not mutating:
        patch = b""
    elif patch:
        patch_type = "JSONPatch"  # v1beta1 never checked it: pinned to the only type
    result = response.get("status")
    warnings = response.get("warnings")
    annotations = response.get("auditAnnotations")
    return Verdict(
        allowed=response.get("allowed") is True,
        patch=patch,
        patch_type=patch_type if isinstance(patch_type, str) else "",
        result=result if isinstance(result, dict) else None,
        warnings=[w for w in warnings if isinstance(w, str)] if isinstance(warnings, list) else [],
        audit_annotations=(
            {str(k): str(v) for k, v in annotations.items()} if isinstance(annotations, dict) else {}
        ),
    )
