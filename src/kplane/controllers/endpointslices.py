"""The EndpointSlice controller, as upstream's ``pkg/controller/endpointslice`` (reference/cluster.md §8).

For each Service with a selector, IPv4 EndpointSlices (``generateName: <svc>-``, controller ref to
the Service, labels = the Service's + ``kubernetes.io/service-name`` +
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`` (+ headless label))
hold one endpoint per selected pod that has an IP and has not terminated — terminating pods too:
``conditions {ready: serving and not terminating (always true with publishNotReadyAddresses),
serving: pod Ready, terminating: being deleted}``, ``nodeName``, ``targetRef``, ``hostname``.
Endpoints are grouped by the set of Service ports resolving on them (a slice has one port list),
sorted by IP, and packed at most ``max_endpoints`` (upstream's default 100) per slice.

Departure: upstream places endpoints to minimise churn (fills existing slices, tolerates
fragmentation); this controller computes the packed set and rewrites the slices that differ,
reusing existing slices in name order, deleting the surplus. The result is what a fresh upstream
sync would produce; updates of a large Service may touch more slices than upstream's.
"""

from __future__ import annotations

from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic
from kplane.controllers import endpoints as endpoints_mod
from kplane.controllers import endpointutil as eu
from kplane.controllers import workload
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

ENDPOINTSLICES = dynamic.Resource(
    "discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", namespaced=True
)
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100


def _slice_owner(obj: Object) -> list[runtime.Request]:
    labels = meta(obj).get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or not labels.get(SERVICE_NAME_LABEL):
        return []
    return [runtime.Request(meta(obj).get("namespace", ""), labels[SERVICE_NAME_LABEL])]


def desired_groups(svc: Object, pods: list[Object]) -> list[tuple[list[Object], list[Object]]]:
    """``(ports, endpoints)`` per distinct port set, endpoints sorted by IP."""
    groups: dict[str, tuple[list[Object], list[Object]]] = {}
    publish = eu.publishes_not_ready(svc)
    has_ports = bool((svc.get("spec") or {}).get("ports"))
    for pod in eu.backing_pods(svc, pods):
        ports = eu.endpoint_ports(svc, pod)
        if has_ports and not ports:
            continue
        terminating = bool(meta(pod).get("deletionTimestamp"))
        serving = workload.is_ready(pod)
        ep: Object = {
            "addresses": [pod["status"]["podIP"]],
            "conditions": {
                "ready": publish or (serving and not terminating),
                "serving": serving,
                "terminating": terminating,
            },
        }
        host = eu.hostname(svc, pod)
        if host:
            ep["hostname"] = host
        ep["targetRef"] = eu.target_ref(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            ep["nodeName"] = node
        key = repr(sorted((p["name"], p["port"], p["protocol"]) for p in ports))
        groups.setdefault(key, (ports, []))[1].append(ep)
    return list(groups.values())


class EndpointSliceController:
    """Reconciles Services into EndpointSlices; ``setup`` wires Services, pods and the slices."""

    def __init__(
        self, manager: runtime.Manager, *, workers: int = 5, max_endpoints: int = MAX_ENDPOINTS_PER_SLICE
    ) -> None:
        if not 1 <= max_endpoints <= 1000:
            raise ValueError("max endpoints per slice must be between 1 and 1000")
        self.manager = manager
        self.client = manager.client
        self.api = manager.api.dynamic.resource(ENDPOINTSLICES)
        self.clock = manager.clock
        self.max_endpoints = max_endpoints
        self._workers = workers

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        return await eu.build(
            self.manager,
            self,
            name="endpointslice",
            output=ENDPOINTSLICES,
            output_map=_slice_owner,
            workers=self._workers,
        )

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        selector = f"{SERVICE_NAME_LABEL}={request.name},{MANAGED_BY_LABEL}={MANAGED_BY}"
        existing = sorted(
            await self.client.list(ENDPOINTSLICES, request.namespace, label_selector=selector),
            key=lambda s: meta(s).get("name", ""),
        )
        try:
            svc = await self.client.get(eu.SERVICES, request.name, request.namespace)
        except errors.NotFound:
            svc = None
        if svc is None or eu.service_selector(svc) is None or meta(svc).get("deletionTimestamp"):
            for old in existing:  # the garbage collector would too; do not wait for it
                await self._delete(old)
            return None
        pods = await self.client.list(workload.PODS, request.namespace)
        wanted: list[Object] = []
        for ports, eps in desired_groups(svc, pods):
            for start in range(0, len(eps), self.max_endpoints):
                wanted.append({"ports": ports, "endpoints": eps[start : start + self.max_endpoints]})
        if not wanted:
            wanted = [{"ports": [], "endpoints": []}]  # upstream keeps one empty placeholder slice
        labels = {**eu.owned_labels(svc), SERVICE_NAME_LABEL: request.name, MANAGED_BY_LABEL: MANAGED_BY}
        owner = ownership.owner_reference({**svc, "apiVersion": "v1", "kind": "Service"}, controller=True)
        try:
            for i, want in enumerate(wanted):
                await self._write(request, existing[i] if i < len(existing) else None, want, labels, owner)
        except (errors.Conflict, errors.NotFound):
            return runtime.Result(requeue=True)  # the cache is behind: try again on fresher state
        for old in existing[len(wanted) :]:
            await self._delete(old)
        return None

    async def _write(
        self, request: runtime.Request, current: Object | None, want: Object, labels: Any, owner: Object
    ) -> None:
        if (
            current is not None
            and (current.get("endpoints") or []) == want["endpoints"]
            and (current.get("ports") or []) == want["ports"]
            and (meta(current).get("labels") or {}) == labels
        ):
            return
        annotations = dict(meta(current).get("annotations") or {}) if current else {}
        annotations[eu.TRIGGER_TIME] = endpoints_mod.rfc3339_nano(self.clock.now())
        body: Object = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"labels": labels, "annotations": annotations, "ownerReferences": [owner]},
            "addressType": "IPv4",
            "endpoints": want["endpoints"],
            "ports": want["ports"],
        }
        try:
            if current is None:
                body["metadata"]["generateName"] = f"{request.name}-"
                await self.api.create(body, namespace=request.namespace)
            else:
                body["metadata"]["name"] = meta(current)["name"]
                body["metadata"]["resourceVersion"] = meta(current).get("resourceVersion")
                await self.api.update(body, namespace=request.namespace)
        except errors.APIError as err:
            if any(c.reason == "NamespaceTerminating" for c in err.causes):
                return
            raise

    async def _delete(self, obj: Object) -> None:
        try:
            await self.api.delete(meta(obj)["name"], namespace=meta(obj).get("namespace", ""))
        except errors.NotFound:
            pass
