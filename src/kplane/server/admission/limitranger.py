"""LimitRanger (kubernetes ``plugin/pkg/admission/limitranger``): the namespace's LimitRanges
default and bound container, pod and claim resources.

On Pod CREATE (pod updates are not checked, as upstream), every ``type: Container`` limit of the
namespace's LimitRanges gives a container without a request or limit of a resource the
``defaultRequest``/``default`` value (recorded in the annotation ``kubernetes.io/limit-ranger``).
Then, in the validating pass, ``min``, ``max`` and ``maxLimitRequestRatio`` are checked per
container (``type: Container``) and on the pod's totals (``type: Pod``: the containers' sum, at
least each init container's, sidecars added as upstream's ``podRequests``); on PersistentVolumeClaim
CREATE and UPDATE, ``type: PersistentVolumeClaim`` bounds ``spec.resources.requests``. Violations
are refused together (403) with upstream's messages, e.g. ``minimum cpu usage per Container is 100m,
but request is 50m``, aggregated as ``utilerrors.NewAggregate`` prints them (``[a, b]`` when more
than one, duplicates once).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kplane.api import errors, quantity
from kplane.server.admission import plugin
from kplane.server.registry import admitting

NAME = "LimitRanger"
ANNOTATION = "kubernetes.io/limit-ranger"


def _q(value: Any) -> Decimal | None:
    return quantity.parse(str(value)) if isinstance(value, str | int | float) else None


def _is_claim(attrs: admitting.Attributes) -> bool:
    return (
        attrs.record.group == "" and attrs.record.plural == "persistentvolumeclaims" and not attrs.subresource
    )


class LimitRanger(plugin.Base):
    name = NAME
    resources = frozenset({("", "pods"), ("", "persistentvolumeclaims")})

    def __init__(self, ctx: plugin.Context) -> None:
        self.ctx = ctx

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural == "pods"

    async def _limits(self, namespace: str, kind: str) -> list[dict[str, Any]]:
        ranges = await self.ctx.list(self.ctx.record("", "v1", "limitranges"), namespace)
        return [
            item
            for r in ranges
            for item in plugin.as_list(plugin.as_dict(r.get("spec")).get("limits"))
            if isinstance(item, dict) and item.get("type") == kind
        ]

    async def _container_limits(self, namespace: str) -> list[dict[str, Any]]:
        return await self._limits(namespace, "Container")

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
        if attrs.obj is None:
            return
        if _is_claim(attrs) and attrs.operation in ("CREATE", "UPDATE"):
            problems = await self._claim_problems(attrs.namespace, attrs.obj)
        elif plugin.is_pod(attrs) and attrs.operation == "CREATE":
            problems = await self._pod_problems(attrs.namespace, attrs.obj)
        else:
            return
        if problems:
            raise plugin.forbidden(attrs, errors.aggregate(problems))

    async def _pod_problems(self, namespace: str, pod: dict[str, Any]) -> list[str]:
        spec = plugin.as_dict(pod.get("spec"))
        containers = [c for c in plugin.as_list(spec.get("containers")) if isinstance(c, dict)]
        inits = [c for c in plugin.as_list(spec.get("initContainers")) if isinstance(c, dict)]
        problems: list[str] = []
        for item in await self._container_limits(namespace):
            for container in containers + inits:
                resources = plugin.as_dict(container.get("resources"))
                requests = plugin.as_dict(resources.get("requests"))
                problems += check("Container", item, requests, plugin.as_dict(resources.get("limits")))
        for item in await self._limits(namespace, "Pod"):
            problems += check(
                "Pod", item, pod_total(containers, inits, "requests"), pod_total(containers, inits, "limits")
            )
        return problems

    async def _claim_problems(self, namespace: str, claim: dict[str, Any]) -> list[str]:
        resources = plugin.as_dict(plugin.as_dict(claim.get("spec")).get("resources"))
        requests = plugin.as_dict(resources.get("requests"))
        problems: list[str] = []
        for item in await self._limits(namespace, "PersistentVolumeClaim"):
            # a claim's limits are not user input upstream: min against the request only, max
            # against the request (maxRequestConstraint)
            problems += check("PersistentVolumeClaim", item, requests, {}, max_on_request=True)
        return problems


def _text(value: Any) -> str:
    """A quantity as upstream's ``Quantity.String()`` prints it."""
    parsed = _q(value)
    if parsed is None:
        return str(value)
    return quantity.canonical(parsed, binary=isinstance(value, str) and quantity.is_binary(value))


