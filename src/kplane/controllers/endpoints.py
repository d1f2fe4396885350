"""The Endpoints controller, as upstream's ``pkg/controller/endpoint`` (reference/cluster.md §8).

For each Service with a selector, the Endpoints object of the same name lists the selected pods that
have an IP, have not terminated and are not terminating (terminating ones stay only with
``publishNotReadyAddresses``): Ready pods (or all, with ``publishNotReadyAddresses``) under
``addresses``, others under ``notReadyAddresses``, each ``{ip, nodeName, targetRef[, hostname]}``.
Pods are grouped into subsets by the set of Service ports that resolve on them (named
``targetPort``s through the pod's container ports), addresses sorted by IP. The object carries the
Service's labels (+ the headless label) and ``endpoints.kubernetes.io/last-change-trigger-time``
(the time this controller saw the change, RFC 3339 with nanoseconds), is written only when its
content changes, truncated to 1000 addresses with ``endpoints.kubernetes.io/over-capacity:
truncated``, and deleted with its Service (only when it carries the trigger-time annotation that
this controller writes: an Endpoints a user made before its Service is left alone). Services
without a selector (``default/kubernetes``, whose Endpoints the API server keeps) are left alone.
"""

from __future__ import annotations

import datetime
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic
from kplane.controllers import endpointutil as eu
from kplane.controllers import workload
from kplane.controllers.workload import Object, meta

ENDPOINTS = dynamic.Resource("", "v1", "endpoints", "Endpoints", namespaced=True)
MAX_ADDRESSES = 1000
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"


def _same_name(obj: Object) -> list[runtime.Request]:
    m = meta(obj)
    return [runtime.Request(m.get("namespace", ""), m.get("name", ""))]


def desired_subsets(svc: Object, pods: list[Object]) -> tuple[list[Object], bool]:
    """The subsets for ``svc`` from its candidate pods, and whether addresses were left out (more
    than ``MAX_ADDRESSES``)."""
    groups: dict[str, Object] = {}
    count = 0
    publish = eu.publishes_not_ready(svc)
    for pod in eu.backing_pods(svc, pods):
        if meta(pod).get("deletionTimestamp") and not publish:
            continue
        if count >= MAX_ADDRESSES:
            return _finish(groups), True
        ports = eu.endpoint_ports(svc, pod)
        if (svc.get("spec") or {}).get("ports") and not ports:
            continue  # no Service port resolves on this pod
        addr: Object = {"ip": pod["status"]["podIP"]}
        host = eu.hostname(svc, pod)
        if host:
            addr["hostname"] = host
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            addr["nodeName"] = node
        addr["targetRef"] = eu.target_ref(pod)
        key = repr(sorted((p["name"], p["port"], p["protocol"]) for p in ports))
        subset = groups.setdefault(key, {"ports": ports})
        field = "addresses" if publish or workload.is_ready(pod) else "notReadyAddresses"
        subset.setdefault(field, []).append(addr)
        count += 1
    return _finish(groups), False


def _finish(groups: dict[str, Object]) -> list[Object]:
    subsets = []
    for subset in groups.values():
        if not subset["ports"]:
            del subset["ports"]
        subsets.append(subset)
    return subsets


class EndpointsController:
    """Reconciles Services into Endpoints; ``setup`` wires Services, pods and Endpoints."""

    def __init__(self, manager: runtime.Manager, *, workers: int = 5) -> None:
        self.manager = manager
        self.client = manager.client
        self.api = manager.api.dynamic.resource(ENDPOINTS)
        self.clock = manager.clock
        self._workers = workers

    async def setup(self) -> runtime.Controller:
        """Build the controller (added to the manager by the builder)."""
        return await eu.build(
            self.manager,
            self,
            name="endpoint",
            output=ENDPOINTS,
            output_map=_same_name,
            workers=self._workers,
        )

    async def reconcile(self, request: runtime.Request) -> runtime.Result | None:
        try:
            svc = await self.client.get(eu.SERVICES, request.name, request.namespace)
        except errors.NotFound:
            await self._delete_orphan(request)
            return None
        if eu.service_selector(svc) is None or meta(svc).get("deletionTimestamp"):
            return None
        pods = await self.client.list(workload.PODS, request.namespace)
        subsets, over = desired_subsets(svc, pods)
        try:
            current: Object | None = await self.client.get(ENDPOINTS, request.name, request.namespace)
        except errors.NotFound:
            current = None
        labels = eu.owned_labels(svc)
        annotations = dict(meta(current).get("annotations") or {}) if current else {}
        if (
            current is not None
            and (current.get("subsets") or []) == subsets
            and (meta(current).get("labels") or {}) == labels
            and (OVER_CAPACITY in annotations) == over
        ):
            return None
        annotations[eu.TRIGGER_TIME] = rfc3339_nano(self.clock.now())
        if over:
            annotations[OVER_CAPACITY] = "truncated"
        else:
            annotations.pop(OVER_CAPACITY, None)
        body: Object = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": request.name, "labels": labels, "annotations": annotations},
            "subsets": subsets,
        }
        try:
            if current is None:
                await self.api.create(body, namespace=request.namespace)
            else:
                body["metadata"]["resourceVersion"] = meta(current).get("resourceVersion")
                await self.api.update(body, namespace=request.namespace)
        except (errors.Conflict, errors.NotFound):
            return runtime.Result(requeue=True)  # the cache is behind: try again on fresher state
        except errors.APIError as err:
            if any(c.reason == "NamespaceTerminating" for c in err.causes):
                return None
            raise
        return None

    async def _delete_orphan(self, request: runtime.Request) -> None:
        try:
            current = await self.client.get(ENDPOINTS, request.name, request.namespace)
        except errors.NotFound:
            return
        if eu.TRIGGER_TIME not in (meta(current).get("annotations") or {}):
            return  # not written by this controller (a user's, for a Service yet to come)
        try:
            await self.api.delete(request.name, namespace=request.namespace)
        except errors.NotFound:
            pass


def rfc3339_nano(when: Any) -> str:
    text: str = when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text.rstrip("0").rstrip(".") + "Z"
