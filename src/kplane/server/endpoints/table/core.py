"""Printers for core/v1 kinds other than Pod (which has its own module)."""

from __future__ import annotations

import ipaddress
from typing import Any

from kplane.server.endpoints.table import _format
from kplane.server.endpoints.table import printer as p

# -- Service ---------------------------------------------------------------------------------

SERVICE_COLUMNS = (
    p.NAME,
    p.column("Type", description="How the service is exposed (ClusterIP, NodePort, LoadBalancer...)."),
    p.column("Cluster-IP", description="The virtual IP assigned inside the cluster."),
    p.column("External-IP", description="Addresses the service is reachable on from outside."),
    p.column("Port(s)", description="Service ports, with node ports and protocols."),
    p.AGE,
    p.column("Selector", description="Labels of the pods that back the service.", priority=1),
)


def _external_ip(svc_type: str, spec: _format.Obj, status: _format.Obj) -> str:
    external = [str(ip) for ip in _format.as_list(spec.get("externalIPs"))]
    if svc_type in ("ClusterIP", "NodePort"):
        return ",".join(external) or _format.NONE
    if svc_type == "LoadBalancer":
        found = set()
        for ing in _format.as_list(_format.get(status, "loadBalancer", "ingress")):
            value = _format.as_str(_format.get(ing, "ip")) or _format.as_str(_format.get(ing, "hostname"))
            if value:
                found.add(value)
        both = sorted(found) + external
        return ",".join(both) or "<pending>"
    if svc_type == "ExternalName":
        return _format.as_str(spec.get("externalName"))
    return _format.UNKNOWN


def _ports(spec: _format.Obj) -> str:
    pieces = []
    for port in _format.as_list(spec.get("ports")):
        port = _format.as_dict(port)
        protocol = _format.as_str(port.get("protocol")) or "TCP"
        node_port = _format.as_int(port.get("nodePort"))
        if node_port > 0:
            pieces.append(f"{_format.as_int(port.get('port'))}:{node_port}/{protocol}")
        else:
            pieces.append(f"{_format.as_int(port.get('port'))}/{protocol}")
    return ",".join(pieces) or _format.NONE


def service_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    spec = _format.as_dict(obj.get("spec"))
    svc_type = _format.as_str(spec.get("type")) or "ClusterIP"
    cluster_ips = _format.as_list(spec.get("clusterIPs"))
    cluster_ip = _format.as_str(cluster_ips[0]) if cluster_ips else _format.as_str(spec.get("clusterIP"))
    return [
        meta.get("name", ""),
        svc_type,
        cluster_ip or _format.NONE,
        _external_ip(svc_type, spec, _format.as_dict(obj.get("status"))),
        _ports(spec),
        ctx.age(meta.get("creationTimestamp")),
        _format.format_labels(spec.get("selector")),
    ]


# -- Node ------------------------------------------------------------------------------------

NODE_COLUMNS = (
    p.NAME,
    p.column("Status", description="Whether the node is Ready, and whether scheduling is disabled."),
    p.column("Roles", description="Roles from the node-role.kubernetes.io/<role> labels."),
    p.AGE,
    p.column("Version", description="The kubelet version the node reports."),
    p.column("Internal-IP", description="The node's first InternalIP address.", priority=1),
    p.column("External-IP", description="The node's first ExternalIP address.", priority=1),
    p.column("OS-Image", description="The operating system image the node reports.", priority=1),
    p.column("Kernel-Version", description="The kernel version the node reports.", priority=1),
    p.column("Container-Runtime", description="The container runtime and its version.", priority=1),
)


def node_roles(labels: Any) -> str:
    """Sorted roles from ``node-role.kubernetes.io/<role>`` and ``kubernetes.io/role`` labels."""
    roles = set()
    for key, value in _format.as_dict(labels).items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key[len("node-role.kubernetes.io/") :]
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return ",".join(sorted(roles)) or _format.NONE


def _node_address(status: _format.Obj, kind: str) -> str:
    for address in _format.as_list(status.get("addresses")):
        if _format.get(address, "type") == kind:
            return _format.as_str(_format.get(address, "address"))
    return _format.NONE


