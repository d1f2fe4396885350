"""The built-in resource table.

One line per resource: what discovery advertises (names, short names, categories, verbs), which
subresources exist and how the registry treats it (generation tracking, what DELETE returns).
Values follow kube-apiserver 1.32.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from kplane.api.catalog import ALL_VERBS, Catalog, ResourceRecord, ScaleSpec, Scope


def _r(
    group: str,
    version: str,
    plural: str,
    kind: str,
    scope: Scope = "Namespaced",
    *,
    short: tuple[str, ...] = (),
    cats: tuple[str, ...] = (),
    status: bool = False,
    scale: bool = False,
    generation: bool = False,
    returns_object: bool = False,
    verbs: tuple[str, ...] = ALL_VERBS,
    extra: tuple[str, ...] = (),
) -> ResourceRecord:
    return ResourceRecord(
        group=group,
        version=version,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        list_kind=kind + "List",
        scope=scope,
        short_names=short,
        categories=cats,
        verbs=verbs,
        has_status=status,
        scale=ScaleSpec() if scale else None,
        storage_version=version,
        return_deleted_object=returns_object,
        tracks_generation=generation,
        extra_subresources=extra,
    )


_ALL = ("all",)
_API_EXTENSIONS = ("api-extensions",)
# Upstream's pod subresources besides status (1.32, default feature gates): connect subresources
# (attach, exec, portforward, proxy) answer errors, as there is no kubelet to connect to.
_POD_SUBRESOURCES = (
    "attach",
    "binding",
    "ephemeralcontainers",
    "eviction",
    "exec",
    "log",
    "portforward",
    "proxy",
)

BUILTIN_RECORDS: tuple[ResourceRecord, ...] = (
    # core/v1
    _r("", "v1", "bindings", "Binding", verbs=("create",)),
    _r("", "v1", "componentstatuses", "ComponentStatus", "Cluster", short=("cs",), verbs=("get", "list")),
    _r("", "v1", "configmaps", "ConfigMap", short=("cm",)),
    _r("", "v1", "endpoints", "Endpoints", short=("ep",)),
    _r("", "v1", "events", "Event", short=("ev",)),
    _r("", "v1", "limitranges", "LimitRange", short=("limits",)),
    _r(
        "",
        "v1",
        "namespaces",
        "Namespace",
        "Cluster",
        short=("ns",),
        status=True,
        returns_object=True,
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        extra=("finalize",),
    ),
    _r(
        "",
        "v1",
        "nodes",
        "Node",
        "Cluster",
        short=("no",),
        status=True,
        returns_object=True,
        extra=("proxy",),
    ),
    _r(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        short=("pvc",),
        status=True,
        returns_object=True,
    ),
    _r(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        "Cluster",
        short=("pv",),
        status=True,
        returns_object=True,
    ),
    _r(
        "",
        "v1",
        "pods",
        "Pod",
        short=("po",),
        cats=_ALL,
        status=True,
        returns_object=True,
        extra=_POD_SUBRESOURCES,
    ),
    _r("", "v1", "podtemplates", "PodTemplate"),
    _r(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        short=("rc",),
        cats=_ALL,
        status=True,
        scale=True,
        generation=True,
    ),
    _r("", "v1", "resourcequotas", "ResourceQuota", short=("quota",), status=True),
    _r("", "v1", "secrets", "Secret"),
    _r("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",), returns_object=True, extra=("token",)),
    _r(
        "",
        "v1",
        "services",
        "Service",
        short=("svc",),
        cats=_ALL,
        status=True,
        returns_object=True,
        verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
        extra=("proxy",),
    ),
    # admissionregistration.k8s.io/v1
    _r(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        "Cluster",
        cats=_API_EXTENSIONS,
        status=True,
        generation=True,
    ),
    _r(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        "Cluster",
        cats=_API_EXTENSIONS,
        generation=True,
    ),
    # apps/v1
    _r("apps", "v1", "controllerrevisions", "ControllerRevision"),
    _r("apps", "v1", "daemonsets", "DaemonSet", short=("ds",), cats=_ALL, status=True, generation=True),
    _r(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        short=("deploy",),
        cats=_ALL,
        status=True,
        scale=True,
        generation=True,
    ),
    _r(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        short=("rs",),
        cats=_ALL,
        status=True,
        scale=True,
        generation=True,
    ),
    _r(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        short=("sts",),
        cats=_ALL,
        status=True,
        scale=True,
        generation=True,
    ),
    # autoscaling: v2 is preferred and the storage version; v1 is converted (api/builtin/conversion.py)
    _r(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        short=("hpa",),
        cats=_ALL,
        status=True,
        generation=True,
    ),
    replace(
        _r(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            short=("hpa",),
            cats=_ALL,
            status=True,
            generation=True,
        ),
        storage_version="v2",
        preferred=False,
    ),
    # batch/v1
    _r("batch", "v1", "cronjobs", "CronJob", short=("cj",), cats=_ALL, status=True, generation=True),
    _r("batch", "v1", "jobs", "Job", cats=_ALL, status=True, generation=True),
    # certificates.k8s.io/v1
    _r(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        "Cluster",
        short=("csr",),
        status=True,
        extra=("approval",),
    ),
    # coordination.k8s.io/v1
    _r("coordination.k8s.io", "v1", "leases", "Lease"),
    # discovery.k8s.io/v1
    _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    # events.k8s.io/v1
    # stored as core/v1 Events (api/builtin/eventversions.py): one object, two views
    dataclasses.replace(_r("events.k8s.io", "v1", "events", "Event", short=("ev",)), storage_group=""),
    # flowcontrol.apiserver.k8s.io/v1
    _r("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", "Cluster", status=True),
    # metrics.k8s.io: metrics-server's resource metrics API, served from the simulated kubelets'
    # reports (server/endpoints/resourcemetrics.py); read-only, never stored
    _r("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", "Cluster", verbs=("get", "list")),
    _r("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", verbs=("get", "list")),
    _r(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        "Cluster",
        status=True,
    ),
    # networking.k8s.io/v1
    _r("networking.k8s.io", "v1", "ingressclasses", "IngressClass", "Cluster"),
    _r("networking.k8s.io", "v1", "ingresses", "Ingress", short=("ing",), status=True, generation=True),
    _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short=("netpol",), generation=True),
    # node.k8s.io/v1
    _r("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", "Cluster"),
    # policy/v1
    _r(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        short=("pdb",),
        status=True,
        generation=True,
    ),
    # authorization.k8s.io/v1 and authentication.k8s.io/v1: create-only reviews, never stored
    _r(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        verbs=("create",),
    ),
    _r(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        "Cluster",
        verbs=("create",),
    ),
    _r(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        "Cluster",
        verbs=("create",),
    ),
    _r(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        "Cluster",
        verbs=("create",),
    ),
    _r(
        "authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", "Cluster", verbs=("create",)
    ),
    _r("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", "Cluster", verbs=("create",)),
    # rbac.authorization.k8s.io/v1
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", "Cluster"),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", "Cluster"),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    # scheduling.k8s.io/v1
    _r("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", "Cluster", short=("pc",)),
    # storage.k8s.io/v1
    _r("storage.k8s.io", "v1", "csidrivers", "CSIDriver", "Cluster"),
    _r("storage.k8s.io", "v1", "csinodes", "CSINode", "Cluster"),
    _r("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity"),
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", "Cluster", short=("sc",)),
    _r("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", "Cluster", status=True),
    # admissionregistration.k8s.io/v1
    _r(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        "Cluster",
        cats=_API_EXTENSIONS,
        generation=True,
    ),
    _r(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        "Cluster",
        cats=_API_EXTENSIONS,
        generation=True,
    ),
    # apiextensions.k8s.io/v1
    _r(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        "Cluster",
        short=("crd", "crds"),
        cats=_API_EXTENSIONS,
        status=True,
        generation=True,
    ),
    # apiregistration.k8s.io/v1 (kube-aggregator's group; aggregation is not proxied, see README)
    _r(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        "Cluster",
        cats=_API_EXTENSIONS,
        status=True,
    ),
)

# Kinds whose singular name is not simply the lower-cased kind.
assert all(r.singular == r.kind.lower() for r in BUILTIN_RECORDS)


def builtin_catalog() -> Catalog:
    """A fresh catalog holding every built-in record."""
    return Catalog(BUILTIN_RECORDS)
