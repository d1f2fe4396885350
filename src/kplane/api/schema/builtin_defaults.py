"""Upstream defaulting of built-in kinds (``SetDefaults_*`` of Kubernetes 1.32), per definition.

The OpenAPI definitions of built-in kinds carry no ``default`` values: upstream defaults in Go, one
function per type, run by generated code on every nested value of that type. ``HOOKS`` maps a
definition name to such a function; the schema compiler calls it on every object of that
definition after walking the object's fields (children are defaulted before parents, which none of
these functions depend on). A hook receives a private, freshly built dict and mutates it in place.

Sources (facts, not code): kubernetes ``pkg/apis/apps/v1/defaults.go``, ``pkg/apis/core/v1/defaults.go``,
``pkg/apis/batch/v1/defaults.go``, ``pkg/apis/discovery/v1/defaults.go``, apiextensions-apiserver's
``pkg/apis/apiextensions/v1/defaults.go``, with the feature gates of
1.32 at their defaults (``StatefulSetAutoDeletePVC`` and ``JobPodReplacementPolicy`` on,
``MaxUnavailableStatefulSet`` off). Go treats an empty string like an absent one for plain string
fields, so those are defaulted when falsy; pointer fields only when absent.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

Obj = dict[str, Any]


def _sub(obj: Obj, key: str) -> Obj | None:
    """``obj[key]`` as a dict, created empty when absent (Go's zero struct); None if not a dict."""
    value = obj.get(key)
    if value is None:
        value = obj[key] = {}
    return value if isinstance(value, dict) else None


def _str(obj: Obj, key: str, value: str) -> None:
    if not obj.get(key):
        obj[key] = value


def _dicts(value: Any) -> list[Obj]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


# --- apps/v1 -----------------------------------------------------------------------------------


def deployment(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    strategy = _sub(spec, "strategy")
    if strategy is not None:
        _str(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _sub(strategy, "rollingUpdate")
            if rolling is not None:
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def replica_set(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is not None:
        spec.setdefault("replicas", 1)


def daemon_set(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    strategy = _sub(spec, "updateStrategy")
    if strategy is not None:
        _str(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _sub(strategy, "rollingUpdate")
            if rolling is not None:
                rolling.setdefault("maxUnavailable", 1)
                rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)


def stateful_set(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    _str(spec, "podManagementPolicy", "OrderedReady")
    strategy = _sub(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            _sub(strategy, "rollingUpdate")
        rolling = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
            rolling.setdefault("partition", 0)
    retention = _sub(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _str(retention, "whenDeleted", "Retain")
        _str(retention, "whenScaled", "Retain")
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)


# --- core/v1 -----------------------------------------------------------------------------------


def pod(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    for container in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
        resources = container.get("resources")
        limits = resources.get("limits") if isinstance(resources, dict) else None
        if isinstance(resources, dict) and isinstance(limits, dict):
            requests = _sub(resources, "requests")
            if requests is not None:
                for name, quantity in limits.items():
                    requests.setdefault(name, quantity)
    spec.setdefault("enableServiceLinks", True)
    if spec.get("hostNetwork") is True:
        for container in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers")):
            for port in _dicts(container.get("ports")):
                if "hostPort" not in port and "containerPort" in port:
                    port["hostPort"] = port["containerPort"]


def pod_spec(obj: Obj) -> None:
    _str(obj, "dnsPolicy", "ClusterFirst")
    _str(obj, "restartPolicy", "Always")
    if "securityContext" not in obj:
        obj["securityContext"] = {}
    obj.setdefault("terminationGracePeriodSeconds", 30)
    _str(obj, "schedulerName", "default-scheduler")


def image_tag(image: str) -> str:
    """The tag of an image reference; ``latest`` when it has neither tag nor digest, ``""`` with a
    digest only (the registry part may contain a ``host:port``, which is not a tag)."""
    name, at, _digest = image.partition("@")
    last = name.rpartition("/")[2]
    if ":" in last:
        return last.rpartition(":")[2]
    return "" if at else "latest"


def container(obj: Obj) -> None:
    if not obj.get("imagePullPolicy"):
        image = obj.get("image")
        tag = image_tag(image) if isinstance(image, str) else "latest"
        obj["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    _str(obj, "terminationMessagePath", "/dev/termination-log")
    _str(obj, "terminationMessagePolicy", "File")


def protocol_tcp(obj: Obj) -> None:
    _str(obj, "protocol", "TCP")


def probe(obj: Obj) -> None:
    obj.setdefault("timeoutSeconds", 1)
    obj.setdefault("periodSeconds", 10)
    obj.setdefault("successThreshold", 1)
    obj.setdefault("failureThreshold", 3)


def http_get_action(obj: Obj) -> None:
    _str(obj, "path", "/")
    _str(obj, "scheme", "HTTP")


def object_field_selector(obj: Obj) -> None:
    _str(obj, "apiVersion", "v1")


_VOLUME_SOURCE_EXCLUDED = frozenset({"name"})


def volume(obj: Obj) -> None:
    if all(k in _VOLUME_SOURCE_EXCLUDED for k in obj):
        obj["emptyDir"] = {}


def default_mode(obj: Obj) -> None:
    obj.setdefault("defaultMode", 0o644)


def service(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    _str(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.get("sessionAffinityConfig")
        client_ip = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client_ip, dict) or "timeoutSeconds" not in client_ip:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    _str(spec, "type", "ClusterIP")
    for port in _dicts(spec.get("ports")):
        _str(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, "") and "port" in port:
            port["targetPort"] = port["port"]
    kind = spec["type"]
    externally_accessible = kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )
    if externally_accessible:
        _str(spec, "externalTrafficPolicy", "Cluster")
    if "internalTrafficPolicy" not in spec and kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec["internalTrafficPolicy"] = "Cluster"
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)


def secret(obj: Obj) -> None:
    _str(obj, "type", "Opaque")


def namespace(obj: Obj) -> None:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if isinstance(meta, dict) and isinstance(name, str) and name:
        labels = _sub(meta, "labels")
        if labels is not None:
            labels["kubernetes.io/metadata.name"] = name
    status = _sub(obj, "status")
    if status is not None:
        _str(status, "phase", "Active")


def replication_controller(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    template = spec.get("template")
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if isinstance(labels, dict) and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        own = _sub(obj, "metadata")
        if own is not None and not own.get("labels"):
            own["labels"] = dict(labels)
    spec.setdefault("replicas", 1)


def persistent_volume_claim(obj: Obj) -> None:
    status = _sub(obj, "status")
    if status is not None:
        _str(status, "phase", "Pending")


def persistent_volume_claim_spec(obj: Obj) -> None:
    _str(obj, "volumeMode", "Filesystem")


def discovery_endpoint_port(obj: Obj) -> None:
    obj.setdefault("name", "")
    _str(obj, "protocol", "TCP")


# --- batch/v1 ----------------------------------------------------------------------------------


def job(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    if "completions" not in spec and "parallelism" not in spec:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if "backoffLimit" not in spec:
        spec["backoffLimit"] = 2**31 - 1 if "backoffLimitPerIndex" in spec else 6
    template = spec.get("template")
    template_meta = template.get("metadata") if isinstance(template, dict) else None
    template_labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
    meta = _sub(obj, "metadata")
    if isinstance(template_labels, dict) and meta is not None and not meta.get("labels"):
        meta["labels"] = dict(template_labels)
    _str(spec, "completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in _dicts(policy.get("rules")):
            for pattern in _dicts(rule.get("onPodConditions")):
                _str(pattern, "status", "True")
    if "podReplacementPolicy" not in spec:
        spec["podReplacementPolicy"] = "Failed" if isinstance(policy, dict) else "TerminatingOrFailed"


def cron_job(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    _str(spec, "concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)


# --- autoscaling (pkg/apis/autoscaling/v1 and v2 defaults.go) ---------------------------------------


def hpa_v1(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is not None:
        spec.setdefault("minReplicas", 1)


def _scaling_rules(rules: Any, defaults: Obj) -> Obj:
    """Upstream's copyHPAScalingRules: the defaults, with every field the user set kept."""
    out = copy.deepcopy(defaults)
    if isinstance(rules, dict):
        out.update({k: v for k, v in rules.items() if v is not None})
    return out


_SCALE_UP = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
# stabilizationWindowSeconds stays unset: the controller's command line decides it
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def hpa_v2(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec is None:
        return
    spec.setdefault("minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
            }
        ]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), _SCALE_DOWN)


# --- storage.k8s.io/v1 and flowcontrol.apiserver.k8s.io/v1 (their defaults.go) ----------------------


def csi_driver_spec(obj: Obj) -> None:
    for key, value in (
        ("attachRequired", True),
        ("podInfoOnMount", False),
        ("storageCapacity", False),
        ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
        ("requiresRepublish", False),
        ("seLinuxMount", False),  # SELinuxMountReadWriteOncePod is on by default in 1.32
    ):
        if obj.get(key) is None:
            obj[key] = value
    if not obj.get("volumeLifecycleModes"):
        obj["volumeLifecycleModes"] = ["Persistent"]


def flow_schema_spec(obj: Obj) -> None:
    if not obj.get("matchingPrecedence"):
        obj["matchingPrecedence"] = 1000


def _shares(default: int) -> Callable[[Obj], None]:
    def fill(obj: Obj) -> None:
        if obj.get("nominalConcurrencyShares") is None:
            obj["nominalConcurrencyShares"] = default
        if obj.get("lendablePercent") is None:
            obj["lendablePercent"] = 0

    return fill


def queuing_configuration(obj: Obj) -> None:
    for key, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
        if not obj.get(key):
            obj[key] = value


# --- apiextensions.k8s.io/v1 ---------------------------------------------------------------------


def crd_spec(obj: Obj) -> None:
    names = _sub(obj, "names")
    if names is not None:
        kind = names.get("kind")
        if not names.get("singular") and isinstance(kind, str):
            names["singular"] = kind.lower()
        if not names.get("listKind") and isinstance(kind, str) and kind:
            names["listKind"] = kind + "List"
    if obj.get("conversion") is None:
        obj["conversion"] = {"strategy": "None"}


def service_reference_port(obj: Obj) -> None:
    obj.setdefault("port", 443)


def webhook(obj: Obj) -> None:
    """``SetDefaults_ValidatingWebhook`` (admissionregistration/v1)."""
    obj.setdefault("failurePolicy", "Fail")
    obj.setdefault("matchPolicy", "Equivalent")
    obj.setdefault("namespaceSelector", {})
    obj.setdefault("objectSelector", {})
    obj.setdefault("timeoutSeconds", 10)


def mutating_webhook(obj: Obj) -> None:
    """``SetDefaults_MutatingWebhook``: the validating defaults and ``reinvocationPolicy: Never``."""
    webhook(obj)
    obj.setdefault("reinvocationPolicy", "Never")


def rule_scope(obj: Obj) -> None:
    """``SetDefaults_Rule``: a rule without scope covers every scope."""
    obj.setdefault("scope", "*")


def policy_spec(obj: Obj) -> None:
    obj.setdefault("failurePolicy", "Fail")


def match_resources(obj: Obj) -> None:
    obj.setdefault("matchPolicy", "Equivalent")
    obj.setdefault("namespaceSelector", {})
    obj.setdefault("objectSelector", {})


_CORE = "io.k8s.api.core.v1."
_APIEXTENSIONS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
_FLOWCONTROL = "io.k8s.api.flowcontrol.v1."
_ADMISSION = "io.k8s.api.admissionregistration.v1."

HOOKS: Mapping[str, Callable[[Obj], None]] = {
    "io.k8s.api.apps.v1.Deployment": deployment,
    "io.k8s.api.apps.v1.ReplicaSet": replica_set,
    "io.k8s.api.apps.v1.DaemonSet": daemon_set,
    "io.k8s.api.apps.v1.StatefulSet": stateful_set,
    _CORE + "Pod": pod,
    _CORE + "PodSpec": pod_spec,
    _CORE + "Container": container,
    _CORE + "EphemeralContainer": container,
    _CORE + "ContainerPort": protocol_tcp,
    _CORE + "EndpointPort": protocol_tcp,
    _CORE + "Probe": probe,
    _CORE + "HTTPGetAction": http_get_action,
    _CORE + "ObjectFieldSelector": object_field_selector,
    _CORE + "Volume": volume,
    _CORE + "ConfigMapVolumeSource": default_mode,
    _CORE + "SecretVolumeSource": default_mode,
    _CORE + "ProjectedVolumeSource": default_mode,
    _CORE + "DownwardAPIVolumeSource": default_mode,
    _CORE + "Service": service,
    _CORE + "Secret": secret,
    _CORE + "Namespace": namespace,
    _CORE + "ReplicationController": replication_controller,
    _CORE + "PersistentVolumeClaim": persistent_volume_claim,
    _CORE + "PersistentVolumeClaimSpec": persistent_volume_claim_spec,
    "io.k8s.api.discovery.v1.EndpointPort": discovery_endpoint_port,
    "io.k8s.api.batch.v1.Job": job,
    "io.k8s.api.batch.v1.CronJob": cron_job,
    "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler": hpa_v1,
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler": hpa_v2,
    "io.k8s.api.storage.v1.CSIDriverSpec": csi_driver_spec,
    _FLOWCONTROL + "FlowSchemaSpec": flow_schema_spec,
    _FLOWCONTROL + "ExemptPriorityLevelConfiguration": _shares(0),
    _FLOWCONTROL + "LimitedPriorityLevelConfiguration": _shares(30),
    _FLOWCONTROL + "QueuingConfiguration": queuing_configuration,
    "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.ServiceReference": service_reference_port,
    _APIEXTENSIONS + "CustomResourceDefinitionSpec": crd_spec,
    _APIEXTENSIONS + "ServiceReference": service_reference_port,
    _ADMISSION + "ValidatingWebhook": webhook,
    _ADMISSION + "MutatingWebhook": mutating_webhook,
    _ADMISSION + "RuleWithOperations": rule_scope,
    _ADMISSION + "ServiceReference": service_reference_port,
    _ADMISSION + "NamedRuleWithOperations": rule_scope,
    _ADMISSION + "ValidatingAdmissionPolicySpec": policy_spec,
    _ADMISSION + "MatchResources": match_resources,
}
