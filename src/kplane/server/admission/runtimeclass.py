"""RuntimeClass (kubernetes ``plugin/pkg/admission/runtimeclass``): a pod naming a RuntimeClass gets
its overhead and scheduling constraints.

On Pod CREATE with ``spec.runtimeClassName``: the class must exist (403 ``pod rejected:
RuntimeClass "x" not found``); its ``overhead.podFixed`` becomes ``spec.overhead`` (a pod that
already sets a different overhead, or sets one the class does not define, is refused); its
``scheduling.nodeSelector`` is merged into the pod's (a different value for a key is refused) and
its ``scheduling.tolerations`` added when the pod has no equal toleration.
"""

from __future__ import annotations

from kplane.server.admission import plugin
from kplane.server.registry import admitting

NAME = "RuntimeClass"


class RuntimeClass(plugin.Base):
    name = NAME
    resources = frozenset({("", "pods")})

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural == "pods"

    async def mutate(self, attrs: admitting.Attributes) -> None:
        if attrs.operation != "CREATE" or not plugin.is_pod(attrs) or attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        if not isinstance(spec, dict):
            return
        class_name = spec.get("runtimeClassName")
        if not class_name or not isinstance(class_name, str):
            return
        found = await self.ctx.get(self.ctx.record("node.k8s.io", "v1", "runtimeclasses"), "", class_name)
        if found is None:
            raise plugin.forbidden(attrs, f'pod rejected: RuntimeClass "{class_name}" not found')
        fixed = plugin.as_dict(found.get("overhead")).get("podFixed")
        given = spec.get("overhead")
        if fixed:
            if given is not None and given != fixed:
                raise plugin.forbidden(
                    attrs, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
                )
            spec["overhead"] = dict(fixed)
        elif given is not None:
            raise plugin.forbidden(
                attrs, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
            )
        scheduling = plugin.as_dict(found.get("scheduling"))
        selector = plugin.as_dict(scheduling.get("nodeSelector"))
        if selector:
            mine = dict(plugin.as_dict(spec.get("nodeSelector")))
            for key, value in selector.items():
                if key in mine and mine[key] != value:
                    raise plugin.forbidden(
                        attrs,
                        f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                        f"pod.spec.nodeSelector[{key}] = {mine[key]}",
                    )
                mine[key] = value
            spec["nodeSelector"] = mine
        extra = plugin.as_list(scheduling.get("tolerations"))
        if extra:
            tolerations = plugin.as_list(spec.get("tolerations"))
            spec["tolerations"] = [*tolerations, *(t for t in extra if t not in tolerations)]
