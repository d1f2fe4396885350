"""Per-kind behaviour on the write path, and the generic default.

The registry calls, in order: ``prepare_for_create`` / ``prepare_for_update`` (fill or reset fields
the server owns), then ``validate``. Everything common to all kinds (system metadata, finalizers,
generation bumps, optimistic concurrency) lives in the registry, not here. A strategy may mutate the
object it is given (it is the registry's private copy) and must not keep references to it.
"""

from __future__ import annotations

import base64
import ipaddress
import random
from collections.abc import Awaitable, Callable
from typing import Any

from kplane.api import errors, validation
from kplane.api.catalog import ResourceRecord
from kplane.server.registry import customscale, eventvalidation
from kplane.server.registry.fieldschema import Requester

Object = dict[str, Any]
ListCurrent = Callable[[ResourceRecord], Awaitable[list[Object]]]


class Strategy:
    """The default strategy: any kind without special rules."""

    name_rule = "subdomain"
    keep_status_on_create = False

    def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: ListCurrent
    ) -> Awaitable[None] | None:
        """Set what the server owns on create; None when done at once, else an awaitable that
        finishes it (strategies that read the store are coroutines). Here: ``reset_on_create``."""
        self.reset_on_create(record, obj)
        return None

    def reset_on_create(self, record: ResourceRecord, obj: Object) -> None:
        """Reset what a client may not set on create: status, for kinds with a status subresource."""
        if record.has_status and not self.keep_status_on_create:
            obj.pop("status", None)

    def record_requester(self, obj: Object, requester: Requester | None) -> None:
        """Record who creates ``obj``, for kinds that keep it (after ``prepare_for_create``)."""

    def prepare_for_update(self, record: ResourceRecord, new: Object, old: Object) -> None:
        """Main-endpoint update of a kind with a status subresource: status stays as stored."""
        if record.has_status:
            _copy_key(new, old, "status")

    def prepare_for_status_update(self, record: ResourceRecord, new: Object, old: Object) -> Object:
        """A write through ``/status`` changes only ``status``: the result is ``old`` with new status."""
        result = dict(old)
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        return result

    def prepare_for_subresource_update(
        self, record: ResourceRecord, subresource: str, new: Object, old: Object
    ) -> Object:
        """A write through a subresource that changes part of the object (``status``,
        ``pods/ephemeralcontainers``, ``certificatesigningrequests/approval``): the result is
        ``old`` with that part taken from ``new``; metadata stays ``old``'s (the registry sees to it)."""
        if subresource == "status":
            return self.prepare_for_status_update(record, new, old)
        raise errors.resource_not_found()

    def validate_object(
        self, record: ResourceRecord, obj: Object, old: Object | None, subresource: str = ""
    ) -> list[errors.FieldError]:
        """Upstream's hand-written rules of the kind (``kplane.api.validation``, built-in kinds only;
        not for writes through a subresource, which upstream checks by their own rules), then the
        strategy's own ``validate``: the errors that follow the metadata's in one 422."""
        builtin: list[errors.FieldError] = []
        if not record.custom and not subresource:
            builtin = validation.validate(record.group, record.kind, obj, old)
        return builtin + self.validate(record, obj, old)

    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        return []

    def finalizers_on_delete(self, record: ResourceRecord) -> tuple[str, ...]:
        """Finalizers the first delete adds (with ``deletionTimestamp``), making it graceful."""
        return ()

    def grace_period(self, obj: Object, requested: int | None) -> int:
        """Seconds a delete of ``obj`` waits for its owner (a kubelet) to finish it; 0: delete at once
        (upstream's ``CheckGracefulDelete``; only pods have one)."""
        return 0

    def holds_deletion(self, obj: Object) -> bool:
        """Whether something besides ``metadata.finalizers`` keeps ``obj`` from being deleted
        (a Namespace's ``spec.finalizers``)."""
        return False

    def mark_deleting(self, obj: Object) -> None:
        """What else the first delete of a graceful deletion sets on ``obj`` (besides
        ``deletionTimestamp``): a Namespace's ``Terminating`` phase."""

    def spec_changed(self, record: ResourceRecord, new: Object, old: Object) -> bool:
        """True when a write changes what ``metadata.generation`` counts: all but metadata/status."""
        keys = (set(new) | set(old)) - {"metadata", "status", "apiVersion", "kind"}
        return any(new.get(k) != old.get(k) for k in keys)


