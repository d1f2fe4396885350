"""Printers for the smaller built-in groups: coordination, networking, discovery, rbac,
scheduling, storage, policy, autoscaling, metrics and admissionregistration."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kplane.api import quantity
from kplane.server.endpoints.table import _format
from kplane.server.endpoints.table import printer as p


def _name_age(obj: _format.Obj, ctx: _format.Context, *middle: Any) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    return [meta.get("name", ""), *middle, ctx.age(meta.get("creationTimestamp"))]


def _int_or_string(value: Any) -> str:
    return _format.go_text(value) if value is not None else "N/A"


# -- coordination.k8s.io Lease ---------------------------------------------------------------

LEASE_COLUMNS = (p.NAME, p.column("Holder", description="The identity holding the lease."), p.AGE)


def lease_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    return _name_age(obj, ctx, _format.as_str(_format.get(obj, "spec", "holderIdentity")))


# -- networking.k8s.io -----------------------------------------------------------------------

INGRESS_COLUMNS = (
    p.NAME,
    p.column("Class", description="The IngressClass that implements this ingress."),
    p.column("Hosts", description="Hosts that requests are matched against."),
    p.column("Address", description="Addresses of the load balancer serving the ingress."),
    p.column("Ports", description="Ports the ingress serves (443 when TLS is configured)."),
    p.AGE,
)


def _ingress_hosts(rules: list[Any]) -> str:
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        host = _format.as_str(_format.get(rule, "host"))
        if not more and host:
            hosts.append(host)
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - 3} more..." if more else text


def _lb_addresses(status: Any) -> str:
    found = set()
    for ing in _format.as_list(_format.get(status, "loadBalancer", "ingress")):
        value = _format.as_str(_format.get(ing, "ip")) or _format.as_str(_format.get(ing, "hostname"))
        if value:
            found.add(value)
    return ",".join(sorted(found))


def ingress_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    spec = _format.as_dict(obj.get("spec"))
    return _name_age(
        obj,
        ctx,
        _format.as_str(spec.get("ingressClassName")) or _format.NONE,
        _ingress_hosts(_format.as_list(spec.get("rules"))),
        _lb_addresses(obj.get("status")),
        "80, 443" if _format.as_list(spec.get("tls")) else "80",
    )


INGRESS_CLASS_COLUMNS = (
    p.NAME,
    p.column("Controller", description="The controller that handles this class."),
    p.column("Parameters", description="The resource holding extra configuration."),
    p.AGE,
)


def ingress_class_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    params = _format.get(obj, "spec", "parameters")
    text = _format.NONE
    if isinstance(params, dict):
        text = _format.as_str(params.get("kind"))
        if isinstance(params.get("apiGroup"), str):
            text += "." + params["apiGroup"]
        text += "/" + _format.as_str(params.get("name"))
    return _name_age(obj, ctx, _format.as_str(_format.get(obj, "spec", "controller")), text)


NETWORK_POLICY_COLUMNS = (
    p.NAME,
    p.column("Pod-Selector", description="The pods the policy applies to."),
    p.AGE,
)


def network_policy_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    selector = _format.get(obj, "spec", "podSelector")
    return _name_age(obj, ctx, _format.format_selector(selector if isinstance(selector, dict) else {}))


# -- discovery.k8s.io EndpointSlice ----------------------------------------------------------

ENDPOINT_SLICE_COLUMNS = (
    p.NAME,
    p.column("AddressType", description="IPv4, IPv6 or FQDN."),
    p.column("Ports", description="Up to three ports of the slice."),
    p.column("Endpoints", description="Up to three addresses of the slice."),
    p.AGE,
)


def endpoint_slice_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    ports = [_format.as_dict(port) for port in _format.as_list(obj.get("ports"))]
    port_texts = []
    for port in ports[:3]:
        if isinstance(port.get("port"), int):
            port_texts.append(str(port["port"]))
        elif isinstance(port.get("name"), str):
            port_texts.append(port["name"])
        else:
            port_texts.append("*")
    addresses = [
        str(a)
        for ep in _format.as_list(obj.get("endpoints"))
        for a in _format.as_list(_format.get(ep, "addresses"))
    ]
    return _name_age(
        obj,
        ctx,
        _format.as_str(obj.get("addressType")),
        _format.list_with_more(port_texts, len(ports), empty="<unset>"),
        _format.list_with_more(addresses[:3], len(addresses), empty="<unset>"),
    )


# -- rbac.authorization.k8s.io RoleBinding / ClusterRoleBinding ------------------------------


def _binding_columns(kind: str) -> tuple[p.Column, ...]:
    return (
        p.NAME,
        p.column("Role", description="The role granted, as Kind/name."),
        p.AGE,
        p.column("Users", description=f"Users in the {kind}", priority=1),
        p.column("Groups", description=f"Groups in the {kind}", priority=1),
        p.column("ServiceAccounts", description=f"ServiceAccounts in the {kind}", priority=1),
    )


def binding_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    ref = _format.as_dict(obj.get("roleRef"))
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in _format.as_list(obj.get("subjects")):
        kind, name = _format.get(subject, "kind"), _format.as_str(_format.get(subject, "name"))
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            accounts.append(f"{_format.as_str(_format.get(subject, 'namespace'))}:{name}")
    return [
        meta.get("name", ""),
        f"{_format.as_str(ref.get('kind'))}/{_format.as_str(ref.get('name'))}",
        ctx.age(meta.get("creationTimestamp")),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


# -- scheduling.k8s.io PriorityClass ---------------------------------------------------------

PRIORITY_CLASS_COLUMNS = (
    p.NAME,
    p.column("Value", "integer", "The priority of pods in this class."),
    p.column("Global-Default", "boolean", "Whether pods without a class _format.get this one."),
    p.AGE,
    p.column("PreemptionPolicy", description="Whether pods of this class may preempt others."),
)


def priority_class_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    return [
        meta.get("name", ""),
        _format.as_int(obj.get("value")),
        obj.get("globalDefault") is True,
        ctx.age(meta.get("creationTimestamp")),
        _format.as_str(obj.get("preemptionPolicy")) or "PreemptLowerPriority",
    ]


# -- storage.k8s.io StorageClass -------------------------------------------------------------

STORAGE_CLASS_COLUMNS = (
    p.NAME,
    p.column("Provisioner", description="The volume plugin that provisions volumes."),
    p.column("ReclaimPolicy", description="What happens to volumes when their claim goes."),
    p.column("VolumeBindingMode", description="When volumes are bound and provisioned."),
    p.column("AllowVolumeExpansion", description="Whether volumes may be resized."),
    p.AGE,
)

_DEFAULT_CLASS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def storage_class_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    annotations = _format.as_dict(meta.get("annotations"))
    name = _format.as_str(meta.get("name"))
    if any(annotations.get(key) == "true" for key in _DEFAULT_CLASS):
        name += " (default)"
    return [
        name,
        _format.as_str(obj.get("provisioner")),
        _format.as_str(obj.get("reclaimPolicy")) or "Delete",
        _format.as_str(obj.get("volumeBindingMode")) or "Immediate",
        obj.get("allowVolumeExpansion") is True,
        ctx.age(meta.get("creationTimestamp")),
    ]


# -- policy PodDisruptionBudget --------------------------------------------------------------

PDB_COLUMNS = (
    p.NAME,
    p.column("Min Available", description="The minimum number of pods that must be available."),
    p.column("Max Unavailable", description="The maximum number of pods that may be unavailable."),
    p.column("Allowed Disruptions", "integer", "Pods that may be disrupted right now."),
    p.AGE,
)


def pdb_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    spec = _format.as_dict(obj.get("spec"))
    return _name_age(
        obj,
        ctx,
        _int_or_string(spec.get("minAvailable")),
        _int_or_string(spec.get("maxUnavailable")),
        _format.as_int(_format.get(obj, "status", "disruptionsAllowed")),
    )


# -- autoscaling HorizontalPodAutoscaler -----------------------------------------------------

HPA_COLUMNS = (
    p.NAME,
    p.column("Reference", description="The scaled object, as Kind/name."),
    p.column("Targets", description="Current and target values of the metrics."),
    p.column("MinPods", description="The lower limit of replicas."),
    p.column("MaxPods", description="The upper limit of replicas."),
    p.column("Replicas", description="The current number of replicas."),
    p.AGE,
)


def _metric_text(spec: _format.Obj, status: _format.Obj) -> str:
    kind = _format.as_str(spec.get("type"))
    field = {
        "External": "external",
        "Pods": "pods",
        "Object": "object",
        "Resource": "resource",
        "ContainerResource": "containerResource",
    }.get(kind)
    if field is None:
        return "<unknown type>"
    source = _format.as_dict(spec.get(field))
    target = _format.as_dict(source.get("target"))
    current = _format.as_dict(_format.get(status, field, "current"))  # statuses pair with specs by position
    if kind in ("Resource", "ContainerResource"):
        prefix = f"{_format.as_str(source.get('name'))}: "
        if target.get("averageValue") is not None:
            now = _format.go_text(current["averageValue"]) if "averageValue" in current else "<unknown>"
            return f"{prefix}{now}/{_format.go_text(target['averageValue'])}"
        now = (
            f"{_format.as_int(current['averageUtilization'])}%"
            if "averageUtilization" in current
            else "<unknown>"
        )
        want = (
            f"{_format.as_int(target['averageUtilization'])}%" if "averageUtilization" in target else "<auto>"
        )
        return f"{prefix}{now}/{want}"
    if kind == "Pods" or target.get("averageValue") is not None:
        now = _format.go_text(current["averageValue"]) if "averageValue" in current else "<unknown>"
        suffix = " (avg)" if kind != "Pods" else ""
        return f"{now}/{_format.go_text(target.get('averageValue'))}{suffix}"
    now = _format.go_text(current["value"]) if "value" in current else "<unknown>"
    return f"{now}/{_format.go_text(target.get('value', '0'))}"


def hpa_targets(obj: _format.Obj) -> str:
    """Up to two metrics as ``current/target``, then ``" + N more..."``."""
    specs = [_format.as_dict(m) for m in _format.as_list(_format.get(obj, "spec", "metrics"))]
    if not specs:
        return _format.NONE
    statuses = [_format.as_dict(m) for m in _format.as_list(_format.get(obj, "status", "currentMetrics"))]
    texts = [_metric_text(s, statuses[i] if i < len(statuses) else {}) for i, s in enumerate(specs)]
    if len(texts) > 2:
        return f"{', '.join(texts[:2])} + {len(texts) - 2} more..."
    return ", ".join(texts)


def hpa_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    spec = _format.as_dict(obj.get("spec"))
    ref = _format.as_dict(spec.get("scaleTargetRef"))
    min_replicas = spec.get("minReplicas")
    return _name_age(
        obj,
        ctx,
        f"{_format.as_str(ref.get('kind'))}/{_format.as_str(ref.get('name'))}",
        hpa_targets(obj),
        str(_format.as_int(min_replicas)) if isinstance(min_replicas, int) else "<unset>",
        _format.as_int(spec.get("maxReplicas")),
        _format.as_int(_format.get(obj, "status", "currentReplicas")),
    )


# -- metrics.k8s.io PodMetrics and NodeMetrics (metrics-server's ConvertToTable) ---------------

METRICS_COLUMNS = (
    p.column("Name", format="name", description="Name of the resource"),
    p.column("cpu", format="quantity"),
    p.column("memory", format="quantity"),
    p.column("Window", format="duration"),
)


def _usage_sum(obj: _format.Obj, resource: str) -> str:
    """A pod's usage summed over its containers (a node's usage as is), as a quantity."""
    if "usage" in obj:
        return _format.as_str(_format.get(obj, "usage", resource)) or "0"
    total = Decimal(0)
    binary = False
    for c in _format.as_list(obj.get("containers")):
        text = _format.as_str(_format.get(_format.as_dict(c), "usage", resource))
        total += quantity.parse(text) or 0
        binary = binary or quantity.is_binary(text)
    return quantity.canonical(total, binary=binary)


def metrics_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    return [
        meta.get("name", ""),
        _usage_sum(obj, "cpu"),
        _usage_sum(obj, "memory"),
        _format.as_str(obj.get("window")),
    ]


# -- admissionregistration.k8s.io webhook configurations -------------------------------------

WEBHOOK_COLUMNS = (
    p.NAME,
    p.column(
        "Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration"
    ),
    p.AGE,
)


def webhook_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    return _name_age(obj, ctx, len(_format.as_list(obj.get("webhooks"))))


PRINTERS: dict[tuple[str, str], p.Printer] = {
    ("coordination.k8s.io", "Lease"): p.Printer(LEASE_COLUMNS, lease_cells),
    ("networking.k8s.io", "Ingress"): p.Printer(INGRESS_COLUMNS, ingress_cells),
    ("networking.k8s.io", "IngressClass"): p.Printer(INGRESS_CLASS_COLUMNS, ingress_class_cells),
    ("networking.k8s.io", "NetworkPolicy"): p.Printer(NETWORK_POLICY_COLUMNS, network_policy_cells),
    ("discovery.k8s.io", "EndpointSlice"): p.Printer(ENDPOINT_SLICE_COLUMNS, endpoint_slice_cells),
    ("rbac.authorization.k8s.io", "RoleBinding"): p.Printer(_binding_columns("roleBinding"), binding_cells),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): p.Printer(
        _binding_columns("clusterRoleBinding"), binding_cells
    ),
    ("scheduling.k8s.io", "PriorityClass"): p.Printer(PRIORITY_CLASS_COLUMNS, priority_class_cells),
    ("storage.k8s.io", "StorageClass"): p.Printer(STORAGE_CLASS_COLUMNS, storage_class_cells),
    ("policy", "PodDisruptionBudget"): p.Printer(PDB_COLUMNS, pdb_cells),
    ("autoscaling", "HorizontalPodAutoscaler"): p.Printer(HPA_COLUMNS, hpa_cells),
    ("metrics.k8s.io", "PodMetrics"): p.Printer(METRICS_COLUMNS, metrics_cells),
    ("metrics.k8s.io", "NodeMetrics"): p.Printer(METRICS_COLUMNS, metrics_cells),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): p.Printer(
        WEBHOOK_COLUMNS, webhook_cells
    ),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): p.Printer(
        WEBHOOK_COLUMNS, webhook_cells
    ),
}