def _add(total: dict[str, str], resources: dict[str, Any]) -> None:
    """Add ``resources`` into ``total`` (quantity strings; a sum keeps its first term's format,
    as ``Quantity.Add``)."""
    for name, value in resources.items():
        amount = _q(value)
        if amount is None:
            continue
        if name in total:
            binary = quantity.is_binary(total[name])
            amount += _q(total[name]) or Decimal(0)
        else:
            binary = isinstance(value, str) and quantity.is_binary(value)
        total[name] = quantity.canonical(amount, binary=binary)


def _max(total: dict[str, str], resources: dict[str, str]) -> None:
    for name, value in resources.items():
        current = _q(total.get(name))
        amount = _q(value)
        if amount is not None and (current is None or amount > current):
            total[name] = value


def pod_total(containers: list[dict[str, Any]], inits: list[dict[str, Any]], kind: str) -> dict[str, str]:
    """Upstream's ``podRequests``/``podLimits``: the containers' sum, restartable (sidecar) init
    containers added, at least what each other init container needs beside the sidecars before it."""
    total: dict[str, str] = {}
    for container in containers:
        _add(total, plugin.as_dict(plugin.as_dict(container.get("resources")).get(kind)))
    sidecars: dict[str, str] = {}
    init_peak: dict[str, str] = {}
    for container in inits:
        own = plugin.as_dict(plugin.as_dict(container.get("resources")).get(kind))
        if container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            needed = dict(sidecars)
        else:
            needed = dict(sidecars)
            _add(needed, own)
        _max(init_peak, needed)
    _max(total, init_peak)
    return total


def check(
    kind: str,
    item: dict[str, Any],
    requests: dict[str, Any],
    limits: dict[str, Any],
    *,
    max_on_request: bool = False,
) -> list[str]:
    """Upstream's min, max (or maxRequest) and limit/request ratio constraints of one limit item,
    in its order."""
    out = []
    for name, bound in plugin.as_dict(item.get("min")).items():
        low = _q(bound)
        if low is None:
            continue
        req, lim = _q(requests.get(name)), _q(limits.get(name))
        prefix = f"minimum {name} usage per {kind} is {_text(bound)}"
        if req is None:
            out.append(f"{prefix}.  No request is specified")
        elif req < low:
            out.append(f"{prefix}, but request is {_text(requests[name])}")
        elif lim is not None and lim < low:
            out.append(f"{prefix}, but limit is {_text(limits[name])}")
    for name, bound in plugin.as_dict(item.get("max")).items():
        high = _q(bound)
        if high is None:
            continue
        req, lim = _q(requests.get(name)), _q(limits.get(name))
        prefix = f"maximum {name} usage per {kind} is {_text(bound)}"
        if max_on_request:
            if req is None:
                out.append(f"{prefix}.  No request is specified")
            elif req > high:
                out.append(f"{prefix}, but request is {_text(requests[name])}")
        elif lim is None:
            out.append(f"{prefix}.  No limit is specified")
        elif lim > high:
            out.append(f"{prefix}, but limit is {_text(limits[name])}")
        elif req is not None and req > high:
            out.append(f"{prefix}, but request is {_text(requests[name])}")
    for name, bound in plugin.as_dict(item.get("maxLimitRequestRatio")).items():
        ratio = _q(bound)
        if ratio is None:
            continue
        req, lim = _q(requests.get(name)), _q(limits.get(name))
        prefix = f"{name} max limit to request ratio per {kind} is {_text(bound)}"
        if req is None or req == 0:
            out.append(f"{prefix}, but no request is specified or request is 0")
        elif lim is None or lim == 0:
            out.append(f"{prefix}, but no limit is specified or limit is 0")
        elif lim / req > ratio:
            out.append(f"{prefix}, but provided ratio is {float(lim / req):.6f}")
    return out
