"""``POST /api/v1/namespaces/<ns>/serviceaccounts/<sa>/token``: TokenRequest, as upstream's
``pkg/registry/core/serviceaccount/storage/token.go`` answers it (``kubectl create token``).

The body (JSON, YAML or protobuf) is checked in upstream's order: names against the URL, the
ServiceAccount (404), ``expirationSeconds`` (default 3600; 422 below ten minutes or above 2^32),
the bound object (Pod, Secret or Node: it must exist, with the UID given, and a Pod must run as
this ServiceAccount), then ``--service-account-max-token-expiration`` (a shortening is announced
as a warning). The reply (201) is the request with its defaults and ``status.token`` and
``status.expirationTimestamp``.
"""

from __future__ import annotations

import datetime
from typing import Any

from aiohttp import web

from kplane.api import errors
from kplane.api.builtin import BUILTIN_RECORDS
from kplane.api.gvk import GroupResource
from kplane.server.auth import serviceaccounts
from kplane.server.endpoints import negotiation
from kplane.server.endpoints.scope import Scope

_GROUP = "authentication.k8s.io"
_CORE = {r.plural: r for r in BUILTIN_RECORDS if r.group == "" and r.version == "v1"}
_BINDABLE = {"Pod": _CORE["pods"], "Secret": _CORE["secrets"], "Node": _CORE["nodes"]}
MIN_SECONDS = 600
MAX_SECONDS = 1 << 32
DEFAULT_SECONDS = 3600


async def create(
    scope: Scope, *, tokens: serviceaccounts.Tokens, max_seconds: int | None = None
) -> web.StreamResponse:
    body = negotiation.decode_object(
        await scope.body(), scope.request.headers.get("Content-Type"), kind="TokenRequest"
    )
    ns, name = scope.info.namespace, scope.info.name
    raw_meta = body.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    for field, want in (("name", name), ("namespace", ns)):
        given = meta.get(field)
        if given and given != want:
            what = "service account name" if field == "name" else "namespace"
            raise errors.invalid_object(
                "TokenRequest",
                _GROUP,
                str(meta.get("name") or name),
                [errors.invalid(f"metadata.{field}", given, f"must match the {what} if specified")],
            )
    sa = await scope.registry.get(scope.record, ns, name)
    spec: dict[str, Any] = dict(body.get("spec") or {}) if isinstance(body.get("spec"), dict) else {}
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = DEFAULT_SECONDS
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise errors.BadRequest("spec.expirationSeconds must be an integer")
    field_errs = []
    if seconds < MIN_SECONDS:
        field_errs.append(
            errors.invalid(
                "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"
            )
        )
    elif seconds > MAX_SECONDS:
        field_errs.append(
            errors.invalid(
                "spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds"
            )
        )
    if field_errs:
        raise errors.invalid_object("TokenRequest", _GROUP, name, field_errs)
    spec["expirationSeconds"] = seconds
    audiences = spec.get("audiences")
    if not audiences or not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        audiences = list(tokens.api_audiences)
    spec["audiences"] = audiences
    bound = await _bound(scope, spec.get("boundObjectRef"), ns, name)
    requested = seconds
    if (
        max_seconds is not None
        and seconds > max_seconds
        and not (seconds == serviceaccounts.EXTENDED_SECONDS and bound is not None and bound.kind == "Pod")
    ):
        seconds = max_seconds
        scope.warnings.append(f"requested expiration of {requested} seconds shortened to {seconds} seconds")
        spec["expirationSeconds"] = seconds
    token, expiry, _jti = tokens.issue(ns, sa, audiences=audiences, seconds=seconds, bound=bound)
    now = scope.clock.now().astimezone(datetime.UTC).replace(microsecond=0)
    reply = {
        "kind": "TokenRequest",
        "apiVersion": f"{_GROUP}/v1",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": _rfc3339(now)},
        "spec": spec,
        "status": {
            "token": token,
            "expirationTimestamp": _rfc3339(datetime.datetime.fromtimestamp(expiry, datetime.UTC)),
        },
    }
    return scope.respond_plain(reply, 201)


async def _bound(scope: Scope, ref: Any, ns: str, sa_name: str) -> serviceaccounts.Bound | None:
    if not ref:
        return None
    if not isinstance(ref, dict):
        raise errors.BadRequest("spec.boundObjectRef must be an object")
    kind, api_version = str(ref.get("kind") or ""), str(ref.get("apiVersion") or "")
    record = _BINDABLE.get(kind) if api_version == "v1" else None
    if record is None:
        group, _, version = api_version.rpartition("/")
        raise errors.BadRequest(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    obj_name = str(ref.get("name") or "")
    obj = await scope.registry.get(record, ns if record.namespaced else "", obj_name)
    meta = obj.get("metadata") or {}
    uid = str(meta.get("uid", ""))
    given = ref.get("uid")
    if given and given != uid:
        raise errors.conflict(
            GroupResource("", kind),
            obj_name,
            f"the UID in the bound object reference ({given}) does not match the UID in record."
            " The object might have been deleted and then recreated",
        )
    node: tuple[str, str] | None = None
    if kind == "Pod":
        raw_spec = obj.get("spec")
        spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
        if (spec.get("serviceAccountName") or "default") != sa_name:
            raise errors.BadRequest(
                f'cannot bind token for serviceaccount "{sa_name}" to pod running with different'
                " serviceaccount name."
            )
        node_name = spec.get("nodeName")
        if isinstance(node_name, str) and node_name:
            try:
                found = await scope.registry.get(_CORE["nodes"], "", node_name)
                node = (node_name, str((found.get("metadata") or {}).get("uid", "")))
            except errors.NotFound:
                node = (node_name, "")
    return serviceaccounts.Bound(kind, obj_name, uid, node)


def _rfc3339(t: datetime.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")
