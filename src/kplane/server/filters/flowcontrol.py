"""API Priority and Fairness: the filter between impersonation and authorization.

Each request, as upstream's ``WithPriorityAndFairness``: long-running ones (watches, ``log``,
``exec``, ``attach``, ``portforward``, ``proxy``; upstream's ``BasicLongRunningRequestCheck``) pass
uncounted; the others are classified (``flowcontrol.config.FlowControl.classify``: FlowSchema,
priority level, flow), the reply carries ``X-Kubernetes-PF-FlowSchema-UID`` and
``X-Kubernetes-PF-PriorityLevel-UID``, an Exempt level (``system:masters`` through the ``exempt``
schema, health probes through ``probes``) is served at once, and a Limited level's request takes a
seat of its queue set or waits in a queue. Refused requests get upstream's 429 (``Retry-After: 1``,
the plain-text body ``Too many requests, please try again later.``) and are counted in
``apiserver_flowcontrol_rejected_requests_total`` {flow_schema, priority_level, reason}; served
ones in ``apiserver_flowcontrol_dispatched_requests_total``.
"""

from __future__ import annotations

from aiohttp import web

from kplane.server.auth import authn
from kplane.server.endpoints import metrics as metrics_mod
from kplane.server.endpoints import requestinfo
from kplane.server.filters.types import RESPONSE_HEADERS, Filter, Handler
from kplane.server.flowcontrol import matching
from kplane.server.flowcontrol.config import FlowControl

LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "log", "portforward", "proxy"})
TOO_MANY = "Too many requests, please try again later.\n"


def long_running(info: requestinfo.RequestInfo) -> bool:
    return info.verb == "watch" or info.subresource in LONG_RUNNING_SUBRESOURCES


def priority_and_fairness(control: FlowControl, sink: metrics_mod.APIMetrics) -> Filter:
    """The filter; it needs ``requestinfo`` and an authenticated user on the request."""

    async def limit(handler: Handler, request: web.BaseRequest) -> web.StreamResponse:
        info = request[requestinfo.INFO_KEY]
        user = request.get(authn.USER_KEY)
        if user is None or long_running(info):
            return await handler(request)
        if info.is_resource:
            req: matching.Request = (info.verb, True, info.group, info.resource, info.namespace, "")
            if info.subresource:
                req = (info.verb, True, info.group, f"{info.resource}/{info.subresource}", info.namespace, "")
        else:
            req = (request.method.lower(), False, "", "", "", info.path)
        found = control.classify(user, req)
        schema, level = found.schema, found.level
        request[RESPONSE_HEADERS] = found.headers
        queue_set = level.queue_set
        if queue_set is None:  # Exempt
            sink.dispatched(schema.name, level.name)
            return await handler(request)
        refused = await queue_set.acquire(found.flow)
        if refused:
            sink.rejected(schema.name, level.name, refused)
            return web.Response(
                status=429,
                text=TOO_MANY,
                headers={"Retry-After": "1", "X-Content-Type-Options": "nosniff"},
            )
        sink.dispatched(schema.name, level.name)
        try:
            return await handler(request)
        finally:
            queue_set.release()

    return limit
