"""What the Endpoints and EndpointSlice controllers share, as upstream's
``pkg/controller/util/endpoint`` (reference/cluster.md §8): which pods back a Service, how a Service
port resolves on a pod, the address an endpoint gets, and the pod → Services mapping for watches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kplane import runtime
from kplane.api import labels as labels_mod
from kplane.client import dynamic
from kplane.controllers import workload
from kplane.controllers.workload import Object, meta

SERVICES = dynamic.Resource("", "v1", "services", "Service", namespaced=True)
TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
HEADLESS_LABEL = "service.kubernetes.io/headless"


def service_selector(svc: Object) -> labels_mod.Selector | None:
    """The Service's pod selector; None for a Service without one (its endpoints are the user's)."""
    sel = (svc.get("spec") or {}).get("selector")
    if not sel:
        return None
    return labels_mod.from_label_selector({"matchLabels": sel})


def publishes_not_ready(svc: Object) -> bool:
    return bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))


def is_headless(svc: Object) -> bool:
    return (svc.get("spec") or {}).get("clusterIP") == "None"


def backing_pods(svc: Object, pods: list[Object]) -> list[Object]:
    """Pods selected by ``svc`` that have an IP and have not terminated (terminating pods included:
    the Endpoints controller drops them, slices keep them as not ready)."""
    selector = service_selector(svc)
    if selector is None:
        return []
    out = []
    for pod in pods:
        status = pod.get("status") or {}
        if not status.get("podIP") or status.get("phase") in ("Succeeded", "Failed"):
            continue
        if selector.matches(meta(pod).get("labels") or {}):
            out.append(pod)
    return sorted(out, key=lambda p: (p["status"]["podIP"], meta(p).get("uid", "")))


def resolve_port(svc_port: Object, pod: Object) -> int | None:
    """The pod port a Service port's ``targetPort`` names (a number, or a container port's name;
    unset means ``port``); None when a name matches no container port of the pod."""
    target = svc_port.get("targetPort", svc_port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = svc_port.get("protocol") or "TCP"
    for container in (pod.get("spec") or {}).get("containers") or ():
        for cport in container.get("ports") or ():
            if cport.get("name") == target and (cport.get("protocol") or "TCP") == protocol:
                port = cport.get("containerPort")
                return int(port) if isinstance(port, int) else None
    return None


def endpoint_ports(svc: Object, pod: Object) -> list[Object]:
    """``{name, port, protocol[, appProtocol]}`` for each Service port that resolves on ``pod``."""
    out = []
    for sp in (svc.get("spec") or {}).get("ports") or ():
        port = resolve_port(sp, pod)
        if port is None:
            continue
        ep: Object = {"name": sp.get("name") or "", "port": port, "protocol": sp.get("protocol") or "TCP"}
        if sp.get("appProtocol"):
            ep["appProtocol"] = sp["appProtocol"]
        out.append(ep)
    return out


def target_ref(pod: Object) -> Object:
    m = meta(pod)
    return {
        "kind": "Pod",
        "namespace": m.get("namespace", ""),
        "name": m.get("name", ""),
        "uid": m.get("uid", ""),
    }


def hostname(svc: Object, pod: Object) -> str:
    """The pod's hostname when it sets one and its subdomain is the Service's name, else ""."""
    spec = pod.get("spec") or {}
    if spec.get("hostname") and spec.get("subdomain") == meta(svc).get("name"):
        return str(spec["hostname"])
    return ""


def owned_labels(svc: Object) -> dict[str, str]:
    """The Service's labels, plus the headless label for a headless Service."""
    out = dict(meta(svc).get("labels") or {})
    if is_headless(svc):
        out[HEADLESS_LABEL] = ""
    else:
        out.pop(HEADLESS_LABEL, None)
    return out


class PodToServices:
    """Map function for pod events: every Service of the pod's namespace whose selector matches it."""

    def __init__(self, lister: Any) -> None:
        self.lister = lister

    def __call__(self, pod: Object) -> list[runtime.Request]:
        ns = meta(pod).get("namespace", "")
        pod_labels = meta(pod).get("labels") or {}
        out = []
        for svc in self.lister.namespaced(ns).list() if self.lister is not None else ():
            selector = service_selector(svc)
            if selector is not None and selector.matches(pod_labels):
                out.append(runtime.Request(ns, meta(svc)["name"]))
        return out


async def build(
    manager: runtime.Manager,
    reconciler: runtime.Reconciler,
    *,
    name: str,
    output: dynamic.Resource,
    output_map: Callable[[Object], list[runtime.Request]],
    workers: int,
) -> runtime.Controller:
    """A Service controller of ``reconciler``: Services, the pods they select, and what it writes
    (``output``, mapped back to its Service by ``output_map``)."""
    lister = (await manager.cache.informer(SERVICES)).lister()
    return await (
        runtime.Builder(manager)
        .for_(SERVICES)
        .watches(workload.PODS, PodToServices(lister))
        .watches(output, output_map)
        .named(name)
        .with_options(runtime.ControllerOptions(max_concurrent_reconciles=workers))
        .complete(reconciler)
    )
