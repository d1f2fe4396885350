"""The bootstrap RBAC policy of a 1.32 kube-apiserver, for what kplane serves and runs.

The contents follow upstream's ``bootstrappolicy`` (its ``testdata/cluster-roles.yaml`` and
``cluster-role-bindings.yaml``): the user-facing roles with their aggregation, discovery and
self-review roles bound to everyone, ``cluster-admin`` bound to ``system:masters``, and the
``system:controller:*`` roles of the controllers kplane runs (``rbac_controller_policy``, each bound
to the service account of the same name in ``kube-system``), and the roles of the control plane's
own identities: ``system:kube-controller-manager`` and ``system:kube-scheduler`` (bound to those
users) and ``system:node`` (bound to nobody, as upstream, where the Node authorizer serves kubelets;
kplane has none and grants it to the group ``system:nodes`` by ``kplane:nodes``, with
``kplane:resource-usage-reporter`` for the simulated kubelets' usage reports). Every object carries
the bootstrapping label and the ``autoupdate`` annotation; ``bootstrap.reconcile`` keeps them
current at each start.
"""

from __future__ import annotations

from typing import Any

from kplane.server.auth.rbac_controller_policy import CONTROLLERS, EVENTS

Object = dict[str, Any]

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABEL = ("kubernetes.io/bootstrapping", "rbac-defaults")
_AGG = "rbac.authorization.k8s.io/aggregate-to-"
_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]
_ALLV = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _r(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> Object:
    rule: Object = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        rule["resourceNames"] = names
    return rule


def _urls(verbs: list[str], urls: list[str]) -> Object:
    return {"nonResourceURLs": urls, "verbs": verbs}


def _role(
    name: str, rules: list[Object] | None, *, labels: dict[str, str] | None = None, aggregate: str = ""
) -> Object:
    meta: Object = {
        "name": name,
        "labels": {BOOTSTRAP_LABEL[0]: BOOTSTRAP_LABEL[1], **(labels or {})},
        "annotations": {AUTOUPDATE: "true"},
    }
    role: Object = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta}
    if aggregate:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {_AGG + aggregate: "true"}}]}
    role["rules"] = rules
    return role


def _agg_label(to: str) -> dict[str, str]:
    return {_AGG + to: "true"}


