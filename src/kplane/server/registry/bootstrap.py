"""Objects every cluster has that point at the API server itself: ``default/kubernetes``.

In-cluster clients find the API server through the ``kubernetes`` Service (first address of the
service range, port 443) and its Endpoints. kplane serves on loopback, so the Endpoints name the
address and port it actually listens on, and are refreshed on every start.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kplane.api import errors
from kplane.api.catalog import Catalog
from kplane.server.registry.store import Registry

SERVICE_IP = "10.96.0.1"


async def ensure_kubernetes_service(registry: Registry, catalog: Catalog, *, host: str, port: int) -> None:
    services = catalog.lookup("", "v1", "services")
    endpoints = catalog.lookup("", "v1", "endpoints")
    assert services is not None and endpoints is not None
    labels = {"component": "apiserver", "provider": "kubernetes"}
    service: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes", "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": SERVICE_IP,
            "clusterIPs": [SERVICE_IP],
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        },
    }
    with contextlib.suppress(errors.AlreadyExists):
        await registry.create(services, "default", service)
    subsets = [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
    try:
        await registry.update(
            endpoints, "default", "kubernetes", lambda current: {**current, "subsets": subsets}
        )
    except errors.NotFound:
        await registry.create(
            endpoints,
            "default",
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "labels": labels},
                "subsets": subsets,
            },
        )
