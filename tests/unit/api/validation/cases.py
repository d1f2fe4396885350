"""Tables of invalid and valid built-in objects with the causes kube-apiserver 1.32 gives.

Messages are quoted from upstream: apimachinery ``pkg/util/validation/validation.go`` (name, port
and config-key texts), kubernetes ``pkg/apis/core/validation/validation.go`` (pod spec, ConfigMap,
Secret, PVC), ``pkg/apis/apps/validation`` and ``pkg/apis/batch/validation``. Every pod-spec case
runs in each kind that embeds a pod spec, under that kind's path.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Mutate = Callable[[Obj], None]

LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
CONFIG_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
PORT_CHARSET = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
NONNEGATIVE = "must be greater than or equal to 0"
PORTS = "must be between 1 and 65535, inclusive"
ENV_NAME = "a valid environment variable name must consist only of printable ASCII characters other than '='"


def container(**kw: Any) -> Obj:
    """A defaulted container, as validation sees it."""
    return {
        "name": "c",
        "image": "nginx",
        "imagePullPolicy": "Always",
        "terminationMessagePolicy": "File",
        **kw,
    }


def pod_spec(**kw: Any) -> Obj:
    return {"containers": [container()], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", **kw}


def _c(i: int = 0, **kw: Any) -> Mutate:
    def mutate(spec: Obj) -> None:
        spec["containers"][i].update(kw)

    return mutate


def _s(**kw: Any) -> Mutate:
    return lambda spec: spec.update(kw)


def _two(**kw: Any) -> Mutate:
    def mutate(spec: Obj) -> None:
        spec["containers"].append(container(**{"name": "d", **kw}))

    return mutate


def _vol(*vols: Obj, mounts: list[Obj] | None = None) -> Mutate:
    def mutate(spec: Obj) -> None:
        spec["volumes"] = list(vols)
        if mounts is not None:
            spec["containers"][0]["volumeMounts"] = mounts

    return mutate


def _res(limits: Obj | None = None, requests: Obj | None = None) -> Mutate:
    res = {k: v for k, v in (("limits", limits), ("requests", requests)) if v is not None}
    return _c(resources=res)


def _port(**kw: Any) -> Mutate:
    return _c(ports=[{"containerPort": 80, "protocol": "TCP", **kw}])


EMPTY = {"emptyDir": {}}
C0 = "containers[0]"

# (id, mutation of a valid pod spec, [(reason, path relative to the pod spec, body)])
POD_SPEC_INVALID: list[tuple[str, Mutate, list[tuple[str, str, str]]]] = [
    (
        "bad-name",
        _c(name="Bad_Name"),
        [("FieldValueInvalid", f"{C0}.name", f'Invalid value: "Bad_Name": {LABEL}')],
    ),
    ("dot-name", _c(name="a.b"), [("FieldValueInvalid", f"{C0}.name", f'Invalid value: "a.b": {LABEL}')]),
    ("dash-name", _c(name="-a"), [("FieldValueInvalid", f"{C0}.name", f'Invalid value: "-a": {LABEL}')]),
    ("empty-name", _c(name=""), [("FieldValueRequired", f"{C0}.name", "Required value")]),
    (
        "long-name",
        _c(name="a" * 64),
        [
            (
                "FieldValueInvalid",
                f"{C0}.name",
                f'Invalid value: "{"a" * 64}": must be no more than 63 characters',
            )
        ],
    ),
    ("no-image", _c(image=""), [("FieldValueRequired", f"{C0}.image", "Required value")]),
    (
        "bad-name-no-image",
        _c(name="Bad_Name", image=""),
        [
            ("FieldValueInvalid", f"{C0}.name", f'Invalid value: "Bad_Name": {LABEL}'),
            ("FieldValueRequired", f"{C0}.image", "Required value"),
        ],
    ),
    (
        "dup-container",
        _two(name="c"),
        [("FieldValueDuplicate", "containers[1].name", 'Duplicate value: "c"')],
    ),
    (
        "dup-init",
        _s(initContainers=[container()]),
        [("FieldValueDuplicate", "initContainers[0].name", 'Duplicate value: "c"')],
    ),
    (
        "init-no-image",
        _s(initContainers=[container(name="i", image="")]),
        [("FieldValueRequired", "initContainers[0].image", "Required value")],
    ),
    ("no-containers", _s(containers=[]), [("FieldValueRequired", "containers", "Required value")]),
    (
        "termination-policy",
        _c(terminationMessagePolicy="Bad"),
        [
            (
                "FieldValueNotSupported",
                f"{C0}.terminationMessagePolicy",
                'Unsupported value: "Bad": supported values: "File", "FallbackToLogsOnError"',
            )
        ],
    ),
    (
        "port-high",
        _port(containerPort=70000),
        [("FieldValueInvalid", f"{C0}.ports[0].containerPort", f"Invalid value: 70000: {PORTS}")],
    ),
    (
        "port-negative",
        _port(containerPort=-1),
        [("FieldValueInvalid", f"{C0}.ports[0].containerPort", f"Invalid value: -1: {PORTS}")],
    ),
    (
        "port-zero",
        _port(containerPort=0),
        [("FieldValueRequired", f"{C0}.ports[0].containerPort", "Required value")],
    ),
    (
        "host-port-high",
        _port(hostPort=65536),
        [("FieldValueInvalid", f"{C0}.ports[0].hostPort", f"Invalid value: 65536: {PORTS}")],
    ),
    (
        "port-name-charset",
        _port(name="http_port"),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].name",
                'Invalid value: "http_port": ' + PORT_CHARSET,
            )
        ],
    ),
    (
        "port-name-digits",
        _port(name="8080"),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].name",
                'Invalid value: "8080": must contain at least one letter (a-z)',
            )
        ],
    ),
    (
        "port-name-hyphens",
        _port(name="a--b"),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].name",
                'Invalid value: "a--b": must not contain consecutive hyphens',
            )
        ],
    ),
    (
        "port-name-edge",
        _port(name="web-"),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].name",
                'Invalid value: "web-": must not begin or end with a hyphen',
            )
        ],
    ),
    (
        "port-name-long",
        _port(name="abcdefghijklmnop"),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].name",
                'Invalid value: "abcdefghijklmnop": must be no more than 15 characters',
            )
        ],
    ),
    (
        "port-name-upper",
        _port(name="Web"),
        [
            (
                "FieldValueInvalid",
                f"{C0}.ports[0].name",
                'Invalid value: "Web": ' + PORT_CHARSET,
            )
        ],
    ),
    (
        "port-name-dup",
        _c(
            ports=[
                {"containerPort": 80, "protocol": "TCP", "name": "web"},
                {"containerPort": 81, "protocol": "TCP", "name": "web"},
            ]
        ),
        [("FieldValueDuplicate", f"{C0}.ports[1].name", 'Duplicate value: "web"')],
    ),
    (
        "host-port-dup",
        lambda spec: (
            _port(hostPort=8080)(spec),
            _two(ports=[{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}])(spec),
        ),
        [("FieldValueDuplicate", "containers[1].ports[0].hostPort", 'Duplicate value: "8080/TCP"')],
    ),
    (
        "env-equals",
        _c(env=[{"name": "A=B", "value": "x"}]),
        [("FieldValueInvalid", f"{C0}.env[0].name", f'Invalid value: "A=B": {ENV_NAME}')],
    ),
    (
        "env-unicode",
        _c(env=[{"name": "caf\u00e9"}]),
        [("FieldValueInvalid", f"{C0}.env[0].name", f'Invalid value: "caf\u00e9": {ENV_NAME}')],
    ),
    (
        "env-value-and-from",
        _c(env=[{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
        [
            (
                "FieldValueInvalid",
                f"{C0}.env[0].valueFrom",
                'Invalid value: "": may not be specified when `value` is not empty',
            )
        ],
    ),
    (
        "env-from-nothing",
        _c(env=[{"name": "A", "valueFrom": {}}]),
        [
            (
                "FieldValueInvalid",
                f"{C0}.env[0].valueFrom",
                'Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, '
                "`configMapKeyRef` or `secretKeyRef`",
            )
        ],
    ),
    (
        "env-from-two",
        _c(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}, "secretKeyRef": {"key": "k"}}}]),
        [
            (
                "FieldValueInvalid",
                f"{C0}.env[0].valueFrom",
                'Invalid value: "": may not have more than one field specified at a time',
            )
        ],
    ),
    (
        "mount-unknown",
        _vol(mounts=[{"name": "data", "mountPath": "/d"}]),
        [("FieldValueNotFound", f"{C0}.volumeMounts[0].name", 'Not found: "data"')],
    ),
    (
        "mount-dup-path",
        _vol(
            {"name": "a", **EMPTY},
            {"name": "b", **EMPTY},
            mounts=[{"name": "a", "mountPath": "/d"}, {"name": "b", "mountPath": "/d"}],
        ),
        [("FieldValueInvalid", f"{C0}.volumeMounts[1].mountPath", 'Invalid value: "/d": must be unique')],
    ),
    (
        "volume-two-sources",
        _vol({"name": "a", **EMPTY, "hostPath": {"path": "/x"}}),
        [
            (
                "FieldValueForbidden",
                "volumes[0].hostPath",
                "Forbidden: may not specify more than 1 volume type",
            )
        ],
    ),
    (
        "volume-dup",
        _vol({"name": "a", **EMPTY}, {"name": "a", **EMPTY}),
        [("FieldValueDuplicate", "volumes[1].name", 'Duplicate value: "a"')],
    ),
    (
        "volume-bad-name",
        _vol({"name": "A_b", **EMPTY}),
        [("FieldValueInvalid", "volumes[0].name", f'Invalid value: "A_b": {LABEL}')],
    ),
    (
        "volume-no-name",
        _vol({"name": "", **EMPTY}),
        [("FieldValueRequired", "volumes[0].name", "Required value")],
    ),
    (
        "cpu-over-limit",
        _res({"cpu": "1"}, {"cpu": "2"}),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests",
                'Invalid value: "2": must be less than or equal to cpu limit of 1',
            )
        ],
    ),
    (
        "memory-over-limit",
        _res({"memory": "1Gi"}, {"memory": "2Gi"}),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests",
                'Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi',
            )
        ],
    ),
    (
        "milli-over-limit",
        _res({"cpu": "500m"}, {"cpu": "0.6"}),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests",
                'Invalid value: "600m": must be less than or equal to cpu limit of 500m',
            )
        ],
    ),
    (
        "negative-limit",
        _res({"cpu": "-1"}, {"cpu": "-1"}),  # a request defaults to the limit, so both are sent
        [
            ("FieldValueInvalid", f"{C0}.resources.limits[cpu]", 'Invalid value: "-1": ' + NONNEGATIVE),
            ("FieldValueInvalid", f"{C0}.resources.requests[cpu]", 'Invalid value: "-1": ' + NONNEGATIVE),
        ],
    ),
    (
        "negative-request",
        _res(requests={"memory": "-1Mi"}),
        [
            (
                "FieldValueInvalid",
                f"{C0}.resources.requests[memory]",
                'Invalid value: "-1Mi": must be greater than or equal to 0',
            )
        ],
    ),
    (
        "extended-no-limit",
        _res(requests={"example.com/gpu": "1"}),
        [
            (
                "FieldValueRequired",
                f"{C0}.resources.limits",
                "Required value: Limit must be set for non overcommitable resources",
            )
        ],
    ),
    (
        "hugepages-no-limit",
        _res(requests={"hugepages-2Mi": "2Mi"}),
        [
            (
                "FieldValueRequired",
                f"{C0}.resources.limits",
                "Required value: Limit must be set for non overcommitable resources",
            )
        ],
    ),
    (
        "dns-policy",
        _s(dnsPolicy="Foo"),
        [
            (
                "FieldValueNotSupported",
                "dnsPolicy",
                'Unsupported value: "Foo": supported values: "ClusterFirstWithHostNet", "ClusterFirst", '
                '"Default", "None"',
            )
        ],
    ),
    (
        "dns-none",
        _s(dnsPolicy="None"),
        [
            (
                "FieldValueRequired",
                "dnsConfig",
                "Required value: must provide `dnsConfig` when `dnsPolicy` is None",
            )
        ],
    ),
]

# (id, mutation) of pod specs upstream accepts: edges of the same rules.
POD_SPEC_VALID: list[tuple[str, Mutate]] = [
    ("plain", lambda spec: None),
    ("name-63", _c(name="a" * 63)),
    ("name-one-char", _c(name="a")),
    ("name-digits", _c(name="0123")),
    ("name-hyphens", _c(name="a-b--c")),
    ("port-1", _port(containerPort=1)),
    ("port-65535", _port(containerPort=65535, hostPort=65535)),
    ("port-name-15", _port(name="abcdefghijklmno")),
    ("port-name-digit-letter", _port(name="8080a")),
    (
        "port-names-distinct",
        _c(ports=[{"containerPort": 80, "name": "a"}, {"containerPort": 81, "name": "b"}]),
    ),
    (
        "host-port-protocols",
        _c(
            ports=[
                {"containerPort": 53, "hostPort": 53, "protocol": "TCP"},
                {"containerPort": 53, "hostPort": 53, "protocol": "UDP"},
            ]
        ),
    ),
    ("env-relaxed", _c(env=[{"name": "1-a.b c", "value": "x"}, {"name": "A_B", "value": ""}])),
    ("env-from-field", _c(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}])),
    (
        "mounts",
        _vol(
            {"name": "a", **EMPTY},
            {"name": "b", **EMPTY},
            mounts=[{"name": "a", "mountPath": "/a"}, {"name": "b", "mountPath": "/b"}],
        ),
    ),
    (
        "same-volume-twice",
        _vol(
            {"name": "a", **EMPTY},
            mounts=[{"name": "a", "mountPath": "/a"}, {"name": "a", "mountPath": "/b"}],
        ),
    ),
    ("requests-equal-limits", _res({"cpu": "1", "memory": "1Gi"}, {"cpu": "1000m", "memory": "1024Mi"})),
    ("request-below", _res({"cpu": "1"}, {"cpu": "999m"})),
    ("request-no-limit", _res(requests={"cpu": "100m", "memory": "1e6"})),
    ("extended-equal", _res({"example.com/gpu": "1"}, {"example.com/gpu": "1"})),
    ("limit-only", _res({"memory": "512Mi"})),
    ("zero-quantity", _res({"cpu": "0"}, {"cpu": "0"})),
    ("dns-none-config", _s(dnsPolicy="None", dnsConfig={"nameservers": ["1.1.1.1"]})),
    ("dns-default", _s(dnsPolicy="Default")),
    ("init-distinct", _s(initContainers=[container(name="init")])),
    ("termination-fallback", _c(terminationMessagePolicy="FallbackToLogsOnError")),
]


def _meta(name: str = "x", **labels: str) -> Obj:
    return {"name": name, "labels": labels} if labels else {"name": name}


def _template(spec: Obj, policy: str) -> Obj:
    return {"metadata": {"labels": {"app": "a"}}, "spec": {**spec, "restartPolicy": policy}}


def _selector() -> Obj:
    return {"matchLabels": {"app": "a"}}


# kind -> (group, how to embed a pod spec, where that spec lives)
HOSTS: dict[str, tuple[str, Callable[[Obj], Obj], str]] = {
    "Pod": ("", lambda spec: {"metadata": _meta(), "spec": spec}, "spec"),
    "Deployment": (
        "apps",
        lambda spec: {
            "metadata": _meta(),
            "spec": {"replicas": 1, "selector": _selector(), "template": _template(spec, "Always")},
        },
        "spec.template.spec",
    ),
    "ReplicaSet": (
        "apps",
        lambda spec: {
            "metadata": _meta(),
            "spec": {"selector": _selector(), "template": _template(spec, "Always")},
        },
        "spec.template.spec",
    ),
    "StatefulSet": (
        "apps",
        lambda spec: {
            "metadata": _meta(),
            "spec": {"selector": _selector(), "template": _template(spec, "Always")},
        },
        "spec.template.spec",
    ),
    "DaemonSet": (
        "apps",
        lambda spec: {
            "metadata": _meta(),
            "spec": {"selector": _selector(), "template": _template(spec, "Always")},
        },
        "spec.template.spec",
    ),
    "Job": (
        "batch",
        lambda spec: {
            "metadata": _meta(),
            "spec": {"selector": _selector(), "template": _template(spec, "Never")},
        },
        "spec.template.spec",
    ),
    "CronJob": (
        "batch",
        lambda spec: {
            "metadata": _meta(),
            "spec": {
                "schedule": "* * * * *",
                "concurrencyPolicy": "Allow",
                "jobTemplate": {"spec": {"template": _template(spec, "OnFailure")}},
            },
        },
        "spec.jobTemplate.spec.template.spec",
    ),
}


def embed(kind: str, mutate: Mutate) -> Obj:
    """A valid ``kind`` whose pod spec was changed by ``mutate``."""
    spec = copy.deepcopy(pod_spec())
    mutate(spec)
    return HOSTS[kind][1](spec)
