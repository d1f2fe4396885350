"""The bootstrap APF configuration of a 1.32 kube-apiserver: mandatory and suggested objects.

Facts from ``k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go`` (1.29+, v1): names,
matching precedences, distinguishers, subjects and rules of the FlowSchemas; shares, lendable
percentages and queuing of the PriorityLevelConfigurations. Every object carries
``apf.kubernetes.io/autoupdate-spec: "true"``: the server resets its spec at start while the
annotation stays ``true`` (``registry/apibootstrap``).
"""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]

API_VERSION = "flowcontrol.apiserver.k8s.io/v1"
AUTOUPDATE = "apf.kubernetes.io/autoupdate-spec"

_ALL_RESOURCES: Object = {
    "verbs": ["*"],
    "apiGroups": ["*"],
    "resources": ["*"],
    "clusterScope": True,
    "namespaces": ["*"],
}
_ALL_NON_RESOURCES: Object = {"verbs": ["*"], "nonResourceURLs": ["*"]}
_EVERYONE = ("system:unauthenticated", "system:authenticated")
_PROBES = ("/healthz", "/readyz", "/livez")


def _group(name: str) -> Object:
    return {"kind": "Group", "group": {"name": name}}


def _user(name: str) -> Object:
    return {"kind": "User", "user": {"name": name}}


def _kube_system_sa(name: str) -> Object:
    return {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": name}}


def _resources(verbs: list[str], group: str, resources: list[str], namespaces: list[str]) -> Object:
    return {"verbs": verbs, "apiGroups": [group], "resources": resources, "namespaces": namespaces}


def _meta(name: str) -> Object:
    return {"name": name, "annotations": {AUTOUPDATE: "true"}}


def _level(name: str, shares: int, lendable: int, queuing: tuple[int, int, int] | None) -> Object:
    response: Object = {"type": "Reject"}
    if queuing is not None:
        queues, hand, length = queuing
        response = {
            "type": "Queue",
            "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": length},
        }
    limited = {"nominalConcurrencyShares": shares, "lendablePercent": lendable, "limitResponse": response}
    return {
        "apiVersion": API_VERSION,
        "kind": "PriorityLevelConfiguration",
        "metadata": _meta(name),
        "spec": {"type": "Limited", "limited": limited},
    }


def _schema(name: str, level: str, precedence: int, distinguisher: str, *rules: Object) -> Object:
    spec: Object = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence}
    if distinguisher:
        spec["distinguisherMethod"] = {"type": distinguisher}
    spec["rules"] = list(rules)
    return {"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": _meta(name), "spec": spec}


def _everything(*subjects: Object) -> Object:
    return {
        "subjects": list(subjects),
        "resourceRules": [_ALL_RESOURCES],
        "nonResourceRules": [_ALL_NON_RESOURCES],
    }


def mandatory_levels() -> list[Object]:
    exempt = {
        "apiVersion": API_VERSION,
        "kind": "PriorityLevelConfiguration",
        "metadata": _meta("exempt"),
        "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
    }
    return [exempt, _level("catch-all", 5, 0, None)]


def mandatory_schemas() -> list[Object]:
    return [
        _schema("exempt", "exempt", 1, "", _everything(_group("system:masters"))),
        _schema("catch-all", "catch-all", 10000, "ByUser", _everything(*map(_group, _EVERYONE))),
    ]


def suggested_levels() -> list[Object]:
    return [
        _level("system", 30, 33, (64, 6, 50)),
        _level("node-high", 40, 25, (64, 6, 50)),
        _level("leader-election", 10, 0, (16, 4, 50)),
        _level("workload-high", 40, 50, (128, 6, 50)),
        _level("workload-low", 100, 90, (128, 6, 50)),
        _level("global-default", 20, 50, (128, 6, 50)),
    ]


def suggested_schemas() -> list[Object]:
    get_create_update = ["get", "create", "update"]
    leases = _resources(get_create_update, "coordination.k8s.io", ["leases"], ["*"])
    kcm, scheduler = _user("system:kube-controller-manager"), _user("system:kube-scheduler")
    system_sa, service_accounts = _kube_system_sa("*"), _group("system:serviceaccounts")
    return [
        _schema("system-nodes", "system", 500, "ByUser", _everything(_group("system:nodes"))),
        _schema(
            "system-node-high",
            "node-high",
            400,
            "ByUser",
            {
                "subjects": [_group("system:nodes")],
                "resourceRules": [
                    {**_resources(["*"], "", ["nodes", "nodes/status"], ["*"]), "clusterScope": True},
                    _resources(["*"], "coordination.k8s.io", ["leases"], ["*"]),
                ],
            },
        ),
        _schema(
            "probes",
            "exempt",
            2,
            "",
            {
                "subjects": [_group(g) for g in _EVERYONE],
                "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}
                ],
            },
        ),
        _schema(
            "system-leader-election",
            "leader-election",
            100,
            "ByUser",
            {
                "subjects": [kcm, scheduler, _kube_system_sa("*")],
                "resourceRules": [
                    _resources(get_create_update, "", ["endpoints", "configmaps"], ["kube-system"]),
                    leases,
                ],
            },
        ),
        _schema(
            "workload-leader-election",
            "leader-election",
            200,
            "ByUser",
            {
                "subjects": [_kube_system_sa("*")],
                "resourceRules": [
                    _resources(get_create_update, "", ["endpoints", "configmaps"], ["*"]),
                    leases,
                ],
            },
        ),
        _schema(
            "endpoint-controller",
            "workload-high",
            150,
            "ByUser",
            {
                "subjects": [
                    kcm,
                    _kube_system_sa("endpoint-controller"),
                    _kube_system_sa("endpointslicemirroring-controller"),
                ],
                "resourceRules": [_resources(["get", "create", "update"], "", ["endpoints"], ["*"])],
            },
        ),
        _schema("kube-controller-manager", "workload-high", 800, "ByNamespace", _everything(kcm)),
        _schema("kube-scheduler", "workload-high", 800, "ByNamespace", _everything(scheduler)),
        _schema("kube-system-service-accounts", "workload-high", 900, "ByNamespace", _everything(system_sa)),
        _schema("service-accounts", "workload-low", 9000, "ByUser", _everything(service_accounts)),
        _schema("global-default", "global-default", 9900, "ByUser", _everything(*map(_group, _EVERYONE))),
    ]


def all_objects() -> list[tuple[str, Object]]:
    """Every bootstrap object as (plural, object): levels before the schemas naming them."""
    levels = [("prioritylevelconfigurations", o) for o in (*mandatory_levels(), *suggested_levels())]
    schemas = [("flowschemas", o) for o in (*mandatory_schemas(), *suggested_schemas())]
    return levels + schemas
