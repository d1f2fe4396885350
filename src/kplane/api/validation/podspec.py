"""``ValidatePodSpec`` and its parts (kubernetes ``pkg/apis/core/validation/validation.go``, 1.32):
volumes, containers (names, images, ports, env, mounts, resources), init containers, restart and
DNS policies, active deadline. Used by Pods and by every pod template (workloads, Jobs).

Enums the compiled schema already enforces (``imagePullPolicy``, port ``protocol``) are left to it.
Errors come in upstream's order.
"""

from __future__ import annotations

from typing import Any

from kplane.api import errors
from kplane.api.validation.field import (
    PORT_RANGE,
    Errs,
    Object,
    canonical_quantity,
    d,
    dl,
    dns1123_label,
    port_name_errors,
    quantity,
    s,
    valid_port,
)

_VOLUME_SOURCES = frozenset(
    (
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
        "",
    )
)
_RESTART = ["Always", "OnFailure", "Never"]
_DNS = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
_TERMINATION = ["File", "FallbackToLogsOnError"]
_ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
_OVERCOMMIT_PREFIXES = ("requests.", "limits.")
_STANDARD = frozenset(("cpu", "memory", "ephemeral-storage"))
_MAX_INT32 = 2147483647


def validate(spec: Object, path: str) -> Errs:
    """``ValidatePodSpec`` of ``spec`` found at ``path`` (``spec`` or ``spec.template.spec``)."""
    errs: Errs = []
    volumes = _volumes(dl(spec.get("volumes")), f"{path}.volumes", errs)
    containers = dl(spec.get("containers"))
    init = dl(spec.get("initContainers"))
    _containers(containers, volumes, f"{path}.containers", errs, set())
    if init:
        _containers(init, volumes, f"{path}.initContainers", errs, {s(c, "name") for c in containers}, True)
    restart = spec.get("restartPolicy")
    if restart not in _RESTART:
        errs.append(_enum(f"{path}.restartPolicy", restart, _RESTART))
    dns = spec.get("dnsPolicy")
    if dns not in _DNS:
        errs.append(_enum(f"{path}.dnsPolicy", dns, _DNS))
    elif dns == "None" and not isinstance(spec.get("dnsConfig"), dict):
        errs.append(errors.required(f"{path}.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"))
    deadline = spec.get("activeDeadlineSeconds")
    if type(deadline) is int and not 1 <= deadline <= _MAX_INT32:
        errs.append(
            errors.invalid(
                f"{path}.activeDeadlineSeconds", deadline, f"must be between 1 and {_MAX_INT32}, inclusive"
            )
        )
    return errs


def _enum(path: str, value: Any, allowed: list[str]) -> errors.FieldError:
    if value in (None, ""):
        return errors.required(path)
    return errors.not_supported(path, value, allowed)


def _volumes(volumes: list[Object], path: str, errs: Errs) -> set[str]:
    names: set[str] = set()
    for i, vol in enumerate(volumes):
        p = f"{path}[{i}]"
        mine: Errs = []
        sources = [k for k in vol if k in _VOLUME_SOURCES and vol[k] is not None]
        if not sources:
            mine.append(errors.required(p, "must specify a volume type"))
        for extra in sources[1:]:
            mine.append(errors.forbidden(f"{p}.{extra}", "may not specify more than 1 volume type"))
        name = s(vol, "name")
        if not name:
            mine.append(errors.required(f"{p}.name"))
        else:
            mine.extend(dns1123_label(name, f"{p}.name"))
        if name in names:
            mine.append(errors.FieldError("FieldValueDuplicate", f"{p}.name", "", name))
        if mine:
            errs.extend(mine)
        else:
            names.add(name)
    return names


def _containers(
    containers: list[Object], volumes: set[str], path: str, errs: Errs, taken: set[str], init: bool = False
) -> None:
    if not containers and not init:
        errs.append(errors.required(path))
    names = set(taken)
    host_ports: set[str] = set()
    for i, c in enumerate(containers):
        p = f"{path}[{i}]"
        _container(c, volumes, p, errs)
        name = s(c, "name")
        if name in names:
            errs.append(errors.FieldError("FieldValueDuplicate", f"{p}.name", "", name))
        else:
            names.add(name)
    for i, c in enumerate(containers):
        for j, port in enumerate(dl(c.get("ports"))):
            host = port.get("hostPort")
            if not isinstance(host, int) or host == 0:
                continue
            key = f"{host}/{port.get('protocol') or 'TCP'}"
            if key in host_ports:
                errs.append(
                    errors.FieldError("FieldValueDuplicate", f"{path}[{i}].ports[{j}].hostPort", "", key)
                )
            host_ports.add(key)


