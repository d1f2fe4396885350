"""The ``system:controller:*`` ClusterRoles of a 1.32 kube-apiserver for the controllers kplane runs.

Upstream's ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go`` (as of 1.32, with
1.32's default feature gates: ``StatefulSetAutoDeletePVC`` on): one role per controller, each bound
by a ClusterRoleBinding of the same name to the ServiceAccount ``kube-system/<controller>``, which is
the identity ``kplane controllers`` gives each controller (``--use-service-account-credentials``).
Only controllers kplane runs (or the server does for now) are listed; the verbs are upstream's, and
kplane's controllers use only what these grant (status is written with ``update``, not ``patch``,
where upstream's role says so). The ``events`` rule is upstream's ``eventsRule``.
"""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]

_APPS = ["apps", "extensions"]
_READ = ["get", "list", "watch"]


def _r(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> Object:
    # upstream's rule builder keeps each list as a sorted set
    rule: Object = {"apiGroups": sorted(groups), "resources": sorted(resources), "verbs": sorted(verbs)}
    if names:
        rule["resourceNames"] = names
    return rule


EVENTS = _r(["create", "update", "patch"], ["", "events.k8s.io"], ["events"])

CONTROLLERS: dict[str, list[Object]] = {
    "clusterrole-aggregation-controller": [
        _r(
            ["escalate", "get", "list", "watch", "update", "patch"],
            ["rbac.authorization.k8s.io"],
            ["clusterroles"],
        )
    ],
    "cronjob-controller": [
        _r(["get", "list", "watch", "update"], ["batch"], ["cronjobs"]),
        _r(["get", "list", "watch", "create", "update", "delete", "patch"], ["batch"], ["jobs"]),
        _r(["update"], ["batch"], ["cronjobs/status"]),
        _r(["update"], ["batch"], ["cronjobs/finalizers"]),
        _r(["list", "delete"], [""], ["pods"]),
        EVENTS,
    ],
    "daemon-set-controller": [
        _r(_READ, ["extensions", "apps"], ["daemonsets"]),
        _r(["update"], ["extensions", "apps"], ["daemonsets/status"]),
        _r(["update"], ["extensions", "apps"], ["daemonsets/finalizers"]),
        _r(["list", "watch"], [""], ["nodes"]),
        _r(["list", "watch", "create", "delete", "patch"], [""], ["pods"]),
        _r(["create"], [""], ["pods/binding"]),
        _r(
            ["get", "list", "watch", "create", "delete", "update", "patch"], ["apps"], ["controllerrevisions"]
        ),
        EVENTS,
    ],
    "deployment-controller": [
        _r(["get", "list", "watch", "update"], ["extensions", "apps"], ["deployments"]),
        _r(["update"], ["extensions", "apps"], ["deployments/status"]),
        _r(["update"], ["extensions", "apps"], ["deployments/finalizers"]),
        _r(["get", "list", "watch", "create", "update", "patch", "delete"], _APPS, ["replicasets"]),
        _r(["get", "list", "watch", "update"], [""], ["pods"]),
        EVENTS,
    ],
    "endpoint-controller": [
        _r(_READ, [""], ["services", "pods"]),
        _r(["get", "list", "create", "update", "delete"], [""], ["endpoints"]),
        _r(["create"], [""], ["endpoints/restricted"]),
        EVENTS,
    ],
    "endpointslice-controller": [
        _r(_READ, [""], ["services", "pods", "nodes"]),
        _r(["update"], [""], ["services/finalizers"]),
        _r(["get", "list", "create", "update", "delete"], ["discovery.k8s.io"], ["endpointslices"]),
        EVENTS,
    ],
    "generic-garbage-collector": [
        _r(["get", "list", "watch", "patch", "update", "delete"], ["*"], ["*"]),
        EVENTS,
    ],
    "horizontal-pod-autoscaler": [
        _r(_READ, ["autoscaling"], ["horizontalpodautoscalers"]),
        _r(["update"], ["autoscaling"], ["horizontalpodautoscalers/status"]),
        _r(["get", "update"], ["*"], ["*/scale"]),
        _r(["list"], [""], ["pods"]),
        _r(["list"], ["metrics.k8s.io"], ["pods"]),
        _r(["get", "list"], ["custom.metrics.k8s.io"], ["*"]),
        _r(["get", "list"], ["external.metrics.k8s.io"], ["*"]),
        EVENTS,
    ],
    "job-controller": [
        _r(["get", "list", "watch", "update", "patch"], ["batch"], ["jobs"]),
        _r(["update"], ["batch"], ["jobs/status"]),
        _r(["update"], ["batch"], ["jobs/finalizers"]),
        _r(["list", "watch", "create", "delete", "patch"], [""], ["pods"]),
        EVENTS,
    ],
    "namespace-controller": [
        _r(["get", "list", "watch", "delete"], [""], ["namespaces"]),
        _r(["update"], [""], ["namespaces/finalize", "namespaces/status"]),
        _r(["get", "list", "delete", "deletecollection"], ["*"], ["*"]),
    ],
    "node-controller": [
        _r(["get", "list", "update", "delete", "patch"], [""], ["nodes"]),
        _r(["patch", "update"], [""], ["nodes/status"]),
        _r(["patch", "update"], [""], ["pods/status"]),
        _r(["list", "get", "delete"], [""], ["pods"]),
        EVENTS,
    ],
    "pv-protection-controller": [
        _r(["get", "list", "watch", "update"], [""], ["persistentvolumes"]),
        EVENTS,
    ],
    "pvc-protection-controller": [
        _r(["get", "list", "watch", "update"], [""], ["persistentvolumeclaims"]),
        _r(["list", "watch", "get"], [""], ["pods"]),
        EVENTS,
    ],
    "replicaset-controller": [
        _r(["get", "list", "watch", "update"], _APPS, ["replicasets"]),
        _r(["update"], _APPS, ["replicasets/status"]),
        _r(["update"], _APPS, ["replicasets/finalizers"]),
        _r(["list", "watch", "patch", "create", "delete"], [""], ["pods"]),
        EVENTS,
    ],
    "resourcequota-controller": [
        _r(["list", "watch"], ["*"], ["*"]),
        _r(["update"], [""], ["resourcequotas/status"]),
        EVENTS,
    ],
    "root-ca-cert-publisher": [
        _r(["create", "update"], [""], ["configmaps"]),
        EVENTS,
    ],
    "service-account-controller": [
        _r(["create"], [""], ["serviceaccounts"]),
        EVENTS,
    ],
    "statefulset-controller": [
        _r(["list", "watch"], [""], ["pods"]),
        _r(_READ, ["apps"], ["statefulsets"]),
        _r(["update"], ["apps"], ["statefulsets/status"]),
        _r(["update"], ["apps"], ["statefulsets/finalizers"]),
        _r(["get", "create", "delete", "update", "patch"], [""], ["pods"]),
        _r(
            ["get", "create", "delete", "update", "patch", "list", "watch"], ["apps"], ["controllerrevisions"]
        ),
        _r(["get", "create"], [""], ["persistentvolumeclaims"]),
        EVENTS,
        # StatefulSetAutoDeletePVC (on by default, GA in 1.32)
        _r(["update", "delete"], [""], ["persistentvolumeclaims"]),
    ],
    "ttl-after-finished-controller": [
        _r(["get", "list", "watch", "delete"], ["batch"], ["jobs"]),
        EVENTS,
    ],
}
"""Controller name (the ServiceAccount's, the role's after ``system:controller:``) → its rules."""
