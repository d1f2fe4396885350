"""Routing: one entry point for every request, dispatching on ``RequestInfo`` and the catalog.

Resource requests go to the verb handlers of ``crud``, ``listwatch`` and ``scale``; non-resource
paths to health, version, discovery and OpenAPI. Unknown paths, verbs a resource does not allow and
scope mismatches answer Kubernetes ``Status`` errors (404/405), never an HTML page.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.server.auth import authz, serviceaccounts
from kplane.server.endpoints import (
    componentstatus,
    crud,
    encoded,
    history,
    listwatch,
    logs,
    negotiation,
    nonresource,
    podactions,
    requestinfo,
    resourcemetrics,
    reviews,
    scale,
    tokenrequest,
    tokenreview,
)
from kplane.server.endpoints.scope import Scope, protobuf_encodable
from kplane.server.registry.store import Registry

Handler = Callable[[Scope], Awaitable[web.StreamResponse]]

_MAIN: dict[str, Handler] = {
    "get": crud.get,
    "list": listwatch.list_,
    "watch": listwatch.watch,
    "create": crud.create,
    "update": crud.update,
    "patch": crud.patch,
    "delete": crud.delete,
    "deletecollection": listwatch.delete_collection,
}
_STATUS: dict[str, Handler] = {"get": crud.get, "update": crud.update, "patch": crud.patch}
_SCALE: dict[str, Handler] = {"get": scale.get, "update": scale.write, "patch": scale.write}
_BINDING: dict[str, Handler] = {"create": podactions.bind}
_REVIEW_GROUPS = frozenset({"authorization.k8s.io", "authentication.k8s.io"})
_COMPONENTSTATUS: dict[str, Handler] = {"get": componentstatus.get, "list": componentstatus.list_}
_POD_CONNECT: dict[str, Handler] = {"get": podactions.pod_connect, "create": podactions.pod_connect}
_POD_PROXY: dict[str, Handler] = dict.fromkeys(
    ("get", "create", "update", "patch", "delete"), podactions.pod_connect
)
_NODE_PROXY: dict[str, Handler] = dict.fromkeys(
    ("get", "create", "update", "patch", "delete"), podactions.node_proxy
)
_SERVICE_PROXY: dict[str, Handler] = dict.fromkeys(
    ("get", "create", "update", "patch", "delete"), podactions.service_proxy
)
# Subresources served by one table per (resource, subresource) of core/v1.
_CORE_SUBRESOURCES: dict[tuple[str, str], dict[str, Handler]] = {
    ("pods", "log"): {"get": logs.get},
    ("pods", "binding"): _BINDING,
    ("pods", "eviction"): {"create": podactions.evict},
    ("pods", "ephemeralcontainers"): _STATUS,
    ("pods", "exec"): _POD_CONNECT,
    ("pods", "attach"): _POD_CONNECT,
    ("pods", "portforward"): _POD_CONNECT,
    ("pods", "proxy"): _POD_PROXY,
    ("nodes", "proxy"): _NODE_PROXY,
    ("services", "proxy"): _SERVICE_PROXY,
    ("namespaces", "finalize"): {"update": crud.update},
}
_NEEDS_NAME = frozenset({"get", "update", "patch", "delete"})


@dataclass
class APIHandler:
    """The server's request handler (everything behind the filters)."""

    catalog: Catalog
    registry: Registry
    clock: Clock
    nonresource: nonresource.NonResource
    watch_bookmark_interval: float = 60.0
    service_accounts: serviceaccounts.Tokens | None = None
    max_token_seconds: int | None = None
    token_review: tokenreview.Review | None = None
    pod_logs: Path | None = None
    resource_metrics: resourcemetrics.UsageStore | None = None
    authorizer: authz.Authorizer = authz.always_allow
    """Answers the access reviews (the server's authorizer)."""
    rules_for: authz.RulesFor = authz.all_rules
    """Answers ``SelfSubjectRulesReview`` (the server's rule resolver)."""
    protobuf_memo: encoded.ProtobufMemo = field(default_factory=encoded.ProtobufMemo)
    _method_not_allowed: errors.MethodNotAllowed = field(default_factory=errors.method_not_allowed)
    _json_lists: encoded.JsonLists = field(default_factory=encoded.JsonLists)
    _reviews: dict[str, Handler] = field(init=False)

    def __post_init__(self) -> None:
        review = functools.partial(reviews.create, authorizer=self.authorizer, rules_for=self.rules_for)
        self._reviews = {"create": review}

    def __call__(self, request: web.BaseRequest) -> Awaitable[web.StreamResponse]:
        """The answer to ``request``, as an awaitable: routing is synchronous, so its errors are
        raised by the call itself (inside the caller's await) and the handler's own coroutine is
        the only frame a request adds here."""
        info = request[requestinfo.INFO_KEY]
        if not info.is_resource:
            return self.nonresource.serve(request, info)
        record = self.catalog.lookup(info.group, info.version, info.resource)
        if record is None:
            raise errors.resource_not_found()
        handler = self._handler(record, info)
        scope = Scope(
            request=request,
            info=info,
            record=record,
            registry=self.registry,
            clock=self.clock,
            form=negotiation.response_form(
                request.headers.get("Accept"),
                request.query.get("includeObject"),
                protobuf_ok=lambda: protobuf_encodable(record),
                stream=info.verb == "watch",
            ),
            watch_bookmark_interval=self.watch_bookmark_interval,
            pod_logs=self.pod_logs,
            protobuf_memo=self.protobuf_memo,
            json_lists=self._json_lists,
        )
        return handler(scope)

    def _handler(self, record: ResourceRecord, info: requestinfo.RequestInfo) -> Handler:
        if info.namespace and not record.namespaced:
            raise errors.resource_not_found()
        verb = info.verb
        if verb in _NEEDS_NAME and not info.name:
            raise errors.resource_not_found()
        if (
            verb == "create"
            and not info.subresource
            and (info.name or (record.namespaced and not info.namespace))
        ):
            raise self._method_not_allowed if info.name else errors.resource_not_found()
        if record.namespaced and not info.namespace and verb in ("create", "deletecollection"):
            raise errors.resource_not_found()
        sub = info.subresource
        table: dict[str, Handler] | None
        if not record.group and record.plural in ("bindings", "componentstatuses"):
            table = _BINDING if record.plural == "bindings" else _COMPONENTSTATUS
            if sub:
                raise errors.resource_not_found()
        elif record.group == resourcemetrics.GROUP and not record.custom:
            if self.resource_metrics is None or sub:
                raise errors.resource_not_found()
            store = self.resource_metrics
            table = {
                "get": functools.partial(resourcemetrics.get, store=store),
                "list": functools.partial(resourcemetrics.list_, store=store),
            }
        elif record.group == "authentication.k8s.io" and record.plural == "tokenreviews":
            if self.token_review is None or sub:
                raise errors.resource_not_found()
            table = {"create": functools.partial(tokenreview.create, review=self.token_review)}
        elif record.group == history.GROUP:
            table = {"list": functools.partial(history.list_, catalog=self.catalog)}
            if sub:
                raise errors.resource_not_found()
        elif record.group in _REVIEW_GROUPS:
            table = self._reviews
            if sub:
                raise errors.resource_not_found()
        elif not sub:
            table = _MAIN
            if verb not in record.verbs:
                raise self._method_not_allowed
        elif sub == "status" and record.has_status:
            table = _STATUS
        elif sub == "scale" and record.scale is not None:
            table = _SCALE
        elif sub == "approval" and record.kind == "CertificateSigningRequest":
            table = _STATUS
        elif sub == "token" and not record.group and record.plural == "serviceaccounts":
            if self.service_accounts is None:
                raise errors.resource_not_found()
            table = {
                "create": functools.partial(
                    tokenrequest.create, tokens=self.service_accounts, max_seconds=self.max_token_seconds
                )
            }
        else:
            table = None if record.group else _CORE_SUBRESOURCES.get((record.plural, sub))
            if table is None:
                raise errors.resource_not_found()
        handler = table.get(verb)
        if handler is None:
            raise self._method_not_allowed
        return handler
