"""The Pod Security Standards' checks (pod-security-admission ``policy/check_*.go``), as facts.

``violations(level, spec, meta)`` returns ``(reason, detail)`` pairs in upstream's order: the
baseline checks, then the restricted ones, each level sorted by check id; a restricted check that
overrides a baseline one (capabilities, seccomp, hostPath volumes) replaces it at ``restricted``.
Names of several containers or volumes are listed as ``containers "a", "b"`` (init containers
first), as upstream's messages do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Object = dict[str, Any]
Check = Callable[[Object, Object], list[str]]

_BASELINE_CAPS = frozenset(
    [
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    ]
)
_SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
_RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)


def _d(v: Any) -> Object:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _containers(spec: Object) -> list[Object]:
    return [
        c
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in _l(spec.get(key))
        if isinstance(c, dict)
    ]


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _who(noun: str, names: list[str]) -> str:
    return f"{noun}{'s' if len(names) > 1 else ''} {_quoted(names)}"


def _sc(c: Object) -> Object:
    return _d(c.get("securityContext"))


def _pod_sc(spec: Object) -> Object:
    return _d(spec.get("securityContext"))


def _names(spec: Object, bad: Callable[[Object], bool]) -> list[str]:
    return [str(c.get("name")) for c in _containers(spec) if bad(c)]


def privileged(spec: Object, meta: Object) -> list[str]:
    bad = _names(spec, lambda c: _sc(c).get("privileged") is True)
    return [f"{_who('container', bad)} must not set securityContext.privileged=true"] if bad else []


def host_namespaces(spec: Object, meta: Object) -> list[str]:
    used = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    return [", ".join(used)] if used else []


def host_path_volumes(spec: Object, meta: Object) -> list[str]:
    bad = [str(v.get("name")) for v in _l(spec.get("volumes")) if isinstance(v, dict) and "hostPath" in v]
    return [f"{'volumes' if len(bad) > 1 else 'volume'} {_quoted(bad)}"] if bad else []


def host_ports(spec: Object, meta: Object) -> list[str]:
    names, ports = [], []
    for c in _containers(spec):
        mine = [p.get("hostPort") for p in _l(c.get("ports")) if isinstance(p, dict) and p.get("hostPort")]
        if mine:
            names.append(str(c.get("name")))
            ports += [str(p) for p in mine]
    if not names:
        return []
    verb = "use" if len(names) > 1 else "uses"
    return [f"{_who('container', names)} {verb} hostPort{'s' if len(ports) > 1 else ''} {', '.join(ports)}"]


def capabilities_baseline(spec: Object, meta: Object) -> list[str]:
    names, caps = [], []
    for c in _containers(spec):
        added = [
            str(a) for a in _l(_d(_sc(c).get("capabilities")).get("add")) if str(a) not in _BASELINE_CAPS
        ]
        if added:
            names.append(str(c.get("name")))
            caps += [a for a in added if a not in caps]
    if not names:
        return []
    return [
        f"{_who('container', names)} must not include {_quoted(caps)} in securityContext.capabilities.add"
    ]


def proc_mount(spec: Object, meta: Object) -> list[str]:
    out = []
    for c in _containers(spec):
        mount = _sc(c).get("procMount")
        if mount not in (None, "", "Default"):
            out.append(f'container "{c.get("name")}" must not set securityContext.procMount to "{mount}"')
    return ["; ".join(out)] if out else []


def se_linux_options(spec: Object, meta: Object) -> list[str]:
    def bad(opts: Any) -> bool:
        o = _d(opts)
        return o.get("type", "") not in _SELINUX_TYPES or bool(o.get("user")) or bool(o.get("role"))

    subjects = (["pod"] if bad(_pod_sc(spec).get("seLinuxOptions")) else []) + [
        f'container "{n}"' for n in _names(spec, lambda c: bad(_sc(c).get("seLinuxOptions")))
    ]
    return [f"{' and '.join(subjects)} set forbidden securityContext.seLinuxOptions"] if subjects else []


def _seccomp_unconfined(spec: Object) -> list[str]:
    out = []
    if _d(_pod_sc(spec).get("seccompProfile")).get("type") == "Unconfined":
        out.append('pod must not set securityContext.seccompProfile.type to "Unconfined"')
    bad = _names(spec, lambda c: _d(_sc(c).get("seccompProfile")).get("type") == "Unconfined")
    if bad:
        out.append(
            f'{_who("container", bad)} must not set securityContext.seccompProfile.type to "Unconfined"'
        )
    return out


def seccomp_baseline(spec: Object, meta: Object) -> list[str]:
    out = _seccomp_unconfined(spec)
    return ["; ".join(out)] if out else []


def sysctls(spec: Object, meta: Object) -> list[str]:
    bad = [
        str(s.get("name"))
        for s in _l(_pod_sc(spec).get("sysctls"))
        if isinstance(s, dict) and s.get("name") not in _SAFE_SYSCTLS
    ]
    return [", ".join(bad)] if bad else []


def app_armor(spec: Object, meta: Object) -> list[str]:
    bad = [
        f'{k}="{v}"'
        for k, v in sorted(_d(meta.get("annotations")).items())
        if k.startswith("container.apparmor.security.beta.kubernetes.io/")
        and v != "runtime/default"
        and not str(v).startswith("localhost/")
    ]
    return [f"annotation{'s' if len(bad) > 1 else ''} {', '.join(bad)}"] if bad else []


def windows_host_process(spec: Object, meta: Object) -> list[str]:
    def host(sc: Object) -> bool:
        return _d(sc.get("windowsOptions")).get("hostProcess") is True

    bad = _names(spec, lambda c: host(_sc(c)))
    if host(_pod_sc(spec)) or bad:
        subject = "pod" if not bad else _who("container", bad)
        return [f"{subject} must not set securityContext.windowsOptions.hostProcess=true"]
    return []


def allow_privilege_escalation(spec: Object, meta: Object) -> list[str]:
    bad = _names(spec, lambda c: _sc(c).get("allowPrivilegeEscalation") is not False)
    return (
        [f"{_who('container', bad)} must set securityContext.allowPrivilegeEscalation=false"] if bad else []
    )


def capabilities_restricted(spec: Object, meta: Object) -> list[str]:
    no_drop = _names(
        spec, lambda c: "ALL" not in [str(x) for x in _l(_d(_sc(c).get("capabilities")).get("drop"))]
    )
    names, caps = [], []
    for c in _containers(spec):
        added = [
            str(a) for a in _l(_d(_sc(c).get("capabilities")).get("add")) if str(a) != "NET_BIND_SERVICE"
        ]
        if added:
            names.append(str(c.get("name")))
            caps += [a for a in added if a not in caps]
    out = []
    if no_drop:
        out.append(f'{_who("container", no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if names:
        out.append(
            f"{_who('container', names)} must not include {_quoted(caps)} in securityContext.capabilities.add"
        )
    return ["; ".join(out)] if out else []


def restricted_volumes(spec: Object, meta: Object) -> list[str]:
    by_type: dict[str, list[str]] = {}
    for v in _l(spec.get("volumes")):
        if not isinstance(v, dict):
            continue
        kinds = [k for k in v if k != "name" and k not in _RESTRICTED_VOLUMES]
        for kind in kinds:
            by_type.setdefault(kind, []).append(str(v.get("name")))
    out = []
    for kind, names in by_type.items():
        verb = "use" if len(names) > 1 else "uses"
        noun = "volumes" if len(names) > 1 else "volume"
        out.append(f'{noun} {_quoted(names)} {verb} restricted volume type "{kind}"')
    return ["; ".join(out)] if out else []


def run_as_non_root(spec: Object, meta: Object) -> list[str]:
    pod = _pod_sc(spec).get("runAsNonRoot")
    out = []
    if pod is False:
        out.append("pod must not set securityContext.runAsNonRoot=false")
    explicit_false = _names(spec, lambda c: _sc(c).get("runAsNonRoot") is False)
    if explicit_false:
        out.append(f"{_who('container', explicit_false)} must not set securityContext.runAsNonRoot=false")
    if pod is not True:
        unset = _names(spec, lambda c: _sc(c).get("runAsNonRoot") is None)
        if unset:
            out.append(f"pod or {_who('container', unset)} must set securityContext.runAsNonRoot=true")
    return ["; ".join(out)] if out else []


def run_as_user(spec: Object, meta: Object) -> list[str]:
    out = []
    if _pod_sc(spec).get("runAsUser") == 0:
        out.append("pod must not set runAsUser=0")
    bad = _names(spec, lambda c: _sc(c).get("runAsUser") == 0)
    if bad:
        out.append(f"{_who('container', bad)} must not set runAsUser=0")
    return ["; ".join(out)] if out else []


def seccomp_restricted(spec: Object, meta: Object) -> list[str]:
    out = _seccomp_unconfined(spec)
    pod_type = _d(_pod_sc(spec).get("seccompProfile")).get("type")
    if pod_type not in ("RuntimeDefault", "Localhost"):
        unset = _names(spec, lambda c: _d(_sc(c).get("seccompProfile")).get("type") is None)
        if unset:
            out.append(
                f"pod or {_who('container', unset)} must set securityContext.seccompProfile.type to "
                '"RuntimeDefault" or "Localhost"'
            )
    return ["; ".join(out)] if out else []


# (check id, reason, check), each level sorted by id (Go's byte order: "seL" before "sec")
BASELINE: tuple[tuple[str, str, Check], ...] = (
    ("appArmorProfile", "forbidden AppArmor profile", app_armor),
    ("capabilities_baseline", "non-default capabilities", capabilities_baseline),
    ("hostNamespaces", "host namespaces", host_namespaces),
    ("hostPathVolumes", "hostPath volumes", host_path_volumes),
    ("hostPorts", "hostPort", host_ports),
    ("privileged", "privileged", privileged),
    ("procMount", "procMount", proc_mount),
    ("seLinuxOptions", "seLinuxOptions", se_linux_options),
    ("seccompProfile_baseline", "seccompProfile", seccomp_baseline),
    ("sysctls", "forbidden sysctls", sysctls),
    ("windowsHostProcess", "hostProcess", windows_host_process),
)
RESTRICTED: tuple[tuple[str, str, Check], ...] = (
    ("allowPrivilegeEscalation", "allowPrivilegeEscalation != false", allow_privilege_escalation),
    ("capabilities_restricted", "unrestricted capabilities", capabilities_restricted),
    ("restrictedVolumes", "restricted volume types", restricted_volumes),
    ("runAsNonRoot", "runAsNonRoot != true", run_as_non_root),
    ("runAsUser", "runAsUser=0", run_as_user),
    ("seccompProfile_restricted", "seccompProfile", seccomp_restricted),
)
_OVERRIDDEN = frozenset({"capabilities_baseline", "hostPathVolumes", "seccompProfile_baseline"})


def violations(level: str, spec: Object, meta: Object) -> list[tuple[str, str]]:
    """(reason, detail) of every check ``spec`` fails at ``level`` (``privileged``: none)."""
    if level == "privileged":
        return []
    checks = list(BASELINE)
    if level == "restricted":
        checks = [c for c in checks if c[0] not in _OVERRIDDEN] + list(RESTRICTED)
    out = []
    for _, reason, check in checks:
        for detail in check(spec, meta):
            out.append((reason, detail))
    return out
