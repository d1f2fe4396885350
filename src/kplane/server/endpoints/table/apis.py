"""Printers for the API-machinery and node-level kinds: CertificateSigningRequest, APIService,
FlowSchema, PriorityLevelConfiguration, RuntimeClass, the CSI kinds, VolumeAttachment and
ComponentStatus. Columns and cell rules are upstream's (``pkg/printers/internalversion/printers.go``
and kube-aggregator's APIService printer, 1.32)."""

from __future__ import annotations

from typing import Any

from kplane.api import duration
from kplane.server.endpoints.table import _format
from kplane.server.endpoints.table import printer as p

Obj = _format.Obj
NONE = "<none>"


def _meta(obj: Obj) -> Obj:
    return _format.as_dict(obj.get("metadata"))


def _name_age(obj: Obj, ctx: _format.Context, *middle: Any) -> list[Any]:
    meta = _meta(obj)
    return [meta.get("name", ""), *middle, ctx.age(meta.get("creationTimestamp"))]


def _condition(obj: Obj, kind: str) -> Obj | None:
    for c in _format.as_list(_format.get(obj, "status", "conditions")):
        if _format.get(c, "type") == kind:
            return _format.as_dict(c)
    return None


# -- certificates.k8s.io CertificateSigningRequest ---------------------------------------------

CSR_COLUMNS = (
    p.NAME,
    p.AGE,
    p.column("SignerName", description="The signer the request is addressed to."),
    p.column("Requestor", description="The user who created the request."),
    p.column("RequestedDuration", description="The validity the requester asked for."),
    p.column("Condition", description="Approved, Denied, Failed, Pending; Issued once signed."),
)


def csr_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    meta = _meta(obj)
    spec = _format.as_dict(obj.get("spec"))
    seconds = spec.get("expirationSeconds")
    requested = duration.human_duration(float(seconds)) if isinstance(seconds, int) else NONE
    found = [
        t
        for t in ("Approved", "Denied", "Failed")
        if any(_format.get(c, "type") == t for c in _format.as_list(_format.get(obj, "status", "conditions")))
    ]
    status = ",".join(found) or "Pending"
    if _format.get(obj, "status", "certificate"):
        status += ",Issued"
    return [
        meta.get("name", ""),
        ctx.age(meta.get("creationTimestamp")),
        _format.as_str(spec.get("signerName")) or NONE,
        _format.as_str(spec.get("username")),
        requested,
        status,
    ]


# -- apiregistration.k8s.io APIService ----------------------------------------------------------

APISERVICE_COLUMNS = (
    p.NAME,
    p.column("Service", description="The service that serves this API, or Local."),
    p.column("Available", description="Whether this service is available."),
    p.AGE,
)


def apiservice_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    service = _format.get(obj, "spec", "service")
    where = "Local"
    if isinstance(service, dict):
        where = f"{_format.as_str(service.get('namespace'))}/{_format.as_str(service.get('name'))}"
    cond = _condition(obj, "Available")
    available = "Unknown"
    if cond is not None:
        available = _format.as_str(cond.get("status"))
        if available != "True":
            available = f"{available} ({_format.as_str(cond.get('reason'))})"
    return _name_age(obj, ctx, where, available)


# -- flowcontrol.apiserver.k8s.io -----------------------------------------------------------------

FLOW_SCHEMA_COLUMNS = (
    p.NAME,
    p.column("PriorityLevel", description="The priority level this schema's requests go to."),
    p.column("MatchingPrecedence", "integer", "Lower values are matched first."),
    p.column("DistinguisherMethod", description="How requests are split into flows."),
    p.AGE,
    p.column("MissingPL", description="Whether the referenced priority level is missing."),
)


def flow_schema_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    spec = _format.as_dict(obj.get("spec"))
    method = _format.get(spec, "distinguisherMethod", "type")
    cond = _condition(obj, "Dangling")
    return [
        *_name_age(
            obj,
            ctx,
            _format.as_str(_format.get(spec, "priorityLevelConfiguration", "name")),
            _format.as_int(spec.get("matchingPrecedence")),
            _format.as_str(method) or "*",
        ),
        _format.as_str(cond.get("status")) if cond is not None else "?",
    ]


PRIORITY_LEVEL_COLUMNS = (
    p.NAME,
    p.column("Type", description="Exempt or Limited."),
    p.column("NominalConcurrencyShares", description="Share of the server's concurrency."),
    p.column("Queues", description="Number of queues."),
    p.column("HandSize", description="Queues a flow is shuffle-sharded over."),
    p.column("QueueLengthLimit", description="Requests a queue may hold."),
    p.AGE,
)


def priority_level_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    spec = _format.as_dict(obj.get("spec"))
    shares: Any = NONE
    queues: Any = NONE
    hand: Any = NONE
    length: Any = NONE
    limited = spec.get("limited")
    if isinstance(limited, dict):
        shares = _format.as_int(limited.get("nominalConcurrencyShares"))
        queuing = _format.get(limited, "limitResponse", "queuing")
        if isinstance(queuing, dict):
            queues = _format.as_int(queuing.get("queues"))
            hand = _format.as_int(queuing.get("handSize"))
            length = _format.as_int(queuing.get("queueLengthLimit"))
    return _name_age(obj, ctx, _format.as_str(spec.get("type")), shares, queues, hand, length)


