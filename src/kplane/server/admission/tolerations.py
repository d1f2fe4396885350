"""DefaultTolerationSeconds and TaintNodesByCondition (kubernetes ``plugin/pkg/admission/
defaulttolerationseconds`` and ``nodetaint``).

Pods (CREATE and UPDATE) tolerate ``node.kubernetes.io/not-ready`` and ``.../unreachable``
(``NoExecute``) for 300 s unless a toleration of that key, or of every key, with effect
``NoExecute`` or any effect, exists. Nodes are created with the ``node.kubernetes.io/not-ready``
``NoSchedule`` taint (the node controller removes it once the node is Ready).
"""

from __future__ import annotations

from kplane.server.admission import plugin
from kplane.server.registry import admitting

DEFAULT_TOLERATION_SECONDS = "DefaultTolerationSeconds"
TAINT_NODES_BY_CONDITION = "TaintNodesByCondition"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_SECONDS = 300


class DefaultTolerationSeconds(plugin.Base):
    name = DEFAULT_TOLERATION_SECONDS
    resources = frozenset({("", "pods")})

    def __init__(
        self, *, not_ready_seconds: int = DEFAULT_SECONDS, unreachable_seconds: int = DEFAULT_SECONDS
    ) -> None:
        self.seconds = {NOT_READY: not_ready_seconds, UNREACHABLE: unreachable_seconds}

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural == "pods"

    async def mutate(self, attrs: admitting.Attributes) -> None:
        if attrs.operation not in ("CREATE", "UPDATE") or not plugin.is_pod(attrs) or attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        if not isinstance(spec, dict):
            return
        tolerations = plugin.as_list(spec.get("tolerations"))
        added = []
        for key, seconds in self.seconds.items():
            if not any(
                isinstance(t, dict)
                and t.get("key", "") in ("", key)
                and t.get("effect", "") in ("", "NoExecute")
                for t in tolerations
            ):
                added.append(
                    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
                )
        if added:
            spec["tolerations"] = [*tolerations, *added]


class TaintNodesByCondition(plugin.Base):
    name = TAINT_NODES_BY_CONDITION
    resources = frozenset({("", "nodes")})

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural == "nodes"

    async def mutate(self, attrs: admitting.Attributes) -> None:
        record = attrs.record
        if attrs.operation != "CREATE" or record.group or record.plural != "nodes" or attrs.subresource:
            return
        if attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        if spec is None:
            spec = attrs.obj["spec"] = {}
        if not isinstance(spec, dict):
            return
        taints = plugin.as_list(spec.get("taints"))
        if not any(
            isinstance(t, dict) and t.get("key") == NOT_READY and t.get("effect") == "NoSchedule"
            for t in taints
        ):
            spec["taints"] = [*taints, {"key": NOT_READY, "effect": "NoSchedule"}]
