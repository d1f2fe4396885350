"""Non-resource paths: health checks (``health``), ``/metrics``, ``/version``, discovery (legacy
and aggregated), OpenAPI v2 and v3, and ``/debug/kplane/traces`` (the reconcile traces of the
controllers run in the server's process, when a ``traces`` source is set; see ARCHITECTURE.md).

Discovery and OpenAPI documents are built by ``discovery`` and ``openapi`` and cached per catalog
generation; this module only negotiates, sets caching headers and answers 304 to a matching
``If-None-Match``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from aiohttp import web

from kplane.api import errors
from kplane.api.catalog import Catalog
from kplane.server.endpoints import discovery, oidc, openapi, openapi_v2, resourcemetrics
from kplane.server.endpoints import metrics as metrics_mod
from kplane.server.endpoints.health import Health, NamedCheck
from kplane.server.endpoints.metrics import APIMetrics
from kplane.server.endpoints.requestinfo import RequestInfo

HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


async def _ok() -> None:
    return None


@dataclass
class NonResource:
    catalog: Catalog
    server_address: str = "127.0.0.1:6443"
    health: Health = field(default_factory=lambda: Health([NamedCheck("ping", _ok)]))
    metrics: APIMetrics | None = None
    issuer_discovery: oidc.Discovery | None = None
    metrics_sources: list[Callable[[], bytes]] = field(default_factory=list)
    """More Prometheus text appended to ``/metrics`` on each scrape (the in-process controllers'
    registry, whose families share no name with the server's)."""
    resource_metrics: resourcemetrics.UsageStore | None = None
    traces: Callable[[Mapping[str, str]], Awaitable[bytes]] | None = None
    """The reconcile traces matching a query, as JSON (set by ``kplane serve`` once its controllers
    run: it relays their process's ``/debug/kplane/traces``; the server never imports the runtime)."""

    async def serve(self, request: web.BaseRequest, info: RequestInfo) -> web.StreamResponse:
        parts = info.parts
        if (
            len(parts) == 5
            and parts[:3] == resourcemetrics.FEED_PREFIX
            and parts[4] == resourcemetrics.FEED_LEAF
            and self.resource_metrics is not None
        ):
            return await resourcemetrics.feed(request, parts[3], self.resource_metrics)
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed()
        path = "/" + "/".join(info.parts)
        if info.parts and "/" + info.parts[0] in HEALTH_PATHS:
            return await self.health.serve(request, info.parts)
        if info.parts == ("metrics",) and self.metrics is not None:
            body = b"".join([self.metrics.render(), *(source() for source in self.metrics_sources)])
            return web.Response(body=body, headers={"Content-Type": metrics_mod.CONTENT_TYPE})
        if parts == ("debug", "kplane", "traces") and self.traces is not None:
            body = await self.traces(request.query)
            return web.Response(body=body, headers={"Content-Type": "application/json"})
        if self.issuer_discovery is not None:
            if request.path == "/.well-known/openid-configuration":
                return self.issuer_discovery.configuration(self.server_address)
            if parts == oidc.JWKS_PATH:
                return self.issuer_discovery.jwks()
        if parts and parts[0] == "openapi":
            return self._openapi(request, parts)
        version = None
        if parts in (("api",), ("apis",)):
            version = discovery.negotiate_discovery(request.headers.get("Accept", ""))
        found = discovery.document_bytes_and_etag(
            self.catalog, path, discovery_version=version, server_address=self.server_address
        )
        if found is None:
            raise errors.resource_not_found()
        body, etag = found
        content_type = discovery.discovery_content_type(version) if version else "application/json"
        headers = {"Content-Type": content_type}
        if version:
            headers["Vary"] = "Accept"
        return _cached(request, body, etag, headers)

    def _openapi(self, request: web.BaseRequest, parts: tuple[str, ...]) -> web.StreamResponse:
        if parts == ("openapi", "v2"):
            return self._openapi_v2(request)
        if parts == ("openapi", "v3"):
            body, etag = openapi.index_bytes_and_etag(self.catalog)
            return _cached(request, body, etag, {"Content-Type": "application/json"})
        if len(parts) > 2 and parts[1] == "v3":
            gv = openapi.parse_gv_path("/".join(parts[2:]))
            if gv is not None:
                found = openapi.document_bytes_and_etag(self.catalog, gv.group, gv.version)
                if found is not None:
                    headers = {"Content-Type": "application/json"}
                    if request.query.get("hash"):
                        headers["Cache-Control"] = "public, immutable"
                    return _cached(request, found[0], found[1], headers)
        raise errors.resource_not_found()

    def _openapi_v2(self, request: web.BaseRequest) -> web.StreamResponse:
        """kube-openapi's handler: JSON or gnostic protobuf by Accept, 406 (empty body) when
        neither is acceptable, ``Vary: Accept``, a quoted ETag and 304 on a match."""
        media = openapi_v2.negotiate(request.headers.get("Accept", ""))
        if media is None:
            return web.Response(status=406, headers={"Vary": "Accept"})
        if media == openapi_v2.JSON:
            body, etag = openapi_v2.json_bytes_and_etag(self.catalog)
        else:
            body, etag = openapi_v2.protobuf_bytes_and_etag(self.catalog)
        headers = {"Content-Type": media, "Vary": "Accept", "Etag": f'"{etag}"'}
        inm = request.headers.get("If-None-Match")
        if inm and discovery.etag_matches(inm, etag):
            return web.Response(status=304, headers={"Vary": "Accept", "Etag": headers["Etag"]})
        return web.Response(body=body, headers=headers)


def _cached(request: web.BaseRequest, body: bytes, etag: str, headers: dict[str, str]) -> web.StreamResponse:
    quoted = f'"{etag}"'
    headers.setdefault("Cache-Control", "public")
    headers["ETag"] = quoted
    inm = request.headers.get("If-None-Match")
    if inm and discovery.etag_matches(inm, etag):
        return web.Response(status=304, headers={k: v for k, v in headers.items() if k != "Content-Type"})
    return web.Response(body=body, headers=headers)
