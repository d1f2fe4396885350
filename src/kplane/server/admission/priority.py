"""Priority (kubernetes ``plugin/pkg/admission/priority``): pods get their PriorityClass's value.

On Pod CREATE: an empty ``priorityClassName`` takes the ``globalDefault`` class (the lowest value
when several), else priority 0 and ``PreemptLowerPriority``; an unknown class is refused (403
``no PriorityClass with name foo was found``); a client-set ``priority`` or ``preemptionPolicy``
that differs from the computed one is refused. On Pod UPDATE, omitted values are kept from the old
pod. PriorityClass writes: at most one ``globalDefault``. The two system classes are created at
start-up (``SYSTEM_CLASSES``).
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from kplane.api import errors
from kplane.api.catalog import Catalog
from kplane.server.admission import plugin
from kplane.server.registry import admitting
from kplane.server.registry.store import Registry

NAME = "Priority"
_GROUP = "scheduling.k8s.io"
SYSTEM_CLASSES: tuple[dict[str, Any], ...] = tuple(
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": description,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    for name, value, description in (
        (
            "system-node-critical",
            2000001000,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        (
            "system-cluster-critical",
            2000000000,
            "Used for system critical pods that must run in the cluster, "
            "but can be moved to another node if necessary.",
        ),
    )
)


class Priority(plugin.Base):
    name = NAME
    resources = frozenset({("", "pods"), (_GROUP, "priorityclasses")})

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural == "pods"

    def _classes(self) -> Any:
        return self.ctx.list(self.ctx.record(_GROUP, "v1", "priorityclasses"))

    async def mutate(self, attrs: admitting.Attributes) -> None:
        if not plugin.is_pod(attrs) or attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        if not isinstance(spec, dict):
            return
        if attrs.operation == "UPDATE":
            old_spec = plugin.as_dict((attrs.old or {}).get("spec"))
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and old_spec.get(key) is not None:
                    spec[key] = old_spec[key]
            return
        if attrs.operation != "CREATE":
            return
        class_name = spec.get("priorityClassName")
        value, policy = 0, "PreemptLowerPriority"
        if class_name:
            found = await self.ctx.get(self.ctx.record(_GROUP, "v1", "priorityclasses"), "", str(class_name))
            if found is None:
                raise plugin.forbidden(attrs, f"no PriorityClass with name {class_name} was found")
            value = int(found.get("value") or 0)
            policy = str(found.get("preemptionPolicy") or policy)
        else:
            defaults = [c for c in await self._classes() if c.get("globalDefault") is True]
            if defaults:
                chosen = min(defaults, key=lambda c: int(c.get("value") or 0))
                spec["priorityClassName"] = chosen["metadata"]["name"]
                value = int(chosen.get("value") or 0)
                policy = str(chosen.get("preemptionPolicy") or policy)
        given = spec.get("priority")
        if given is not None and given != value:
            raise plugin.forbidden(
                attrs,
                f"the integer value of priority ({given}) must not be provided in pod spec; priority "
                f"admission controller computed {value} from the given PriorityClass name",
            )
        spec["priority"] = value
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise plugin.forbidden(
                attrs,
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod spec; "
                f"priority admission controller computed {policy} from the given PriorityClass name",
            )
        spec["preemptionPolicy"] = policy

    async def validate(self, attrs: admitting.Attributes) -> None:
        record = attrs.record
        if record.group != _GROUP or record.plural != "priorityclasses" or attrs.subresource:
            return
        if attrs.operation not in ("CREATE", "UPDATE") or attrs.obj is None:
            return
        if attrs.obj.get("globalDefault") is not True:
            return
        for other in await self._classes():
            other_name = other["metadata"]["name"]
            if other.get("globalDefault") is True and other_name != attrs.name:
                raise plugin.forbidden(
                    attrs,
                    f"PriorityClass {other_name} is already marked as default. Only one default can exist",
                )


async def ensure_system_classes(registry: Registry, catalog: Catalog) -> None:
    """Create the system PriorityClasses that do not exist (upstream's scheduling post-start hook)."""
    record = catalog.lookup(_GROUP, "v1", "priorityclasses")
    assert record is not None
    for cls in SYSTEM_CLASSES:
        with contextlib.suppress(errors.AlreadyExists):
            await registry.create(record, "", copy.deepcopy(cls))