def node_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    status = _format.as_dict(obj.get("status"))
    info = _format.as_dict(status.get("nodeInfo"))
    ready: str | None = None
    for cond in _format.as_list(status.get("conditions")):
        if _format.get(cond, "type") == "Ready":
            ready = "Ready" if _format.get(cond, "status") == "True" else "NotReady"
    states = [ready or "Unknown"]
    if _format.get(obj, "spec", "unschedulable") is True:
        states.append("SchedulingDisabled")
    return [
        meta.get("name", ""),
        ",".join(states),
        node_roles(meta.get("labels")),
        ctx.age(meta.get("creationTimestamp")),
        _format.as_str(info.get("kubeletVersion")),
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        _format.as_str(info.get("osImage")) or _format.UNKNOWN,
        _format.as_str(info.get("kernelVersion")) or _format.UNKNOWN,
        _format.as_str(info.get("containerRuntimeVersion")) or _format.UNKNOWN,
    ]


# -- Namespace, ConfigMap, Secret, ServiceAccount, PodTemplate -------------------------------

NAMESPACE_COLUMNS = (p.NAME, p.column("Status", description="Active, or Terminating once deleted."), p.AGE)


def namespace_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    # the server always stores a phase; fall back to what it would have stored
    phase = _format.as_str(_format.get(obj, "status", "phase")) or (
        "Terminating" if meta.get("deletionTimestamp") else "Active"
    )
    return [meta.get("name", ""), phase, ctx.age(meta.get("creationTimestamp"))]


CONFIG_MAP_COLUMNS = (p.NAME, p.column("Data", description="Number of keys in data and binaryData."), p.AGE)


def config_map_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = obj.get("metadata") or {}
    data = obj.get("data")
    binary = obj.get("binaryData")
    count = (len(data) if isinstance(data, dict) else 0) + (len(binary) if isinstance(binary, dict) else 0)
    return [meta.get("name", ""), count, ctx.age(meta.get("creationTimestamp"))]


SECRET_COLUMNS = (
    p.NAME,
    p.column("Type", description="The secret type, e.g. Opaque or kubernetes.io/tls."),
    p.column("Data", description="Number of keys in data."),
    p.AGE,
)


def secret_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    return [
        meta.get("name", ""),
        _format.as_str(obj.get("type")) or "Opaque",
        len(_format.as_dict(obj.get("data"))),
        ctx.age(meta.get("creationTimestamp")),
    ]


SERVICE_ACCOUNT_COLUMNS = (
    p.NAME,
    p.column("Secrets", description="Number of secrets listed for this service account."),
    p.AGE,
)


def service_account_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    return [
        meta.get("name", ""),
        len(_format.as_list(obj.get("secrets"))),
        ctx.age(meta.get("creationTimestamp")),
    ]


POD_TEMPLATE_COLUMNS = (
    p.NAME,
    p.column("Containers", description="Names of each container in the template."),
    p.column("Images", description="Images referenced by each container in the template."),
    p.column("Pod Labels", description="The labels of the pod template."),
)


def pod_template_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    template = _format.as_dict(obj.get("template"))
    names, images = _format.containers(template.get("spec"))
    labels = _format.format_labels(_format.get(template, "metadata", "labels"))
    return [_format.get(obj, "metadata", "name") or "", names, images, labels]


# -- Endpoints -------------------------------------------------------------------------------

ENDPOINTS_COLUMNS = (p.NAME, p.column("Endpoints", description="Up to three ready addresses."), p.AGE)


def _host_port(ip: str, port: int) -> str:
    try:
        is_v6 = isinstance(ipaddress.ip_address(ip), ipaddress.IPv6Address)
    except ValueError:
        is_v6 = ":" in ip
    return f"[{ip}]:{port}" if is_v6 else f"{ip}:{port}"


def format_endpoints(subsets: Any) -> str:
    """First three ``ip:port`` pairs over all subsets, then ``" + N more..."``."""
    subsets = _format.as_list(subsets)
    if not subsets:
        return _format.NONE
    shown: list[str] = []
    total = 0
    for subset in subsets:
        addresses = [
            _format.as_str(_format.get(a, "ip")) for a in _format.as_list(_format.get(subset, "addresses"))
        ]
        ports = _format.as_list(_format.get(subset, "ports"))
        if not ports:  # headless services may have no ports
            total += len(addresses)
            shown.extend(addresses[: max(0, 3 - len(shown))])
            continue
        for port in ports:
            total += len(addresses)
            room = max(0, 3 - len(shown))
            shown.extend(_host_port(ip, _format.as_int(_format.get(port, "port"))) for ip in addresses[:room])
    return _format.list_with_more(shown, total)