def _copy_key(new: Object, old: Object, key: str) -> None:
    if key in old:
        new[key] = old[key]
    else:
        new.pop(key, None)


class NamespaceStrategy(Strategy):
    name_rule = "label"

    async def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: ListCurrent
    ) -> None:
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        meta = obj["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}

    def prepare_for_update(self, record: ResourceRecord, new: Object, old: Object) -> None:
        _copy_key(new, old, "status")
        _copy_key(new, old, "spec")
        meta = new["metadata"]
        name = old["metadata"]["name"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": name}

    def prepare_for_subresource_update(
        self, record: ResourceRecord, subresource: str, new: Object, old: Object
    ) -> Object:
        """``/finalize`` changes only ``spec.finalizers`` (upstream's finalize REST)."""
        if subresource != "finalize":
            return super().prepare_for_subresource_update(record, subresource, new, old)
        new_spec = new.get("spec")
        finalizers = (new_spec.get("finalizers") if isinstance(new_spec, dict) else None) or []
        if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
            raise errors.BadRequest(
                'Namespace in version "v1" cannot be handled as a Namespace: json: cannot unmarshal '
                "into Go struct field NamespaceSpec.spec.finalizers of type []v1.FinalizerName"
            )
        result = dict(old)
        result["spec"] = {**(old.get("spec") or {}), "finalizers": finalizers}
        return result

    def holds_deletion(self, obj: Object) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))

    def mark_deleting(self, obj: Object) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"


class PodStrategy(Strategy):
    async def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: ListCurrent
    ) -> None:
        spec = obj.get("spec")
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec if isinstance(spec, dict) else {})}

    def spec_changed(self, record: ResourceRecord, new: Object, old: Object) -> bool:
        return False

    def grace_period(self, obj: Object, requested: int | None) -> int:
        """Upstream's pod ``CheckGracefulDelete`` (pkg/registry/core/pod/strategy.go): the requested
        period, else ``terminationGracePeriodSeconds`` (default 30); 0 for a pod no node runs (not
        bound, or Succeeded/Failed), which goes at once."""
        spec = _dict(obj.get("spec"))
        if not spec.get("nodeName") or _dict(obj.get("status")).get("phase") in ("Succeeded", "Failed"):
            return 0
        grace = requested if requested is not None else spec.get("terminationGracePeriodSeconds", 30)
        return max(grace, 0) if isinstance(grace, int) else 30

    def prepare_for_subresource_update(
        self, record: ResourceRecord, subresource: str, new: Object, old: Object
    ) -> Object:
        if subresource == "binding":
            return new  # the server's own write: spec.nodeName and the PodScheduled condition
        if subresource != "ephemeralcontainers":
            return super().prepare_for_subresource_update(record, subresource, new, old)
        # Upstream's ephemeralcontainers strategy: only spec.ephemeralContainers changes.
        spec = dict(old.get("spec") or {})
        new_spec = new.get("spec")
        containers = new_spec.get("ephemeralContainers") if isinstance(new_spec, dict) else None
        if containers:
            spec["ephemeralContainers"] = containers
        else:
            spec.pop("ephemeralContainers", None)
        return {**old, "spec": spec}


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else empty: strategies run before schema validation, so
    they may not assume a shape (the schema step reports the wrong type afterwards)."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _qos_class(spec: dict[str, Any]) -> str:
    containers = [c for c in _list(spec.get("containers")) if isinstance(c, dict)]
    requests_any = limits_all = False
    limits_all = bool(containers)
    for c in containers:
        res = _dict(c.get("resources"))
        req, lim = _dict(res.get("requests")), _dict(res.get("limits"))
        if req or lim:
            requests_any = True
        if not ({"cpu", "memory"} <= set(lim)) or any(
            req.get(k, lim.get(k)) != lim.get(k) for k in ("cpu", "memory")
        ):
            limits_all = False
    if not requests_any:
        return "BestEffort"
    return "Guaranteed" if limits_all else "Burstable"


SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