_VIEW_RULES = [
    _r(
        _READ,
        [""],
        [
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
        ],
    ),
    _r(
        _READ,
        [""],
        [
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ],
    ),
    _r(_READ, [""], ["namespaces"]),
    _r(_READ, ["discovery.k8s.io"], ["endpointslices"]),
    _r(
        _READ,
        ["apps"],
        [
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
    ),
    _r(_READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    _r(_READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    _r(
        _READ,
        ["extensions"],
        [
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
        ],
    ),
    _r(_READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _r(_READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
]

_EDIT_RULES = [
    _r(
        _READ,
        [""],
        ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
    ),
    _r(["impersonate"], [""], ["serviceaccounts"]),
    _r(_WRITE, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
    _r(["create"], [""], ["pods/eviction"]),
    _r(
        _WRITE,
        [""],
        [
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
    ),
    _r(["create"], [""], ["serviceaccounts/token"]),
    _r(
        _WRITE,
        ["apps"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
    ),
    _r(_WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    _r(_WRITE, ["batch"], ["cronjobs", "jobs"]),
    _r(
        _WRITE,
        ["extensions"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "ingresses",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
        ],
    ),
    _r(_WRITE, ["policy"], ["poddisruptionbudgets"]),
    _r(_WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
    _r(_ALLV, ["coordination.k8s.io"], ["leases"]),
]

_ADMIN_RULES = [
    _r(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    _r(_ALLV, ["rbac.authorization.k8s.io"], ["rolebindings", "roles"]),
]

_HEALTH = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

KCM_USER = "system:kube-controller-manager"
SCHEDULER_USER = "system:kube-scheduler"
NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"
NODES_BINDING = "kplane:nodes"
USAGE_REPORTER = "kplane:resource-usage-reporter"

# The control plane components' own roles (upstream policy.go, 1.32).
_COMPONENTS: dict[str, list[Object]] = {
    # the manager's identity: shared informers (list/watch everything), its Lease, and what it needs
    # to give each controller a ServiceAccount identity of its own
    KCM_USER: [
        EVENTS,
        _r(["create"], ["coordination.k8s.io"], ["leases"]),
        _r(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-controller-manager"]),
        _r(["create"], [""], ["secrets", "serviceaccounts"]),
        _r(["delete"], [""], ["secrets"]),
        _r(["get"], [""], ["configmaps", "namespaces", "secrets", "serviceaccounts"]),
        _r(["update"], [""], ["secrets", "serviceaccounts"]),
        _r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        _r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        _r(["list", "watch"], ["*"], ["*"]),
        _r(["create"], [""], ["serviceaccounts/token"]),
    ],
    SCHEDULER_USER: [
        EVENTS,
        _r(["create"], ["coordination.k8s.io"], ["leases"]),
        _r(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
        _r(_READ, [""], ["nodes"]),
        _r(["delete", "get", "list", "watch"], [""], ["pods"]),
        _r(["create"], [""], ["bindings", "pods/binding"]),
        _r(["patch", "update"], [""], ["pods/status"]),
        _r(_READ, [""], ["replicationcontrollers", "services"]),
        _r(_READ, ["apps", "extensions"], ["replicasets"]),
        _r(_READ, ["apps"], ["statefulsets"]),
        _r(_READ, ["policy"], ["poddisruptionbudgets"]),
        _r(_READ, [""], ["persistentvolumeclaims", "persistentvolumes"]),
        _r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        _r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        _r(_READ, ["storage.k8s.io"], ["csinodes"]),
        _r(_READ, [""], ["namespaces"]),
        _r(_READ, ["storage.k8s.io"], ["csidrivers"]),
        _r(_READ, ["storage.k8s.io"], ["csistoragecapacities"]),
    ],
    # the kubelets' rules; upstream binds the role to nobody (see cluster_role_bindings)
    "system:node": [
        _r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
        _r(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews", "subjectaccessreviews"]),
        _r(_READ, [""], ["services"]),
        _r(["create", "get", "list", "watch"], [""], ["nodes"]),
        _r(["patch", "update"], [""], ["nodes/status"]),
        _r(["patch", "update"], [""], ["nodes"]),
        _r(["create", "patch", "update"], [""], ["events"]),
        _r(_READ, [""], ["pods"]),
        _r(["create", "delete"], [""], ["pods"]),
        _r(["patch", "update"], [""], ["pods/status"]),
        _r(["create"], [""], ["pods/eviction"]),
        _r(_READ, [""], ["configmaps", "secrets"]),
        _r(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
        _r(["get"], [""], ["endpoints"]),
        _r(["create", "get", "list", "watch"], ["certificates.k8s.io"], ["certificatesigningrequests"]),
        _r(["create", "delete", "get", "patch", "update"], ["coordination.k8s.io"], ["leases"]),
        _r(["get"], ["storage.k8s.io"], ["volumeattachments"]),
        _r(["create"], [""], ["serviceaccounts/token"]),
        _r(["get", "patch", "update"], [""], ["persistentvolumeclaims/status"]),
        _r(_READ, ["storage.k8s.io"], ["csidrivers"]),
        _r(["create", "delete", "get", "patch", "update"], ["storage.k8s.io"], ["csinodes"]),
        _r(_READ, ["node.k8s.io"], ["runtimeclasses"]),
    ],
}


def cluster_roles() -> list[Object]:
    """Every bootstrap ClusterRole (fresh dicts: the caller may mutate them)."""
    roles = [
        _role("cluster-admin", [_r(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        _role("admin", None, aggregate="admin"),
        _role("edit", None, labels=_agg_label("admin"), aggregate="edit"),
        _role("view", None, labels=_agg_label("edit"), aggregate="view"),
        _role("system:aggregate-to-admin", _ADMIN_RULES, labels=_agg_label("admin")),
        _role("system:aggregate-to-edit", _EDIT_RULES, labels=_agg_label("edit")),
        _role("system:aggregate-to-view", _VIEW_RULES, labels=_agg_label("view")),
        # metrics-server's manifest (kplane serves metrics.k8s.io itself)
        _role(
            "system:aggregated-metrics-reader",
            [_r(_READ, ["metrics.k8s.io"], ["pods", "nodes"])],
            labels={**_agg_label("admin"), **_agg_label("edit"), **_agg_label("view")},
        ),
        _role(
            "system:auth-delegator",
            [
                _r(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
                _r(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
            ],
        ),
        _role(
            "system:basic-user",
            [
                _r(
                    ["create"],
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                _r(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
            ],
        ),
        _role(
            "system:discovery",
            [
                _urls(
                    ["get"],
                    [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                )
            ],
        ),
        _role(
            "system:monitoring",
            [
                _urls(
                    ["get"],
                    [
                        "/healthz",
                        "/healthz/*",
                        "/livez",
                        "/livez/*",
                        "/metrics",
                        "/metrics/slis",
                        "/readyz",
                        "/readyz/*",
                    ],
                )
            ],
        ),
        _role("system:public-info-viewer", [_urls(["get"], _HEALTH)]),
        _role(
            "system:service-account-issuer-discovery",
            [_urls(["get"], ["/.well-known/openid-configuration", "/openid/v1/jwks"])],
        ),
    ]
    roles.extend(_role(name, rules) for name, rules in _COMPONENTS.items())
    # kplane's own: a simulated kubelet reports its pods' usage where metrics-server would scrape it
    roles.append(_role(USAGE_REPORTER, [_urls(["put"], ["/kplane/v1/nodes/*"])]))
    roles.extend(_role(f"system:controller:{n}", rules) for n, rules in CONTROLLERS.items())
    return _deep_copy(roles)


def _binding(name: str, role: str, subjects: list[Object]) -> Object:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {BOOTSTRAP_LABEL[0]: BOOTSTRAP_LABEL[1]},
            "annotations": {AUTOUPDATE: "true"},
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        **({"subjects": subjects} if subjects else {}),
    }


def _group(name: str) -> Object:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}


def _user(name: str) -> Object:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


def cluster_role_bindings() -> list[Object]:
    """Every bootstrap ClusterRoleBinding (fresh dicts)."""
    out = [
        _binding("cluster-admin", "cluster-admin", [_group("system:masters")]),
        _binding("system:basic-user", "system:basic-user", [_group("system:authenticated")]),
        _binding("system:discovery", "system:discovery", [_group("system:authenticated")]),
        _binding("system:monitoring", "system:monitoring", [_group("system:monitoring")]),
        _binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            [_group("system:authenticated"), _group("system:unauthenticated")],
        ),
        _binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            [_group("system:serviceaccounts")],
        ),
        _binding("system:kube-controller-manager", "system:kube-controller-manager", [_user(KCM_USER)]),
        _binding("system:kube-scheduler", "system:kube-scheduler", [_user(SCHEDULER_USER)]),
        # upstream leaves it without subjects: the Node authorizer, not RBAC, grants kubelets their rights
        _binding("system:node", "system:node", []),
        # kplane has no Node authorizer: kubelets (the simulated ones act as system:node:<name>) get
        # the system:node role through RBAC, as every upstream cluster did before 1.8
        _binding(NODES_BINDING, "system:node", [_group(NODES_GROUP)]),
        _binding(USAGE_REPORTER, USAGE_REPORTER, [_group(NODES_GROUP)]),
    ]
    out.extend(
        _binding(
            f"system:controller:{n}",
            f"system:controller:{n}",
            [{"kind": "ServiceAccount", "name": n, "namespace": "kube-system"}],
        )
        for n in CONTROLLERS
    )
    return out


def _deep_copy(objs: list[Object]) -> list[Object]:
    import copy

    return copy.deepcopy(objs)
