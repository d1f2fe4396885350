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

import functools

from aiohttp import web

from kplane.server.auth import authn
from kplane.server.endpoints import metrics as metrics_mod
from kplane.server.endpoints import requestinfo
from kplane.server.filters.types import RESPONSE_HEADERS, Filter, Gate, Handler
from kplane.server.flowcontrol import matching
from kplane.server.flowcontrol.config import Classification, FlowControl

LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "log", "portforward", "proxy"})
TOO_MANY = "Too many requests, please try again later.\n"


def long_running(info: requestinfo.RequestInfo) -> bool:
    return info.verb == "watch" or info.subresource in LONG_RUNNING_SUBRESOURCES


def priority_and_fairness(control: FlowControl, sink: metrics_mod.APIMetrics) -> Gate:
    """The filter; it needs ``requestinfo`` and an authenticated user on the request. A gate: an
    Exempt request goes on at once; a Limited one goes on through ``_queued``, which holds a seat
    of its level for the rest of the chain."""

    def limit(request: web.BaseRequest) -> Filter | None:
        info = request[requestinfo.INFO_KEY]
        if info.verb == "watch" or info.subresource in LONG_RUNNING_SUBRESOURCES:  # long_running, inline
            return None
        if info.is_resource:
            req: matching.Request = (info.verb, True, info.group, info.resource, info.namespace, "")
            if info.subresource:
                req = (info.verb, True, info.group, f"{info.resource}/{info.subresource}", info.namespace, "")
        else:
            req = (request.method.lower(), False, "", "", "", info.path)
        found = control.classify(request[authn.USER_KEY], req)
        request[RESPONSE_HEADERS] = found.headers
        if found.level.queue_set is None:  # Exempt
            sink.dispatched(found.schema.name, found.level.name)
            return None
        return functools.partial(_queued, found, sink)

    return Gate(limit)


async def _queued(
    found: Classification, sink: metrics_mod.APIMetrics, handler: Handler, request: web.BaseRequest
) -> web.StreamResponse:
    """The rest of the chain in a seat of ``found``'s level, or upstream's 429 when refused."""
    schema, level = found.schema, found.level
    queue_set = level.queue_set
    assert queue_set is not None
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
