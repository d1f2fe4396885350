"""Where a Service reference of a webhook points: upstream's endpoint resolver, over the cache.

kube-apiserver dials a webhook Service's cluster IP (or, with aggregator routing, an endpoint).
kplane has no cluster network, so it always resolves like apiserver's ``proxy.ResolveEndpoint``:
the Service's port with the webhook's port number, then the Endpoints subset port of the same name,
and the first ready address of that subset. A Service whose Endpoints list ``127.0.0.1`` thus reaches
a webhook server on the host. Reads are dict lookups in the cache (``peek``), never storage I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Object = dict[str, Any]
Peek = Callable[[str], "Object | None"]


class ResolveError(Exception):
    """The Service cannot be reached; ``str()`` is upstream's wording."""


def _dicts(value: Any) -> list[Object]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


class EndpointResolver:
    """``resolve(namespace, name, port) -> (host, port)`` from Services and Endpoints in the cache."""

    def __init__(self, peek: Peek) -> None:
        self._peek = peek

    def __call__(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        svc = self._peek(f"/registry/core/services/{namespace}/{name}")
        if svc is None:
            raise ResolveError(f'service "{name}" not found')
        spec = svc.get("spec") if isinstance(svc.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        kind = spec.get("type") or "ClusterIP"
        if kind not in ("ClusterIP", "LoadBalancer", "NodePort"):
            raise ResolveError(f'unsupported service type "{kind}"')
        svc_port = next((p for p in _dicts(spec.get("ports")) if p.get("port") == port), None)
        if svc_port is None:
            raise ResolveError(f'no service port {port} found for service "{name}"')
        eps = self._peek(f"/registry/core/endpoints/{namespace}/{name}")
        if eps is None:
            raise ResolveError(f'endpoints "{name}" not found')
        port_name = svc_port.get("name") or ""
        for subset in _dicts(eps.get("subsets")):
            addresses = _dicts(subset.get("addresses"))
            if not addresses:
                continue
            for p in _dicts(subset.get("ports")):
                if (p.get("name") or "") == port_name and isinstance(p.get("port"), int):
                    ip = addresses[0].get("ip")
                    if isinstance(ip, str) and ip:
                        return ip, int(p["port"])
        raise ResolveError(f'no endpoints available for service "{name}"')
