"""The scheduler's cache: what each node already holds, kept up to date from pod events.

Upstream's scheduler keeps a ``NodeInfo`` per node (its pods and the sum of their requests) in its
cache, updated by the pod informer's handlers, so filtering a node costs the same however many
pods it runs. Here ``PodAccounting`` does that: ``observe``/``forget`` (fed in event order by the
scheduler's pod watch) count each bound, non-terminal pod once on its node; ``assume`` counts a pod
the scheduler has just bound but whose binding no event has shown yet (upstream's ``AssumePod``),
until the event that shows it bound (``observe`` confirms it) or its deletion, or ``unassume``
when the binding failed. A pod is never counted twice: confirming an assumption moves the pod
from assumed to counted.

Pods being deleted still count until they are gone (they hold their node until the kubelet lets
go); pods in ``Succeeded`` or ``Failed`` do not.
"""

from __future__ import annotations

import dataclasses

from kplane.controllers import common


@dataclasses.dataclass(slots=True)
class _Entry:
    node: str
    uid: str
    requests: dict[str, float]


@dataclasses.dataclass(slots=True)
class NodeUsage:
    """What a node holds: pods counted (bound and assumed) and the sum of their requests."""

    requested: dict[str, float] = dataclasses.field(default_factory=dict)
    pods: int = 0


def _key(pod: common.Object) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class PodAccounting:
    """Per-node usage from bound pods plus assumed ones (module docstring). Single-threaded."""

    def __init__(self) -> None:
        self._counted: dict[str, _Entry] = {}
        self._assumed: dict[str, _Entry] = {}
        self._nodes: dict[str, NodeUsage] = {}

    def usage(self, node: str) -> NodeUsage:
        """``node``'s usage; the caller must not change it."""
        return self._nodes.get(node) or NodeUsage()

    def is_assumed(self, key: str, uid: str) -> bool:
        """Whether the pod ``key`` with ``uid`` is bound by us and not yet seen bound."""
        entry = self._assumed.get(key)
        return entry is not None and entry.uid == uid

    def assume(self, key: str, uid: str, node: str, requests: dict[str, float]) -> None:
        """Count pod ``key`` on ``node`` from now on (its binding is on its way)."""
        self.unassume(key)
        entry = self._assumed[key] = _Entry(node, uid, requests)
        self._add(entry, 1)

    def unassume(self, key: str) -> None:
        """Stop counting an assumption about ``key`` (its binding failed, or it is outdated)."""
        entry = self._assumed.pop(key, None)
        if entry is not None:
            self._add(entry, -1)

    def observe(self, pod: common.Object) -> None:
        """A pod's current state, from an add or update event."""
        key = _key(pod)
        meta = pod.get("metadata") or {}
        uid = meta.get("uid", "")
        node = (pod.get("spec") or {}).get("nodeName") or ""
        assumed = self._assumed.get(key)
        if assumed is not None and (assumed.uid != uid or node):
            self.unassume(key)  # now seen bound (or a new pod under the old name)
        counted = self._counted.get(key)
        want = bool(node) and not common.is_terminal(pod)
        if counted is not None:
            if want and counted.node == node and counted.uid == uid:
                return
            self._add(self._counted.pop(key), -1)
        if want:
            entry = self._counted[key] = _Entry(node, uid, common.pod_requests(pod))
            self._add(entry, 1)

    def forget(self, pod: common.Object) -> None:
        """A pod was deleted."""
        key = _key(pod)
        self.unassume(key)
        counted = self._counted.pop(key, None)
        if counted is not None:
            self._add(counted, -1)

    def _add(self, entry: _Entry, sign: int) -> None:
        usage = self._nodes.get(entry.node)
        if usage is None:
            usage = self._nodes[entry.node] = NodeUsage()
        usage.pods += sign
        for res, value in entry.requests.items():
            usage.requested[res] = usage.requested.get(res, 0.0) + sign * value
        if usage.pods == 0:
            del self._nodes[entry.node]  # no drift from float sums, no entries for nodes long gone
