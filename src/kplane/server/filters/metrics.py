"""Request metrics: count, latency and requests in flight of every request, as kube-apiserver
labels them (``endpoints/metrics``). Sits after request info (it reads the parsed request) and
before authentication, so refused requests are counted with their 401.

Failures raised by inner filters or handlers are counted with the code the recovery filter will
answer (an API error's code, an HTTP error's status, else 500) and re-raised unchanged.
"""

from __future__ import annotations

from aiohttp import web

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.server.endpoints import metrics as metrics_mod
from kplane.server.endpoints import requestinfo
from kplane.server.filters.types import Filter, Handler

_VERBS = {
    "get": "GET",
    "list": "LIST",
    "watch": "WATCH",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETECOLLECTION",
}
# upstream's validConnectRequests: subresources whose verb is reported as CONNECT
_CONNECT = frozenset({"attach", "exec", "portforward", "proxy"})
_READ_ONLY = frozenset({"get", "list", "watch"})
_APPLY = "application/apply-patch+yaml"
_MEMO: dict[tuple[int, bool, str], tuple[requestinfo.RequestInfo, tuple[str, ...]]] = {}
_MEMO_LIMIT = 4096  # request paths are client-chosen: bound the memo
_MEMO_DRY_RUN_CHARS = 64


def _labels(request: web.BaseRequest, info: requestinfo.RequestInfo) -> tuple[str, ...]:
    """``REQUEST_LABELS`` values of one request (upstream's cleanVerb, CleanScope, cleanDryRun),
    memoised: they depend on few inputs, and this runs on every request."""
    if not info.is_resource:
        return (request.method, "", "", "", "", "", "", "apiserver")
    dry_run = ""
    if "dryRun" in request.query_string:
        dry_run = ",".join(sorted(set(request.query.getall("dryRun", ()))))
    apply = info.verb == "patch" and request.headers.get("Content-Type", "").startswith(_APPLY)
    # Requests to one path share their RequestInfo (the request-info filter's memo), so its
    # identity keys the memo; the entry holds the info, so its id is not reused meanwhile.
    key = (id(info), apply, dry_run)
    entry = _MEMO.get(key)
    if entry is not None and entry[0] is info:
        return entry[1]
    verb = _VERBS.get(info.verb, info.verb.upper())
    if info.subresource in _CONNECT:
        verb = "CONNECT"
    elif apply:
        verb = "APPLY"
    if info.name or info.verb == "create":
        scope = "resource"
    elif info.namespace:
        scope = "namespace"
    else:
        scope = "cluster"
    labels = (
        verb,
        dry_run,
        info.group,
        info.version,
        info.resource,
        info.subresource,
        scope,
        "apiserver",
    )
    if len(dry_run) <= _MEMO_DRY_RUN_CHARS:  # client-chosen: a long one is not kept
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[key] = (info, labels)
    return labels


def metrics(sink: metrics_mod.APIMetrics, clock: Clock) -> Filter:
    """The filter, recording into ``sink`` with latencies measured on ``clock``."""
    now = clock.monotonic

    async def record(handler: Handler, request: web.BaseRequest) -> web.StreamResponse:
        info = request[requestinfo.INFO_KEY]
        long_running = info.verb == "watch" or info.subresource in _CONNECT
        kind = "readOnly" if (info.verb in _READ_ONLY or not info.is_resource) else "mutating"
        start = now()
        if not long_running:
            sink.started(kind)
        code = 500
        try:
            resp = await handler(request)
            code = resp.status
            return resp
        except errors.APIError as err:
            code = err.code
            raise
        except web.HTTPException as exc:
            code = exc.status
            raise
        finally:
            if long_running:
                sink.request(_labels(request, info), code, None)
            else:
                sink.request(_labels(request, info), code, now() - start, leaving=kind)

    return record
