"""Auditing: each request the policy selects becomes ``audit.k8s.io/v1`` Events in the audit log.

Runs after authentication and before impersonation (upstream's order): the policy sees the
authenticated user, and the event names the impersonated one too. Stages: ``RequestReceived``
(before the handler), ``ResponseComplete`` (after it), ``Panic`` (an unexpected exception, logged
with code 500), each unless the policy omits it. ``ResponseStarted`` is not emitted (a departure:
long-running requests log ``RequestReceived`` and ``ResponseComplete``). At level ``Request`` the
event carries the request body as decoded (JSON, YAML or protobuf), at ``RequestResponse`` also
the reply when it is JSON or protobuf; ``managedFields`` are dropped when the policy says so.
Requests refused by authentication are not audited (upstream logs them from a separate filter).
The reply carries the event's ``Audit-Id`` header, as upstream.

Installed only when an audit log is configured, so auditing costs nothing when off.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import orjson
from aiohttp import web

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.server.audit import policy as policy_mod
from kplane.server.audit.log import AuditLog
from kplane.server.auth import authn, authz
from kplane.server.endpoints import negotiation, requestinfo, scope
from kplane.server.filters.types import Filter, Handler

_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
_REQUEST = policy_mod.LEVELS.index("Request")
_REQUEST_RESPONSE = policy_mod.LEVELS.index("RequestResponse")


def audit(policy: policy_mod.Policy, log: AuditLog, clock: Clock) -> Filter:
    def now() -> str:
        return clock.now().astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    async def record(handler: Handler, request: web.BaseRequest) -> web.StreamResponse:
        info = request[requestinfo.INFO_KEY]
        user = request[authn.USER_KEY]
        verb = info.verb if info.is_resource else request.method.lower()
        decision = policy.decide(
            policy_mod.Request(
                user.name,
                user.groups,
                verb,
                info.is_resource,
                info.group,
                info.resource,
                info.subresource,
                info.namespace,
                info.name,
                request.path,
            )
        )
        if decision.level == "None":
            return await handler(request)
        level = policy_mod.LEVELS.index(decision.level)
        event: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": decision.level,
            "auditID": request.headers.get("Audit-ID") or str(uuid.uuid4()),
            "stage": "RequestReceived",
            "requestURI": request.path_qs,
            "verb": verb,
            "user": authn.user_info(user),
            "sourceIPs": [request.remote] if request.remote else [],
            "userAgent": request.headers.get("User-Agent", ""),
        }
        if info.is_resource:
            event["objectRef"] = _object_ref(info)
        received = now()
        event["requestReceivedTimestamp"] = received
        event["stageTimestamp"] = received
        if "RequestReceived" not in decision.omit_stages:
            log.write(event)
        annotations: dict[str, str] = {}
        request[scope.AUDIT_ANNOTATIONS] = annotations  # admission records into it
        body = await _request_object(request) if request.method in _WITH_BODY else None
        if body is not None and info.is_resource:
            meta = body.get("metadata")
            if isinstance(meta, dict):
                ref = event["objectRef"]
                for key in ("namespace", "name"):
                    if not ref.get(key) and isinstance(meta.get(key), str) and meta[key]:
                        ref[key] = meta[key]
        event = dict(event)
        stage = "ResponseComplete"
        status: dict[str, Any] = {"metadata": {}, "code": 500}
        resp: web.StreamResponse | None = None
        try:
            resp = await handler(request)
            status = _status_of(resp)
            if not resp.prepared:
                resp.headers["Audit-Id"] = event["auditID"]
            return resp
        except errors.APIError as err:
            st = err.to_status()
            status = {"metadata": {}, "status": "Failure", "message": err.message, "code": err.code}
            if st.get("reason"):
                status["reason"] = st["reason"]
            raise
        except web.HTTPException as exc:
            status = {"metadata": {}, "code": exc.status}
            raise
        except Exception:
            stage = "Panic"
            raise
        finally:
            if stage not in decision.omit_stages:
                event["stage"] = stage
                effective = request[authn.USER_KEY]
                if effective is not user:
                    event["impersonatedUser"] = authn.user_info(effective)
                event["responseStatus"] = status
                if level >= _REQUEST and body is not None:
                    event["requestObject"] = _trim(body, decision.omit_managed_fields)
                if level >= _REQUEST_RESPONSE and resp is not None:
                    reply = _response_object(resp)
                    if reply is not None:
                        event["responseObject"] = _trim(reply, decision.omit_managed_fields)
                event["requestReceivedTimestamp"] = received
                event["stageTimestamp"] = now()
                verdict = request.get(authz.DECISION_KEY)
                if verdict is not None:
                    annotations["authorization.k8s.io/decision"] = "allow" if verdict.allowed else "forbid"
                    annotations["authorization.k8s.io/reason"] = verdict.reason
                if annotations:
                    event["annotations"] = dict(sorted(annotations.items()))
                log.write(event)

    return record


def _object_ref(info: requestinfo.RequestInfo) -> dict[str, Any]:
    ref: dict[str, Any] = {"resource": info.resource}
    if info.namespace:
        ref["namespace"] = info.namespace
    if info.name:
        ref["name"] = info.name
    if info.group:
        ref["apiGroup"] = info.group
    ref["apiVersion"] = info.version
    if info.subresource:
        ref["subresource"] = info.subresource
    return ref


async def _request_object(request: web.BaseRequest) -> dict[str, Any] | None:
    length = request.content_length
    if length is None or length > negotiation.MAX_BODY_BYTES:
        return None  # never consume a body the handler must refuse (413) or stream itself
    try:
        raw = await request.read()
        if not raw:
            return None
        content_type = request.headers.get("Content-Type")
        mt = negotiation.media_type(content_type)
        if mt.endswith("patch+json"):
            value = orjson.loads(raw)
            return value if isinstance(value, dict) else {"patch": value}
        if mt == "application/apply-patch+yaml":
            return negotiation.decode_object(raw, "application/yaml")
        return negotiation.decode_object(raw, content_type)
    except (errors.APIError, web.HTTPException, orjson.JSONDecodeError, ValueError):
        return None  # the handler answers the bad body; the event has no request object


def _response_object(resp: web.StreamResponse) -> dict[str, Any] | None:
    body = resp.body if isinstance(resp, web.Response) else None
    if not isinstance(body, bytes) or not body:
        return None
    content_type = resp.headers.get("Content-Type", "")
    try:
        if content_type.startswith("application/json"):
            value = orjson.loads(body)
            return value if isinstance(value, dict) else None
        if content_type.startswith(negotiation.PROTOBUF):
            from kplane.api import protobuf

            return protobuf.decode(body)
    except Exception:  # a reply the audit cannot read is still answered; only the event lacks it
        return None
    return None


def _status_of(resp: web.StreamResponse) -> dict[str, Any]:
    status: dict[str, Any] = {"metadata": {}, "code": resp.status}
    if resp.status >= 400:
        reply = _response_object(resp)
        if reply is not None and reply.get("kind") == "Status":
            status = {"metadata": {}, "status": reply.get("status", "Failure")}
            for key in ("message", "reason"):
                if reply.get(key):
                    status[key] = reply[key]
            status["code"] = resp.status
    return status


def _trim(obj: dict[str, Any], omit_managed: bool) -> dict[str, Any]:
    if not omit_managed:
        return obj
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    items = out.get("items")
    if isinstance(items, list):
        out["items"] = [_trim(i, True) if isinstance(i, dict) else i for i in items]
    return out