class ServiceStrategy(Strategy):
    name_rule = "dns1035"

    async def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: ListCurrent
    ) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        ports = _list(spec.get("ports"))
        for p in ports:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")
                if "port" in p:
                    p.setdefault("targetPort", p["port"])
        if spec["type"] != "ExternalName" and spec.get("clusterIP") in (None, ""):
            used = {_dict(s.get("spec")).get("clusterIP") for s in await list_current(record)}
            spec["clusterIP"] = _allocate_ip(used)
            spec["clusterIPs"] = [spec["clusterIP"]]
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
        if spec["type"] in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
            services = await list_current(record)
            used_ports = {
                p.get("nodePort")
                for s in services
                for p in _list(_dict(s.get("spec")).get("ports"))
                if isinstance(p, dict)
            }
            for p in ports:
                if isinstance(p, dict) and not p.get("nodePort"):
                    p["nodePort"] = _allocate_port(used_ports)
                    used_ports.add(p["nodePort"])
        obj["status"] = {"loadBalancer": {}}

    def prepare_for_update(self, record: ResourceRecord, new: Object, old: Object) -> None:
        super().prepare_for_update(record, new, old)
        new_spec, old_spec = new.get("spec"), _dict(old.get("spec"))
        if isinstance(new_spec, dict):
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if key in old_spec and not new_spec.get(key):
                    new_spec[key] = old_spec[key]

    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [errors.required("spec")]
        allowed = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
        if spec.get("type") not in allowed:
            return [errors.not_supported("spec.type", spec.get("type"), allowed)]
        errs: list[errors.FieldError] = []
        if old is not None:
            old_ip = _dict(old.get("spec")).get("clusterIP")
            if old_ip and spec.get("clusterIP") != old_ip:
                errs.append(errors.invalid("spec.clusterIP", spec.get("clusterIP"), "field is immutable"))
        for i, p in enumerate(_list(spec.get("ports"))):
            port = p.get("port") if isinstance(p, dict) else None
            if not isinstance(port, int) or not 1 <= port <= 65535:
                errs.append(
                    errors.invalid(f"spec.ports[{i}].port", port, "must be between 1 and 65535, inclusive")
                )
        return errs


def _allocate_ip(used: set[Any]) -> str:
    hosts = SERVICE_CIDR.num_addresses - 2
    for _ in range(64):
        ip = str(SERVICE_CIDR.network_address + 2 + random.randrange(hosts - 1))
        if ip not in used:
            return ip
    raise errors.InternalError("range is full: no free cluster IP could be allocated")


def _allocate_port(used: set[Any]) -> int:
    for _ in range(256):
        port = random.randint(30000, 32767)
        if port not in used:
            return port
    raise errors.InternalError("range is full: no free node port could be allocated")


class NodeStrategy(Strategy):
    keep_status_on_create = True


class _GoStruct:
    """A value upstream prints with Go's ``%#v`` (a field error about a whole internal struct)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _update_strategy_errors(
    obj: Object, path: str, go_type: str, rolling_type: str, allowed: list[str]
) -> list[errors.FieldError]:
    """Upstream's hand-written check of a workload's update strategy (apps validation
    ``ValidateDeploymentStrategy``/``ValidateDaemonSetUpdateStrategy``): an unknown ``type`` is
    reported on the strategy itself, whose internal Go struct is printed with ``%#v``. OpenAPI's
    ``enum`` for the field is documentation only, as upstream's schema never enforces it."""
    spec = obj.get("spec")
    strat = spec.get(path) if isinstance(spec, dict) else None
    if not isinstance(strat, dict) or strat.get("type") in allowed or "type" not in strat:
        return []
    kind = strat.get("type")
    # Go prints a non-nil pointer as its address; kplane has none to show, so a fixed one stands in.
    rolling = "(nil)" if strat.get("rollingUpdate") is None else "(0xc000100000)"
    text = (
        f"apps.{go_type}{{Type:{errors.go_quote(str(kind))}, RollingUpdate:(*apps.{rolling_type}){rolling}}}"
    )
    return [errors.not_supported(f"spec.{path}", _GoStruct(text), allowed)]


class DaemonSetStrategy(Strategy):
    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        return _update_strategy_errors(
            obj,
            "updateStrategy",
            "DaemonSetUpdateStrategy",
            "RollingUpdateDaemonSet",
            ["RollingUpdate", "OnDelete"],
        )


class DeploymentStrategy(Strategy):
    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        return _update_strategy_errors(
            obj, "strategy", "DeploymentStrategy", "RollingUpdateDeployment", ["Recreate", "RollingUpdate"]
        )

    def spec_changed(self, record: ResourceRecord, new: Object, old: Object) -> bool:
        """Deployments also count annotation changes (upstream's rollback/pause annotations)."""
        if super().spec_changed(record, new, old):
            return True
        return _dict(new.get("metadata")).get("annotations") != _dict(old.get("metadata")).get("annotations")


