"""ResourceQuota usage: what an object costs, and the controller that keeps ``status.used`` true.

``usage`` is upstream's quota evaluators in one function (kubernetes ``pkg/quota/v1/evaluator/
core`` and apiserver ``pkg/quota/v1/generic``): every object counts as ``count/<resource>[.<group>]``;
pods, services, configmaps, secrets, replication controllers, resource quotas and PVCs also count
under their core names; pods add their compute requests and limits (``cpu``/``memory`` alias the
requests), except terminal pods, which count only as ``count/pods``; services add
``services.nodeports``/``services.loadbalancers``; PVCs add ``requests.storage`` (also per
StorageClass). ``matches`` applies the basic scopes (Terminating, NotTerminating, BestEffort,
NotBestEffort) to pods.

``QuotaController`` is upstream's resourcequota controller, inside the server until the built-in
controllers exist: when a ResourceQuota is written with ``status.hard`` unlike ``spec.hard``, and
when an object of a namespace holding quotas is deleted, it recounts the namespace and writes
``status`` (``hard`` from the spec, ``used`` for each hard resource). Increments happen at
admission (``kplane.server.admission.resourcequota``), decrements only by this recount, as upstream.
"""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from typing import Any

from kplane.api import errors, quantity
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.server.registry.store import Registry

log = logging.getLogger("kplane.server.quotas")
Object = dict[str, Any]
CORE_COUNTED = frozenset(
    {
        "pods",
        "services",
        "configmaps",
        "secrets",
        "replicationcontrollers",
        "resourcequotas",
        "persistentvolumeclaims",
    }
)
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_TERMINAL = ("Succeeded", "Failed")
_STORAGE_SUFFIX = ".storageclass.storage.k8s.io/"


def count_name(group: str, plural: str) -> str:
    return f"count/{plural}" if not group else f"count/{plural}.{group}"


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _q(v: Any) -> Decimal:
    if isinstance(v, int | float):
        return Decimal(str(v))
    if not isinstance(v, str):
        return Decimal(0)
    return quantity.parse(v) or Decimal(0)


def parse_used(v: Any) -> Decimal:
    """A quantity of a quota's ``status`` (0 when absent or malformed)."""
    return _q(v)


def pod_resources(spec: Object) -> dict[str, Decimal]:
    """requests.X / limits.X of a pod: containers summed, each init container a floor, plus overhead."""
    out: dict[str, Decimal] = {}
    for kind in ("requests", "limits"):
        total: dict[str, Decimal] = {}
        for c in _list(spec.get("containers")):
            for name, v in _dict(_dict(_dict(c).get("resources")).get(kind)).items():
                total[name] = total.get(name, Decimal(0)) + _q(v)
        for c in _list(spec.get("initContainers")):
            for name, v in _dict(_dict(_dict(c).get("resources")).get(kind)).items():
                total[name] = max(total.get(name, Decimal(0)), _q(v))
        for name, v in _dict(spec.get("overhead")).items():
            total[name] = total.get(name, Decimal(0)) + _q(v)
        for name, value in total.items():
            out[f"{kind}.{name}"] = value
            if kind == "requests" and name in ("cpu", "memory"):
                out[name] = value
    return out


def usage(record: ResourceRecord, obj: Object) -> dict[str, Decimal]:
    """What ``obj`` costs against a quota, by resource name."""
    one = Decimal(1)
    out = {count_name(record.group, record.plural): one}
    if record.group:
        return out
    plural = record.plural
    if plural == "pods" and _dict(obj.get("status")).get("phase") in _TERMINAL:
        return out
    if plural in CORE_COUNTED:
        out[plural] = one
    spec = _dict(obj.get("spec"))
    if plural == "pods":
        out.update(pod_resources(spec))
    elif plural == "services":
        kind = spec.get("type")
        if kind == "LoadBalancer":
            out["services.loadbalancers"] = one
        if kind in ("NodePort", "LoadBalancer"):
            out["services.nodeports"] = Decimal(len(_list(spec.get("ports"))))
    elif plural == "persistentvolumeclaims":
        storage = _q(_dict(_dict(spec.get("resources")).get("requests")).get("storage", 0))
        out["requests.storage"] = storage
        cls = spec.get("storageClassName")
        if isinstance(cls, str) and cls:
            out[f"{cls}{_STORAGE_SUFFIX}requests.storage"] = storage
            out[f"{cls}{_STORAGE_SUFFIX}persistentvolumeclaims"] = one
    return out


