"""Simulated nodes: registration, Lease heartbeats and status, as each node's kubelet does.

``NodeSimulator`` registers ``count`` Nodes (``kplane-node-0``...) with kwok's default capacity
(cpu 1k, memory 1Ti) and the kubelet's ``maxPods`` 110, upstream's condition reasons and
messages, InternalIP/Hostname addresses, a pod CIDR and ``nodeInfo`` whose ``kubeletVersion`` is
the server's version. Each node's Lease in ``kube-node-lease`` is renewed every 10 s (a quarter
of its 40 s duration) and its status posted every 5 min (``nodeStatusReportFrequency``): one
task renews every node, spread over the period, each renewal one PUT of the Lease it holds.

A Node annotated ``kplane.dev/heartbeat: stopped`` is left alone (no Lease renewal, no status):
a lost node for the lifecycle controller; removing the annotation brings it back Ready at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import typed
from kplane.controllers import common

log = logging.getLogger(__name__)

LEASE_DURATION = 40
RENEW_INTERVAL = LEASE_DURATION / 4
STATUS_REPORT_INTERVAL = 300.0
CAPACITY = {"cpu": "1k", "memory": "1Ti", "pods": "110", "ephemeral-storage": "1Ti"}
_CONCURRENCY = 32


def node_name(index: int) -> str:
    return f"kplane-node-{index}"


def internal_ip(index: int) -> str:
    n = index + 2
    return f"172.18.{n // 256}.{n % 256}"


def pod_cidr(index: int) -> str:
    return f"10.{64 + index // 256}.{index % 256}.0/24"


def _hex(seed: str, length: int = 32) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def node_conditions(now: str, transitions: dict[str, str] | None = None) -> list[common.Object]:
    """A healthy kubelet's conditions (pkg/kubelet/nodestatus/setters.go), heartbeat ``now``."""
    rows = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]
    transitions = transitions or {}
    return [
        {
            "type": kind,
            "status": status,
            "lastHeartbeatTime": now,
            "lastTransitionTime": transitions.get(kind, now),
            "reason": reason,
            "message": message,
        }
        for kind, status, reason, message in rows
    ]


NodeAPI = Callable[[str], typed.Client]
"""The client through which the simulated node of that name (and its kubelet) reaches the server:
upstream's kubelets each act as ``system:node:<name>`` in the group ``system:nodes``."""