class JobStrategy(Strategy):
    """Upstream's Job strategy: unless ``spec.manualSelector`` is true, a create gets a selector on
    its uid and the template gets the job-name and controller-uid labels, each in its current
    (``batch.kubernetes.io/``) and legacy spelling; labels the user set are kept (a conflict is
    then refused by validation upstream)."""

    async def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: ListCurrent
    ) -> None:
        self.reset_on_create(record, obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("manualSelector") is True:
            return
        template = spec.get("template")
        if not isinstance(template, dict):
            return
        meta = obj["metadata"]
        name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
        tmeta = template.get("metadata")
        tmeta = template["metadata"] = dict(tmeta) if isinstance(tmeta, dict) else {}
        labels = tmeta.get("labels")
        labels = tmeta["labels"] = dict(labels) if isinstance(labels, dict) else {}
        for key, value in (
            (_JOB_NAME_LEGACY, name),
            (_JOB_NAME, name),
            (_CONTROLLER_UID_LEGACY, uid),
            (_CONTROLLER_UID, uid),
        ):
            labels.setdefault(key, value)
        selector = spec.get("selector")
        selector = spec["selector"] = dict(selector) if isinstance(selector, dict) else {}
        match = selector.get("matchLabels")
        match = selector["matchLabels"] = dict(match) if isinstance(match, dict) else {}
        match.setdefault(_CONTROLLER_UID, uid)


_JOB_NAME_LEGACY, _JOB_NAME = "job-name", "batch.kubernetes.io/job-name"
_CONTROLLER_UID_LEGACY, _CONTROLLER_UID = "controller-uid", "batch.kubernetes.io/controller-uid"


class SecretStrategy(Strategy):
    """``stringData`` is write-only: merged into ``data`` (base64) and never stored."""

    async def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: ListCurrent
    ) -> None:
        _fold_string_data(obj)

    def prepare_for_update(self, record: ResourceRecord, new: Object, old: Object) -> None:
        _fold_string_data(new)


def _fold_string_data(obj: Object) -> None:
    string_data = obj.pop("stringData", None)
    if not isinstance(string_data, dict) or not string_data:
        return
    data = dict(_dict(obj.get("data")))
    for key, value in string_data.items():
        if isinstance(value, str):
            data[key] = base64.b64encode(value.encode()).decode()
    obj["data"] = data


class EventStrategy(Strategy):
    """Events, through core/v1 or events.k8s.io/v1: upstream's hand-written checks
    (``eventvalidation``), the strict ones for creates through events.k8s.io."""

    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        if old is None:
            return eventvalidation.validate_create(obj, record.api_version)
        return eventvalidation.validate_update(obj)


class PathNameStrategy(Strategy):
    """Kinds whose names are path segments (RBAC: ``system:controller:x``)."""

    name_rule = "path"


DEFAULT = Strategy()
_BY_KIND: dict[tuple[str, str], Strategy] = {
    ("", "Namespace"): NamespaceStrategy(),
    ("", "Pod"): PodStrategy(),
    ("", "Service"): ServiceStrategy(),
    ("", "Node"): NodeStrategy(),
    ("", "Secret"): SecretStrategy(),
    ("", "Event"): EventStrategy(),
    ("events.k8s.io", "Event"): EventStrategy(),
    ("apps", "Deployment"): DeploymentStrategy(),
    ("apps", "DaemonSet"): DaemonSetStrategy(),
    ("batch", "Job"): JobStrategy(),
    ("rbac.authorization.k8s.io", "Role"): PathNameStrategy(),
    ("rbac.authorization.k8s.io", "ClusterRole"): PathNameStrategy(),
    ("rbac.authorization.k8s.io", "RoleBinding"): PathNameStrategy(),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): PathNameStrategy(),
}


def for_record(record: ResourceRecord) -> Strategy:
    """The built-in strategy of ``record``'s kind (the default one for kinds without special rules)."""
    if record.custom:
        return CUSTOM
    return _BY_KIND.get((record.group, record.kind), DEFAULT)


class CustomResourceStrategy(Strategy):
    """Custom objects: generation counts every change outside metadata (and outside status, when
    status has its own subresource)."""

    def spec_changed(self, record: ResourceRecord, new: Object, old: Object) -> bool:
        skip = {"metadata", "apiVersion", "kind"}
        if record.has_status:
            skip.add("status")
        return any(new.get(k) != old.get(k) for k in (set(new) | set(old)) - skip)

    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        return customscale.validate(record, obj)


CUSTOM = CustomResourceStrategy()