# -- node.k8s.io RuntimeClass ------------------------------------------------------------------------

RUNTIME_CLASS_COLUMNS = (p.NAME, p.column("Handler", description="The CRI handler of this class."), p.AGE)


def runtime_class_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    return _name_age(obj, ctx, _format.as_str(obj.get("handler")))


# -- storage.k8s.io CSI kinds and VolumeAttachment ---------------------------------------------------

CSI_DRIVER_COLUMNS = (
    p.NAME,
    p.column("AttachRequired", "boolean", "Whether the driver needs an attach operation."),
    p.column("PodInfoOnMount", "boolean", "Whether pod information is passed on mount."),
    p.column("StorageCapacity", "boolean", "Whether capacity is tracked for scheduling."),
    p.column("TokenRequests", description="Audiences of service account tokens passed to the driver."),
    p.column("RequiresRepublish", "boolean", "Whether NodePublishVolume is called periodically."),
    p.column("Modes", description="Volume lifecycle modes the driver supports."),
    p.AGE,
)


def csi_driver_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    spec = _format.as_dict(obj.get("spec"))
    audiences = [
        _format.as_str(_format.get(t, "audience")) for t in _format.as_list(spec.get("tokenRequests"))
    ]
    modes = [_format.as_str(m) for m in _format.as_list(spec.get("volumeLifecycleModes"))]
    return _name_age(
        obj,
        ctx,
        spec.get("attachRequired", True) is True,
        spec.get("podInfoOnMount") is True,
        spec.get("storageCapacity") is True,
        ",".join(audiences) or "<unset>",
        spec.get("requiresRepublish") is True,
        ",".join(modes) or NONE,
    )


CSI_NODE_COLUMNS = (p.NAME, p.column("Drivers", "integer", "Number of CSI drivers on the node."), p.AGE)


def csi_node_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    return _name_age(obj, ctx, len(_format.as_list(_format.get(obj, "spec", "drivers"))))


CSI_STORAGE_CAPACITY_COLUMNS = (
    p.NAME,
    p.column("StorageClassName", description="The storage class this capacity is for."),
    p.column("Capacity", description="Available capacity."),
)


def csi_storage_capacity_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    capacity = obj.get("capacity")
    return [
        _meta(obj).get("name", ""),
        _format.as_str(obj.get("storageClassName")),
        _format.go_text(capacity) if capacity is not None else NONE,
    ]


VOLUME_ATTACHMENT_COLUMNS = (
    p.NAME,
    p.column("Attacher", description="The driver that attaches the volume."),
    p.column("PV", description="The persistent volume attached."),
    p.column("Node", description="The node the volume is attached to."),
    p.column("Attached", "boolean", "Whether the volume is attached."),
    p.AGE,
)


def volume_attachment_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    spec = _format.as_dict(obj.get("spec"))
    return _name_age(
        obj,
        ctx,
        _format.as_str(spec.get("attacher")),
        _format.as_str(_format.get(spec, "source", "persistentVolumeName")),
        _format.as_str(spec.get("nodeName")),
        _format.get(obj, "status", "attached") is True,
    )


# -- core ComponentStatus ----------------------------------------------------------------------------

COMPONENT_STATUS_COLUMNS = (
    p.NAME,
    p.column("Status", description="Status of the component conditions"),
    p.column("Message", description="Message of the component conditions"),
    p.column("Error", description="Error of the component conditions"),
)


def component_status_cells(obj: Obj, ctx: _format.Context) -> list[Any]:
    status, message, error = "Unknown", "", ""
    for c in _format.as_list(obj.get("conditions")):
        if _format.get(c, "type") == "Healthy":
            status = "Healthy" if _format.get(c, "status") == "True" else "Unhealthy"
            message = _format.as_str(_format.get(c, "message"))
            error = _format.as_str(_format.get(c, "error"))
            break
    return [_meta(obj).get("name", ""), status, message, error]


PRINTERS: dict[tuple[str, str], p.Printer] = {
    ("certificates.k8s.io", "CertificateSigningRequest"): p.Printer(CSR_COLUMNS, csr_cells),
    ("apiregistration.k8s.io", "APIService"): p.Printer(APISERVICE_COLUMNS, apiservice_cells),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): p.Printer(FLOW_SCHEMA_COLUMNS, flow_schema_cells),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): p.Printer(
        PRIORITY_LEVEL_COLUMNS, priority_level_cells
    ),
    ("node.k8s.io", "RuntimeClass"): p.Printer(RUNTIME_CLASS_COLUMNS, runtime_class_cells),
    ("storage.k8s.io", "CSIDriver"): p.Printer(CSI_DRIVER_COLUMNS, csi_driver_cells),
    ("storage.k8s.io", "CSINode"): p.Printer(CSI_NODE_COLUMNS, csi_node_cells),
    ("storage.k8s.io", "CSIStorageCapacity"): p.Printer(
        CSI_STORAGE_CAPACITY_COLUMNS, csi_storage_capacity_cells
    ),
    ("storage.k8s.io", "VolumeAttachment"): p.Printer(VOLUME_ATTACHMENT_COLUMNS, volume_attachment_cells),
    ("", "ComponentStatus"): p.Printer(COMPONENT_STATUS_COLUMNS, component_status_cells),
}