class NodeSimulator:
    """Registers the simulated Nodes and keeps their Leases and status fresh (module docstring).
    Each node's requests go through ``node_api(name)`` (default: the manager's client)."""

    def __init__(self, manager: runtime.Manager, count: int, *, node_api: NodeAPI | None = None) -> None:
        self.manager = manager
        self.api: NodeAPI = node_api or (lambda _name: manager.api)
        self.count = count
        self.names = [node_name(i) for i in range(count)]
        self.clock = manager.clock
        self._leases: dict[str, common.Object] = {}
        self._reported: dict[str, float] = {}
        self._stopped: set[str] = set()
        self._version = "v1.32.0"
        self._nodes_informer: Any = None

    async def setup(self) -> None:
        """Create the Node informer (before the manager starts its cache)."""
        self._nodes_informer = await self.manager.cache.informer(common.NODES)

    async def start(self) -> None:
        """Register every node, then renew Leases and status until cancelled."""
        try:
            version = await self.api(node_name(0)).rest.request("GET", "/version")
            self._version = str(version.get("gitVersion") or self._version)
        except errors.APIError:
            pass
        sem = asyncio.Semaphore(_CONCURRENCY)

        async def register(i: int) -> None:
            async with sem:
                await self._register(i)

        await asyncio.gather(*(register(i) for i in range(self.count)))
        await self._heartbeat_loop()

    # Registration.

    def _node(self, index: int) -> common.Object:
        name = node_name(index)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/os": "linux",
                    "beta.kubernetes.io/arch": "amd64",
                    "type": "kplane",
                },
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {
                "podCIDR": pod_cidr(index),
                "podCIDRs": [pod_cidr(index)],
                "providerID": f"kplane://{name}",
            },
        }

    def _status(self, index: int, now: str, transitions: dict[str, str] | None = None) -> common.Object:
        name = node_name(index)
        return {
            "capacity": dict(CAPACITY),
            "allocatable": dict(CAPACITY),
            "conditions": node_conditions(now, transitions),
            "addresses": [
                {"type": "InternalIP", "address": internal_ip(index)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": _hex("machine" + name),
                "systemUUID": _hex("uuid" + name),
                "bootID": _hex("boot" + name),
                "kernelVersion": "6.1.0-kplane",
                "osImage": "kplane simulated node",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": self._version,
                "kubeProxyVersion": self._version,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }

    async def _register(self, index: int) -> None:
        name = node_name(index)
        nodes = self.api(name).dynamic.resource(common.NODES)
        try:
            node = await nodes.create(self._node(index))
        except errors.AlreadyExists:
            node = await nodes.get(name)
        await self._post_status(index, node)
        await self._renew(name, node)

    async def _post_status(self, index: int, node: common.Object | None = None) -> None:
        """Post the node's full status; conditions keep their transition times when unchanged."""
        name = node_name(index)
        transitions: dict[str, str] = {}
        healthy = {c["type"]: c["status"] for c in node_conditions("")}
        for c in ((node or {}).get("status") or {}).get("conditions") or []:
            if healthy.get(c.get("type")) == c.get("status") and c.get("lastTransitionTime"):
                transitions[c["type"]] = c["lastTransitionTime"]
        nodes = self.api(name).dynamic.resource(common.NODES)
        status = self._status(index, common.rfc3339(self.clock), transitions)
        await nodes.patch(name, {"status": status}, patch_type="merge", subresource="status")
        self._reported[name] = self.clock.monotonic()

    # Heartbeats.

    async def _renew(self, name: str, node: common.Object | None = None) -> None:
        """Renew ``name``'s Lease (create it, owned by the Node, when missing)."""
        leases = self.api(name).dynamic.resource(common.LEASES, common.NODE_LEASE_NAMESPACE)
        now = self.clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease = self._leases.get(name)
        if lease is not None:
            lease["spec"]["renewTime"] = now
            try:
                self._leases[name] = await leases.update(lease)
                return
            except (errors.Conflict, errors.NotFound):
                self._leases.pop(name, None)
        try:
            lease = await leases.get(name)
            lease["spec"]["renewTime"] = now
            lease["spec"]["holderIdentity"] = name
            self._leases[name] = await leases.update(lease)
        except errors.NotFound:
            owner = node or await self.api(name).dynamic.resource(common.NODES).get(name)
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": name,
                    "namespace": common.NODE_LEASE_NAMESPACE,
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Node", "name": name, "uid": owner["metadata"]["uid"]}
                    ],
                },
                "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION, "renewTime": now},
            }
            self._leases[name] = await leases.create(body)

    def _heartbeat_stopped(self, name: str) -> bool:
        node = self._nodes_informer.store.get_by_key(name) if self._nodes_informer is not None else None
        return bool(
            node
            and ((node.get("metadata") or {}).get("annotations") or {}).get(common.HEARTBEAT) == "stopped"
        )

    async def _heartbeat_loop(self) -> None:
        """Every node renews once per ``RENEW_INTERVAL``, in slices spread over the interval."""
        slices = max(1, min(self.count, 10))
        per_slice = -(-self.count // slices) if self.count else 0
        due = self.clock.monotonic()
        while True:
            for s in range(slices):
                # Deadlines, not fixed sleeps: a slow slice does not stretch the renewal period.
                due = max(due + RENEW_INTERVAL / slices, self.clock.monotonic())  # missed ticks dropped
                await self.clock.sleep(max(0.0, due - self.clock.monotonic()))
                batch = range(s * per_slice, min(self.count, (s + 1) * per_slice))
                await asyncio.gather(*(self._beat(i) for i in batch))

    async def _beat(self, index: int) -> None:
        name = node_name(index)
        if self._heartbeat_stopped(name):
            self._stopped.add(name)
            return
        try:
            back = name in self._stopped
            self._stopped.discard(name)
            due = self.clock.monotonic() - self._reported.get(name, 0.0) >= STATUS_REPORT_INTERVAL
            if back or due:
                node = self._nodes_informer.store.get_by_key(name) if self._nodes_informer else None
                await self._post_status(index, node)
            await self._renew(name)
        except errors.NotFound:
            await self._register(index)  # the Node was deleted: a kubelet registers again
        except (errors.APIError, OSError) as err:
            log.warning("node %s heartbeat failed: %s", name, err)

    def is_stopped(self, name: str) -> bool:
        """True while ``name``'s heartbeat is stopped by its annotation."""
        return self._heartbeat_stopped(name)