def _container(c: Object, volumes: set[str], p: str, errs: Errs) -> None:
    name = s(c, "name")
    if not name:
        errs.append(errors.required(f"{p}.name"))
    else:
        errs.extend(dns1123_label(name, f"{p}.name"))
    if not s(c, "image"):
        errs.append(errors.required(f"{p}.image"))
    policy = c.get("terminationMessagePolicy")
    if policy not in _TERMINATION:
        errs.append(_enum(f"{p}.terminationMessagePolicy", policy, _TERMINATION))
    _ports(dl(c.get("ports")), f"{p}.ports", errs)
    _env(dl(c.get("env")), f"{p}.env", errs)
    _mounts(dl(c.get("volumeMounts")), volumes, f"{p}.volumeMounts", errs)
    _resources(d(c.get("resources")), f"{p}.resources", errs)


def _ports(ports: list[Object], path: str, errs: Errs) -> None:
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        name = s(port, "name")
        if name:
            msgs = port_name_errors(name)
            errs.extend(errors.invalid(f"{p}.name", name, m) for m in msgs)
            if not msgs and name in names:
                errs.append(errors.FieldError("FieldValueDuplicate", f"{p}.name", "", name))
            names.add(name)
        value = port.get("containerPort")
        if not value:
            errs.append(errors.required(f"{p}.containerPort"))
        elif not valid_port(value):
            errs.append(errors.invalid(f"{p}.containerPort", value, PORT_RANGE))
        host = port.get("hostPort")
        if host and not valid_port(host):
            errs.append(errors.invalid(f"{p}.hostPort", host, PORT_RANGE))


def _env(env: list[Object], path: str, errs: Errs) -> None:
    for i, var in enumerate(env):
        p = f"{path}[{i}]"
        name = s(var, "name")
        if not name:
            errs.append(errors.required(f"{p}.name"))
            errs.append(errors.invalid(f"{p}.name", name, "environment variable name must be non-empty"))
        elif not (name.isascii() and name.isprintable()) or "=" in name:
            errs.append(
                errors.invalid(
                    f"{p}.name",
                    name,
                    "a valid environment variable name must consist only of printable ASCII characters "
                    "other than '='",
                )
            )
        source = var.get("valueFrom")
        if not isinstance(source, dict):
            continue
        count = sum(1 for k in _ENV_SOURCES if source.get(k) is not None)
        vp = f"{p}.valueFrom"
        if count == 0:
            errs.append(
                errors.invalid(
                    vp,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                    "`secretKeyRef`",
                )
            )
        elif s(var, "value"):
            errs.append(errors.invalid(vp, "", "may not be specified when `value` is not empty"))
        elif count > 1:
            errs.append(errors.invalid(vp, "", "may not have more than one field specified at a time"))


def _mounts(mounts: list[Object], volumes: set[str], path: str, errs: Errs) -> None:
    seen: set[str] = set()
    for i, m in enumerate(mounts):
        p = f"{path}[{i}]"
        name, where = s(m, "name"), s(m, "mountPath")
        if not name:
            errs.append(errors.required(f"{p}.name"))
        if name not in volumes:
            errs.append(errors.FieldError("FieldValueNotFound", f"{p}.name", "", name))
        if not where:
            errs.append(errors.required(f"{p}.mountPath"))
        if where in seen:
            errs.append(errors.invalid(f"{p}.mountPath", where, "must be unique"))
        seen.add(where)


def _resources(res: Object, path: str, errs: Errs) -> None:
    limits, requests = d(res.get("limits")), d(res.get("requests"))
    parsed_limits = {}
    for name, raw in limits.items():
        amount = quantity(raw)
        parsed_limits[name] = amount
        if amount is not None and amount < 0:
            errs.append(
                errors.invalid(
                    f"{path}.limits[{name}]", canonical_quantity(raw), "must be greater than or equal to 0"
                )
            )
    for name, raw in requests.items():
        amount = quantity(raw)
        if amount is not None and amount < 0:
            errs.append(
                errors.invalid(
                    f"{path}.requests[{name}]", canonical_quantity(raw), "must be greater than or equal to 0"
                )
            )
        if name in limits:
            limit = parsed_limits[name]
            if amount is not None and limit is not None and amount > limit:
                errs.append(
                    errors.invalid(
                        f"{path}.requests",
                        canonical_quantity(raw),
                        f"must be less than or equal to {name} limit of {canonical_quantity(limits[name])}",
                    )
                )
        elif not _overcommit_allowed(name):
            errs.append(
                errors.required(f"{path}.limits", "Limit must be set for non overcommitable resources")
            )


def _overcommit_allowed(name: str) -> bool:
    """Standard resources (no ``/`` or in ``kubernetes.io/``) may be overcommitted, hugepages not."""
    if name.startswith("hugepages-"):
        return False
    return name in _STANDARD or "/" not in name or name.startswith("kubernetes.io/")
