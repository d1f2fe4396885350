"""The simulated kubelets' resource usage reports, which the server serves as ``metrics.k8s.io``.

Upstream, metrics-server scrapes each kubelet's ``/metrics/resource`` every 15 s. kplane's server
never calls its controllers, so each simulated node pushes instead: ``UsageReporter`` PUTs the
node's report to ``/kplane/v1/nodes/<node>/resource-usage`` (``server/endpoints/resourcemetrics``)
within ``DEBOUNCE`` of a change to one of its pods, and otherwise every ``RESOLUTION`` (15 s,
metrics-server's default) for nodes running pods and every ``IDLE_RESOLUTION`` for empty ones.
A node whose heartbeat is stopped reports nothing, so its metrics vanish as on a lost node.

What a container uses is set by pod annotations (``kplane.controllers.common``):
``kplane.dev/cpu-usage`` and ``kplane.dev/memory-usage``, either one quantity for every
container (``250m``, ``64Mi``) or per container (``app=250m,sidecar=10m``; containers not named
get the default). Without them a container uses ``DEFAULT_CPU`` and ``DEFAULT_MEMORY``. A node's
usage is the sum of its running pods' plus what the Node's own annotations of the same names say
its system daemons use (default nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from decimal import Decimal
from typing import Any

import orjson

from kplane import runtime
from kplane.api import errors, quantity
from kplane.controllers import common, nodes

log = logging.getLogger(__name__)

RESOLUTION = 15.0
IDLE_RESOLUTION = 45.0  # within the server's 60 s staleness bound, with margin
DEBOUNCE = 1.0
WINDOW = "15s"
DEFAULT_CPU = "1m"
DEFAULT_MEMORY = "4Mi"
_PATH = "/kplane/v1/nodes/{}/resource-usage"


def _annotations(obj: common.Object) -> dict[str, str]:
    return ((obj.get("metadata") or {}).get("annotations") or {}) or {}


def container_usage(pod: common.Object, container: str, resource: str) -> Decimal:
    """What ``container`` of ``pod`` uses of ``resource`` (``cpu`` in cores, ``memory`` in bytes)
    by the pod's annotation (module docstring); unreadable values count as the default."""
    key, default = (
        (common.CPU_USAGE, DEFAULT_CPU) if resource == "cpu" else (common.MEMORY_USAGE, DEFAULT_MEMORY)
    )
    text = _annotations(pod).get(key, "").strip()
    chosen = default
    if text and "=" not in text:
        chosen = text
    elif text:
        for part in text.split(","):
            name, _, given = part.partition("=")
            if name.strip() == container:
                chosen = given.strip()
    value = quantity.parse(chosen)
    if value is None or value < 0:
        return quantity.parse(default) or Decimal(0)
    return value


def pod_report(pod: common.Object) -> common.Object | None:
    """``pod``'s entry of a node report: its running containers' usage; None unless Running."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return None
    running = {
        cs.get("name") for cs in status.get("containerStatuses") or [] if "running" in (cs.get("state") or {})
    }
    containers = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        name = c.get("name", "")
        if name not in running:
            continue
        cpu, memory = container_usage(pod, name, "cpu"), container_usage(pod, name, "memory")
        usage = {"cpu": quantity.canonical(cpu), "memory": quantity.canonical(memory, binary=True)}
        containers.append({"name": name, "usage": usage})
    meta = pod.get("metadata") or {}
    return {
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "containers": containers,
    }


def node_report(node: common.Object | None, pods: list[common.Object], timestamp: str) -> common.Object:
    """The report of a node running ``pods``: their entries and the node's total."""
    entries = [e for e in (pod_report(p) for p in pods) if e is not None]
    cpu = memory = Decimal(0)
    for e in entries:
        for c in e["containers"]:
            cpu += quantity.parse(c["usage"]["cpu"]) or Decimal(0)
            memory += quantity.parse(c["usage"]["memory"]) or Decimal(0)
    system = _annotations(node or {})
    cpu += quantity.parse(system.get(common.CPU_USAGE, "0")) or Decimal(0)
    memory += quantity.parse(system.get(common.MEMORY_USAGE, "0")) or Decimal(0)
    return {
        "timestamp": timestamp,
        "window": WINDOW,
        "usage": {"cpu": quantity.canonical(cpu), "memory": quantity.canonical(memory, binary=True)},
        "pods": entries,
    }


class UsageReporter:
    """A manager runnable reporting every simulated node's usage (module docstring)."""

    def __init__(self, manager: runtime.Manager, simulator: nodes.NodeSimulator) -> None:
        self.manager = manager
        self.clock = manager.clock
        self.simulator = simulator
        self._pods: Any = None
        self._nodes: Any = None
        self._dirty: set[str] = set(simulator.names)
        self._sent: dict[str, float] = {}
        self._names = frozenset(simulator.names)

    async def setup(self) -> None:
        """Create the informers and the pod handler (before the manager starts its cache)."""
        from kplane.informers import handlers

        self._pods = await self.manager.cache.informer(common.PODS)
        self._nodes = await self.manager.cache.informer(common.NODES)
        self._pods.add_event_handler(
            handlers.HandlerFuncs(
                add=self._touch, update=lambda old, new: self._touch(new), delete=self._touch
            )
        )

    def _touch(self, pod: Any) -> None:
        obj = getattr(pod, "obj", pod)  # a DeletedFinalStateUnknown carries the last state
        if isinstance(obj, dict):
            node = (obj.get("spec") or {}).get("nodeName")
            if node in self._names:
                self._dirty.add(node)

    async def start(self) -> None:
        """Report until cancelled: dirty nodes each ``DEBOUNCE``, the others when due."""
        while True:
            await self.clock.sleep(DEBOUNCE)
            await self.report_due()

    async def report_due(self) -> None:
        """One pass: report the nodes that changed or whose report is due."""
        now = self.clock.monotonic()
        by_node: dict[str, list[common.Object]] = {}
        for pod in self._pods.store.list():
            node = (pod.get("spec") or {}).get("nodeName")
            if isinstance(node, str) and node in self._names:
                by_node.setdefault(node, []).append(pod)
        due = []
        for name in self.simulator.names:
            period = RESOLUTION if by_node.get(name) else IDLE_RESOLUTION
            if name in self._dirty or now - self._sent.get(name, -1e18) >= period:
                due.append(name)
        self._dirty.difference_update(due)
        sem = asyncio.Semaphore(16)

        async def send(name: str) -> None:
            async with sem:
                await self._send(name, by_node.get(name, []))

        await asyncio.gather(*(send(n) for n in due if not self.simulator.is_stopped(n)))

    async def _send(self, name: str, pods: list[common.Object]) -> None:
        node = self._nodes.store.get_by_key(name) if self._nodes is not None else None
        body = orjson.dumps(node_report(node, pods, common.rfc3339(self.clock)))
        try:
            await self.simulator.api(name).rest.request("PUT", _PATH.format(name), body=body)
            self._sent[name] = self.clock.monotonic()
        except errors.NotFound:
            self._dirty.add(name)  # the Node is not registered yet
        except (errors.APIError, OSError) as err:
            self._dirty.add(name)
            with contextlib.suppress(Exception):
                log.debug("usage report of %s failed: %s", name, err)