def _best_effort(spec: Object) -> bool:
    return not any(
        _dict(_dict(c).get("resources")).get(k)
        for key in ("containers", "initContainers")
        for c in _list(spec.get(key))
        for k in ("requests", "limits")
    )


def matches(quota: Object, record: ResourceRecord, obj: Object) -> bool:
    """Whether ``quota``'s basic scopes select ``obj`` (scopes select pods only)."""
    scopes = [s for s in _list(_dict(quota.get("spec")).get("scopes")) if isinstance(s, str)]
    if not scopes:
        return True
    if record.group or record.plural != "pods":
        return False
    spec = _dict(obj.get("spec"))
    for scope in scopes:
        terminating = spec.get("activeDeadlineSeconds") is not None
        ok = {
            "Terminating": terminating,
            "NotTerminating": not terminating,
            "BestEffort": _best_effort(spec),
            "NotBestEffort": not _best_effort(spec),
        }.get(scope, True)
        if not ok:
            return False
    return True


def render(values: dict[str, Decimal], hard: dict[str, Any]) -> dict[str, str]:
    """Usage as quantity strings, in the format (binary or decimal) of each hard limit."""
    return {
        k: quantity.canonical(v, binary=quantity.is_binary(str(hard.get(k, "")))) for k, v in values.items()
    }


class QuotaController:
    """Recounts the quotas of a namespace (see the module docstring)."""

    def __init__(self, registry: Registry, catalog: Catalog) -> None:
        self.registry = registry
        self.catalog = catalog
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        registry.after_write(self._after_write)

    def _quotas_record(self) -> ResourceRecord:
        record = self.catalog.lookup("", "v1", "resourcequotas")
        assert record is not None
        return record

    def _after_write(self, record: ResourceRecord, obj: Object, deleted: bool) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace")
        if not namespace:
            return
        if not record.group and record.plural == "resourcequotas" and not deleted:
            if _dict(obj.get("status")).get("hard") == _dict(obj.get("spec")).get("hard"):
                return
        elif not deleted:
            return
        self.recount_soon(namespace)

    def recount_soon(self, namespace: str) -> None:
        task = self._tasks.get(namespace)
        if task is not None and not task.done():
            self._again.add(namespace)
            return
        self._tasks[namespace] = asyncio.get_running_loop().create_task(self._recount(namespace))

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def start(self) -> None:
        namespaces = {
            q["metadata"]["namespace"] for q in await self.registry.list_current(self._quotas_record())
        }
        for namespace in namespaces:
            self.recount_soon(namespace)

    async def _recount(self, namespace: str) -> None:
        try:
            while True:
                self._again.discard(namespace)
                await self._recount_once(namespace)
                if namespace not in self._again:
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("recounting the quotas of %s failed", namespace)

    def _records_for(self, names: set[str]) -> list[ResourceRecord]:
        found: dict[str, ResourceRecord] = {}
        for record in self.catalog:
            if not record.namespaced or record.key_prefix in found:
                continue
            mine = {count_name(record.group, record.plural)}
            if (
                (not record.group and record.plural in ("pods", "services", "persistentvolumeclaims"))
                or mine & names
                or (not record.group and record.plural in names)
            ):
                found[record.key_prefix] = record
        return list(found.values())

    async def _recount_once(self, namespace: str) -> None:
        qrecord = self._quotas_record()
        quotas = [
            q
            for q in await self.registry.list_current(qrecord)
            if q["metadata"].get("namespace") == namespace
        ]
        if not quotas:
            return
        names = {k for q in quotas for k in _dict(_dict(q.get("spec")).get("hard"))}
        objects: list[tuple[ResourceRecord, Object]] = []
        for record in self._records_for(names):
            page = await self.registry.storage.list(record.namespace_prefix(namespace))
            objects += [(record, o) for o in page.items]
        for quota in quotas:
            hard = dict(_dict(_dict(quota.get("spec")).get("hard")))
            used = dict.fromkeys(hard, Decimal(0))
            for record, obj in objects:
                if matches(quota, record, obj):
                    for k, v in usage(record, obj).items():
                        if k in used:
                            used[k] += v
            status = {"hard": hard, "used": render(used, hard)}

            def write(current: Object, status: Object = status) -> Object:
                return {**current, "status": status}

            try:
                await self.registry.update(
                    qrecord, namespace, quota["metadata"]["name"], write, subresource="status"
                )
            except errors.NotFound:
                pass