def endpoints_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    return [
        meta.get("name", ""),
        format_endpoints(obj.get("subsets")),
        ctx.age(meta.get("creationTimestamp")),
    ]


# -- Event (core/v1 and events.k8s.io/v1 share one printer) ----------------------------------

EVENT_COLUMNS = (
    p.column("Last Seen", description="How long ago the event was last observed."),
    p.column("Type", description="Normal or Warning."),
    p.column("Reason", description="Why the event happened, in one CamelCase word."),
    p.column("Object", description="The object the event is about, as kind/name."),
    p.column("Subobject", description="The part of the object the event is about.", priority=1),
    p.column("Source", description="The component (and host) that reported the event.", priority=1),
    p.column("Message", description="A human-readable description of the event."),
    p.column("First Seen", description="How long ago the event was first observed.", priority=1),
    p.column("Count", description="How many times the event was observed.", priority=1),
    {**p.NAME, "priority": 1},
)


def _event_cells(
    obj: _format.Obj,
    ctx: _format.Context,
    *,
    involved: Any,
    source: Any,
    first: Any,
    last: Any,
    count: Any,
    message: Any,
) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    first_seen = ctx.age(first) if first else ctx.age(obj.get("eventTime"))
    last_seen = ctx.age(last) if last else first_seen
    number = _format.as_int(count)
    series = obj.get("series")
    if isinstance(series, dict):
        last_seen = ctx.age(series.get("lastObservedTime"))
        number = _format.as_int(series.get("count"))
    elif number == 0:
        number = 1  # singleton events of the new API carry no count
    involved = _format.as_dict(involved)
    kind = _format.as_str(involved.get("kind")).lower()
    name = _format.as_str(involved.get("name"))
    component = _format.as_str(_format.get(source, "component")) or _format.as_str(
        obj.get("reportingController")
    )
    host = _format.as_str(_format.get(source, "host")) or _format.as_str(obj.get("reportingInstance"))
    return [
        last_seen,
        _format.as_str(obj.get("type")),
        _format.as_str(obj.get("reason")),
        f"{kind}/{name}" if name else kind,
        _format.as_str(involved.get("fieldPath")),
        f"{component}, {host}" if host else component,
        _format.as_str(message).strip(),
        first_seen,
        number,
        meta.get("name", ""),
    ]


def event_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    """A core/v1 Event."""
    return _event_cells(
        obj,
        ctx,
        involved=obj.get("involvedObject"),
        source=obj.get("source"),
        first=obj.get("firstTimestamp"),
        last=obj.get("lastTimestamp"),
        count=obj.get("count"),
        message=obj.get("message"),
    )


def events_v1_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    """An events.k8s.io/v1 Event: the same printer after renaming the fields it moved."""
    return _event_cells(
        obj,
        ctx,
        involved=obj.get("regarding"),
        source=obj.get("deprecatedSource"),
        first=obj.get("deprecatedFirstTimestamp"),
        last=obj.get("deprecatedLastTimestamp"),
        count=obj.get("deprecatedCount"),
        message=obj.get("note"),
    )


# -- PersistentVolume, PersistentVolumeClaim, ResourceQuota ----------------------------------

_MODES = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)
_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


def access_modes(modes: Any) -> str:
    present = set(_format.as_list(modes))
    return ",".join(short for mode, short in _MODES if mode in present)


def _storage_class(obj: _format.Obj) -> str:
    annotated = _format.get(obj, "metadata", "annotations", _BETA_CLASS)
    return (
        _format.as_str(annotated)
        if annotated is not None
        else _format.as_str(_format.get(obj, "spec", "storageClassName"))
    )


PV_COLUMNS = (
    p.NAME,
    p.column("Capacity", description="The storage capacity of the volume."),
    p.column("Access Modes", description="How the volume can be mounted."),
    p.column("Reclaim Policy", description="What happens to the volume when its claim goes."),
    p.column("Status", description="The phase of the volume."),
    p.column("Claim", description="The claim bound to the volume, as namespace/name."),
    p.column("StorageClass", description="StorageClass of the pv"),
    p.column("VolumeAttributesClass", description="VolumeAttributesClass of the pv"),
    p.column("Reason", description="Why the volume is in its phase."),
    p.AGE,
    p.column("VolumeMode", description="Filesystem or Block.", priority=1),
)


