"""Objects kube-apiserver keeps about its own API: one local APIService per served group-version
(built-in or defined by CRDs). (The API Priority and Fairness configuration: ``flowcontrolconfig``.)

They are created at start when missing and never overwritten (a restart keeps what users changed,
except that a deleted one comes back). APIService priorities are upstream's table
(``pkg/controlplane/apiserver/aggregator.go`` and ``pkg/controlplane/apis/...``, 1.32).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.server.registry.deletion import DeleteOptions
from kplane.server.registry.store import Registry

Object = dict[str, Any]

# (group, version) -> (groupPriorityMinimum, versionPriority), upstream's values.
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
}


def _apiservice(group: str, version: str, priorities: tuple[int, int], automanaged: str) -> Object:
    spec: Object = {
        "version": version,
        "groupPriorityMinimum": priorities[0],
        "versionPriority": priorities[1],
    }
    if group:
        spec = {"group": group, **spec}
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {
            "name": f"{version}.{group}",
            "labels": {"kube-aggregator.kubernetes.io/automanaged": automanaged},
        },
        "spec": spec,
    }


def local_apiservices(catalog: Catalog) -> list[Object]:
    """The local APIService of every served built-in group-version upstream registers."""
    served = {(r.group, r.version) for r in catalog if not r.custom}
    return [
        _apiservice(group, version, priorities, "onstart")
        for (group, version), priorities in PRIORITIES.items()
        if (group, version) in served
    ]


def crd_apiservices(catalog: Catalog) -> list[Object]:
    """One local APIService per group-version served by CRDs, with the priorities upstream's CRD
    registration controller gives them (group 1000, version 100) and its ``automanaged: true``."""
    served = sorted({(r.group, r.version) for r in catalog if r.custom})
    return [_apiservice(group, version, CRD_PRIORITIES, "true") for group, version in served]


CRD_PRIORITIES = (1000, 100)


def metrics_apiservice() -> Object:
    """``v1beta1.metrics.k8s.io`` as metrics-server's manifest installs it (kplane serves the API
    in process, so ``APIServiceStrategy`` reports it Available)."""
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
        "spec": {
            "service": {"name": "metrics-server", "namespace": "kube-system", "port": 443},
            "group": "metrics.k8s.io",
            "version": "v1beta1",
            "insecureSkipTLSVerify": True,
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
        },
    }


class CRDAPIServices:
    """Keeps one APIService per CRD group-version: after every CRD write, the missing ones are
    created and those of group-versions no CRD serves any more are deleted (in the background,
    one pass at a time; a write during a pass triggers another)."""

    def __init__(self, registry: Registry, catalog: Catalog) -> None:
        self.registry = registry
        self.catalog = catalog
        self._task: asyncio.Task[None] | None = None
        self._again = False
        registry.after_write(
            self._after_write, resource=("apiextensions.k8s.io", "customresourcedefinitions")
        )

    def _after_write(self, record: ResourceRecord, obj: Object, deleted: bool) -> None:
        if record.group != "apiextensions.k8s.io" or record.plural != "customresourcedefinitions":
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        self._again = True
        while self._again:
            self._again = False
            await self.reconcile()

    async def reconcile(self) -> None:
        record = self.catalog.lookup("apiregistration.k8s.io", "v1", "apiservices")
        if record is None:
            return
        wanted = crd_apiservices(self.catalog)
        names = {o["metadata"]["name"] for o in wanted}
        await asyncio.gather(*(_ensure(self.registry, record, obj) for obj in wanted))
        for current in await self.registry.list_current(record):
            meta = current.get("metadata") or {}
            managed = (meta.get("labels") or {}).get("kube-aggregator.kubernetes.io/automanaged") == "true"
            if managed and meta.get("name") not in names:
                with contextlib.suppress(errors.NotFound):
                    await self.registry.delete(record, "", meta["name"], DeleteOptions())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def get_or_create(registry: Registry, record: ResourceRecord, wanted: Object) -> Object | None:
    """The cluster-scoped object named as ``wanted`` if it exists; else ``wanted`` (a copy) is
    created and None returned (also when a concurrent writer created it first)."""
    try:
        return await registry.get(record, "", wanted["metadata"]["name"])
    except errors.NotFound:
        pass
    with contextlib.suppress(errors.AlreadyExists):
        await registry.create(record, "", copy.deepcopy(wanted))
    return None


async def _ensure(registry: Registry, record: ResourceRecord, obj: Object) -> None:
    await get_or_create(registry, record, obj)


async def ensure_api_objects(registry: Registry, catalog: Catalog) -> None:
    """Create every missing local APIService (concurrently, so that a first start commits them
    together)."""
    apiservices = catalog.lookup("apiregistration.k8s.io", "v1", "apiservices")
    if apiservices is not None:
        todo = [(apiservices, obj) for obj in local_apiservices(catalog)]
        if catalog.lookup("metrics.k8s.io", "v1beta1", "pods") is not None:
            todo.append((apiservices, metrics_apiservice()))
        await asyncio.gather(*(_ensure(registry, record, obj) for record, obj in todo))
