"""LimitRanger (kubernetes ``plugin/pkg/admission/limitranger``): the namespace's LimitRanges
default and bound container resources.

On Pod CREATE (pod updates are not checked, as upstream), for every ``type: Container`` limit of
the namespace's LimitRanges: a container without a request or limit of a resource gets the
``defaultRequest``/``default`` value (recorded in the annotation ``kubernetes.io/limit-ranger``),
then ``min``, ``max`` and ``maxLimitRequestRatio`` are checked; violations are refused together
(403, messages joined with ``, ``), e.g. ``minimum cpu usage per Container is 100m, but request is
50m``. ``type: Pod`` and ``type: PersistentVolumeClaim`` limits are not applied yet.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kplane.api import quantity
from kplane.server.admission import plugin
from kplane.server.registry import admitting

NAME = "LimitRanger"
ANNOTATION = "kubernetes.io/limit-ranger"


def _q(value: Any) -> Decimal | None:
    return quantity.parse(str(value)) if isinstance(value, str | int | float) else None


class LimitRanger(plugin.Base):
    name = NAME

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural == "pods"

    async def _container_limits(self, namespace: str) -> list[dict[str, Any]]:
        ranges = await self.ctx.list(self.ctx.record("", "v1", "limitranges"), namespace)
        return [
            item
            for r in ranges
            for item in plugin.as_list(plugin.as_dict(r.get("spec")).get("limits"))
            if isinstance(item, dict) and item.get("type") == "Container"
        ]

    async def mutate(self, attrs: admitting.Attributes) -> None:
        if attrs.operation != "CREATE" or not plugin.is_pod(attrs) or attrs.obj is None:
            return
        spec = attrs.obj.get("spec")
        if not isinstance(spec, dict):
            return
        limits = await self._container_limits(attrs.namespace)
        if not limits:
            return
        notes = []
        for container in plugin.as_list(spec.get("initContainers")) + plugin.as_list(spec.get("containers")):
            if not isinstance(container, dict):
                continue
            resources = container.get("resources")
            if resources is None:
                resources = container["resources"] = {}
            if not isinstance(resources, dict):
                continue
            set_requests: list[str] = []
            set_limits: list[str] = []
            for item in limits:
                for kind, source, written in (
                    ("requests", "defaultRequest", set_requests),
                    ("limits", "default", set_limits),
                ):
                    for name, value in plugin.as_dict(item.get(source)).items():
                        current = plugin.as_dict(resources.get(kind))
                        if name not in current:
                            resources[kind] = {**current, name: value}
                            written.append(name)
            cname = container.get("name")
            if set_requests:
                notes.append(f"{', '.join(set_requests)} request for container {cname}")
            if set_limits:
                notes.append(f"{', '.join(set_limits)} limit for container {cname}")
        if notes:
            meta = attrs.obj.setdefault("metadata", {})
            meta["annotations"] = {
                **plugin.as_dict(meta.get("annotations")),
                ANNOTATION: "LimitRanger plugin set: " + "; ".join(notes),
            }

    async def validate(self, attrs: admitting.Attributes) -> None:
        if attrs.operation != "CREATE" or not plugin.is_pod(attrs) or attrs.obj is None:
            return
        spec = plugin.as_dict(attrs.obj.get("spec"))
        limits = await self._container_limits(attrs.namespace)
        if not limits:
            return
        problems: list[str] = []
        for container in plugin.as_list(spec.get("initContainers")) + plugin.as_list(spec.get("containers")):
            if not isinstance(container, dict):
                continue
            resources = plugin.as_dict(container.get("resources"))
            requests = plugin.as_dict(resources.get("requests"))
            lims = plugin.as_dict(resources.get("limits"))
            for item in limits:
                problems += _check(item, requests, lims)
        if problems:
            raise plugin.forbidden(attrs, ", ".join(problems))


def _check(item: dict[str, Any], requests: dict[str, Any], limits: dict[str, Any]) -> list[str]:
    out = []
    for name, bound in plugin.as_dict(item.get("min")).items():
        low = _q(bound)
        req = _q(requests.get(name))
        if low is None:
            continue
        if req is None:
            out.append(f"minimum {name} usage per Container is {bound}.  No request is specified")
        elif req < low:
            out.append(f"minimum {name} usage per Container is {bound}, but request is {requests[name]}")
    for name, bound in plugin.as_dict(item.get("max")).items():
        high = _q(bound)
        lim = _q(limits.get(name))
        if high is None:
            continue
        if lim is None:
            out.append(f"maximum {name} usage per Container is {bound}.  No limit is specified")
        elif lim > high:
            out.append(f"maximum {name} usage per Container is {bound}, but limit is {limits[name]}")
    for name, bound in plugin.as_dict(item.get("maxLimitRequestRatio")).items():
        ratio = _q(bound)
        req, lim = _q(requests.get(name)), _q(limits.get(name))
        if ratio is None or req is None or lim is None or req == 0:
            continue
        actual = lim / req
        if actual > ratio:
            out.append(
                f"{name} max limit to request ratio per Container is {bound}, "
                f"but provided ratio is {float(actual):.6f}"
            )
    return out