def pv_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    spec = _format.as_dict(obj.get("spec"))
    status = _format.as_dict(obj.get("status"))
    claim = spec.get("claimRef")
    claim_text = (
        f"{_format.as_str(_format.get(claim, 'namespace'))}/{_format.as_str(_format.get(claim, 'name'))}"
        if isinstance(claim, dict)
        else ""
    )
    phase = "Terminating" if meta.get("deletionTimestamp") else _format.as_str(status.get("phase"))
    return [
        meta.get("name", ""),
        str(_format.get(spec, "capacity", "storage") or "0"),
        access_modes(spec.get("accessModes")),
        _format.as_str(spec.get("persistentVolumeReclaimPolicy")) or "Retain",
        phase,
        claim_text,
        _storage_class(obj),
        _format.as_str(spec.get("volumeAttributesClassName")) or "<unset>",
        _format.as_str(status.get("reason")),
        ctx.age(meta.get("creationTimestamp")),
        _format.as_str(spec.get("volumeMode")) or "Filesystem",
    ]


PVC_COLUMNS = (
    p.NAME,
    p.column("Status", description="The phase of the claim."),
    p.column("Volume", description="The volume bound to the claim."),
    p.column("Capacity", description="The capacity of the bound volume."),
    p.column("Access Modes", description="How the bound volume can be mounted."),
    p.column("StorageClass", description="StorageClass of the pvc"),
    p.column("VolumeAttributesClass", description="VolumeAttributesClass of the pvc"),
    p.AGE,
    p.column("VolumeMode", description="Filesystem or Block.", priority=1),
)


def pvc_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    spec = _format.as_dict(obj.get("spec"))
    status = _format.as_dict(obj.get("status"))
    volume = _format.as_str(spec.get("volumeName"))
    capacity = str(_format.get(status, "capacity", "storage") or "0") if volume else ""
    modes = access_modes(status.get("accessModes")) if volume else ""
    return [
        meta.get("name", ""),
        "Terminating" if meta.get("deletionTimestamp") else _format.as_str(status.get("phase")),
        volume,
        capacity,
        modes,
        _storage_class(obj),
        _format.as_str(spec.get("volumeAttributesClassName")) or "<unset>",
        ctx.age(meta.get("creationTimestamp")),
        _format.as_str(spec.get("volumeMode")) or "Filesystem",
    ]


RESOURCE_QUOTA_COLUMNS = (
    p.NAME,
    p.column("Request", description="Used and hard limits of requests (and counts)."),
    p.column("Limit", description="Used and hard limits of limits.*."),
    p.AGE,
)


def resource_quota_cells(obj: _format.Obj, ctx: _format.Context) -> list[Any]:
    meta = _format.as_dict(obj.get("metadata"))
    hard = _format.as_dict(_format.get(obj, "status", "hard"))
    used = _format.as_dict(_format.get(obj, "status", "used"))
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        target = limits if name.startswith("limits.") else requests
        target.append(f"{name}: {used.get(name, '0')}/{hard[name]}")
    return [
        meta.get("name", ""),
        ", ".join(requests),
        ", ".join(limits),
        ctx.age(meta.get("creationTimestamp")),
    ]


PRINTERS: dict[tuple[str, str], p.Printer] = {
    ("", "Service"): p.Printer(SERVICE_COLUMNS, service_cells),
    ("", "Node"): p.Printer(NODE_COLUMNS, node_cells),
    ("", "Namespace"): p.Printer(NAMESPACE_COLUMNS, namespace_cells),
    ("", "ConfigMap"): p.Printer(CONFIG_MAP_COLUMNS, config_map_cells),
    ("", "Secret"): p.Printer(SECRET_COLUMNS, secret_cells),
    ("", "ServiceAccount"): p.Printer(SERVICE_ACCOUNT_COLUMNS, service_account_cells),
    ("", "PodTemplate"): p.Printer(POD_TEMPLATE_COLUMNS, pod_template_cells),
    ("", "Endpoints"): p.Printer(ENDPOINTS_COLUMNS, endpoints_cells),
    ("", "Event"): p.Printer(EVENT_COLUMNS, event_cells),
    ("events.k8s.io", "Event"): p.Printer(EVENT_COLUMNS, events_v1_cells),
    ("", "PersistentVolume"): p.Printer(PV_COLUMNS, pv_cells),
    ("", "PersistentVolumeClaim"): p.Printer(PVC_COLUMNS, pvc_cells),
    ("", "ResourceQuota"): p.Printer(RESOURCE_QUOTA_COLUMNS, resource_quota_cells),
}
