"""Realistic objects, in the canonical JSON form ``decode`` produces, for round-trip tests.

Canonical means: no zero-valued non-pointer scalars, no empty lists or maps, times in whole
seconds (``Time``) or microseconds (``MicroTime``). Pointer fields set to zero are deliberate.
"""

from __future__ import annotations

from typing import Any

_META: dict[str, Any] = {
    "name": "web-0",
    "namespace": "prod",
    "uid": "0b0b6d6f-3c3a-4a4b-9a0e-5d6f7a8b9c0d",
    "resourceVersion": "12345",
    "generation": 3,
    "creationTimestamp": "2026-01-02T03:04:05Z",
    "deletionTimestamp": "2026-01-02T03:05:05Z",
    "deletionGracePeriodSeconds": 0,
    "labels": {"app": "web", "tier": ""},
    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"a": 1}\n'},
    "ownerReferences": [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web-5d4f",
            "uid": "11111111-2222-3333-4444-555555555555",
            "controller": True,
            "blockOwnerDeletion": False,
        }
    ],
    "finalizers": ["example.com/cleanup"],
    "managedFields": [
        {
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-01-02T03:04:05Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
        }
    ],
}

_POD_SPEC: dict[str, Any] = {
    "volumes": [
        {"name": "cfg", "configMap": {"name": "web-config", "defaultMode": 420, "optional": False}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        {
            "name": "token",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 600, "path": "t"}},
                    {
                        "downwardAPI": {
                            "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
                        }
                    },
                    {"secret": {"name": "s", "items": [{"key": "k", "path": "p", "mode": 256}]}},
                ]
            },
        },
    ],
    "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
    "containers": [
        {
            "name": "web",
            "image": "nginx:1.27",
            "args": ["-g", "daemon off;"],
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [
                {"name": "PLAIN", "value": "1"},
                {"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "web-config", "key": "k"}}},
                {
                    "name": "POD_IP",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
                },
                {
                    "name": "MEM",
                    "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
                },
            ],
            "envFrom": [{"prefix": "S_", "secretRef": {"name": "env-secret", "optional": True}}],
            "resources": {
                "limits": {"cpu": "500m", "memory": "256Mi"},
                "requests": {"cpu": "100m", "memory": "128Mi", "ephemeral-storage": "1Gi"},
            },
            "volumeMounts": [{"name": "cfg", "mountPath": "/etc/web", "readOnly": True}],
            "livenessProbe": {
                "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                "initialDelaySeconds": 5,
                "periodSeconds": 10,
                "terminationGracePeriodSeconds": 0,
            },
            "readinessProbe": {"tcpSocket": {"port": 8080}, "failureThreshold": 3},
            "startupProbe": {"exec": {"command": ["cat", "/ready"]}},
            "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
            "imagePullPolicy": "IfNotPresent",
            "securityContext": {
                "capabilities": {"drop": ["ALL"]},
                "privileged": False,
                "runAsUser": 0,
                "runAsNonRoot": False,
                "readOnlyRootFilesystem": True,
                "allowPrivilegeEscalation": False,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
        }
    ],
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 0,
    "activeDeadlineSeconds": 600,
    "dnsPolicy": "ClusterFirst",
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "serviceAccountName": "web",
    "automountServiceAccountToken": False,
    "hostNetwork": True,
    "securityContext": {"runAsGroup": -1, "fsGroup": 2000, "supplementalGroups": [1, 2, 3]},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                ]
            }
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        },
    },
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
    "priority": 0,
    "enableServiceLinks": False,
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        }
    ],
}

_TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "web"}}, "spec": _POD_SPEC}

SAMPLES: dict[str, dict[str, Any]] = {
    "pod": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _META,
        "spec": _POD_SPEC,
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:06Z"}],
            "podIP": "10.0.0.7",
            "startTime": "2026-01-02T03:04:05Z",
        },
    },
    "deployment": {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "creationTimestamp": None},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": _TEMPLATE,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "paused": True,
        },
        "status": {},
    },
    "statefulset": {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "db"}},
            "template": _TEMPLATE,
            "serviceName": "db",
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "10Gi"}},
                        "storageClassName": "",
                    },
                }
            ],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
        },
    },
    "cronjob": {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {
            "schedule": "0 3 * * *",
            "timeZone": "Etc/UTC",
            "suspend": False,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 0,
                    "completions": 1,
                    "ttlSecondsAfterFinished": 0,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                    "podFailurePolicy": {
                        "rules": [
                            {
                                "action": "Ignore",
                                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                            },
                            {
                                "action": "FailJob",
                                "onExitCodes": {"operator": "In", "values": [1, 2, -3]},
                            },
                        ]
                    },
                }
            },
        },
    },
    "lease": {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "controller", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "node-a_1234",
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-01-02T03:04:05.123456Z",
            "renewTime": "2026-01-02T03:04:20.000001Z",
            "leaseTransitions": 0,
        },
    },
    "core_event": {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.17a", "namespace": "prod"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "prod",
            "name": "web-0",
            "fieldPath": "spec.containers{web}",
        },
        "reason": "Pulled",
        "message": 'Container image "nginx:1.27" already present on machine',
        "source": {"component": "kubelet", "host": "node-a"},
        "firstTimestamp": "2026-01-02T03:04:05Z",
        "lastTimestamp": "2026-01-02T03:04:09Z",
        "count": 2,
        "type": "Normal",
        "eventTime": None,
        "reportingComponent": "kubelet",
    },
    "events_v1_event": {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.17b", "namespace": "prod"},
        "eventTime": "2026-01-02T03:04:05.000000Z",
        "series": {"count": 3, "lastObservedTime": "2026-01-02T03:04:15.500000Z"},
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Reconcile",
        "reason": "Synced",
        "regarding": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
        "note": "ok",
        "type": "Normal",
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    },
    "eviction": {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-0", "namespace": "prod"},
        "deleteOptions": {
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "0b0b6d6f-3c3a-4a4b-9a0e-5d6f7a8b9c0d", "resourceVersion": "7"},
            "propagationPolicy": "Foreground",
            "dryRun": ["All"],
        },
    },
    "delete_options": {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 30,
        "orphanDependents": False,
    },
    "secret": {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"bin": "/wA=", "empty": "", "k": "dg=="},
        "type": "Opaque",
        "immutable": False,
    },
    "configmap": {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"a": "b", "unicode": "h\u00e9llo \u2603"},
        "binaryData": {"blob": "AAEC"},
        "immutable": True,
    },
    "service": {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {
            "ports": [
                {"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http"},
                {"name": "metrics", "port": 9090, "targetPort": 0, "nodePort": 30090},
            ],
            "selector": {"app": "web"},
            "type": "NodePort",
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
            "ipFamilies": ["IPv4", "IPv6"],
            "ipFamilyPolicy": "PreferDualStack",
            "allocateLoadBalancerNodePorts": False,
        },
    },
    "resourcequota": {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {
            "hard": {"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi"},
            "scopeSelector": {
                "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]
            },
        },
    },
    "clusterrole": {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "agg"},
        "aggregationRule": {
            "clusterRoleSelectors": [
                {"matchExpressions": [{"key": "rbac.example.com/agg", "operator": "In", "values": ["true"]}]}
            ]
        },
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/healthz/*"]}],
    },
    "rolebinding": {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "rb", "namespace": "prod"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "web", "namespace": "prod"},
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
        ],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
    },
    "priorityclass": {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": -5,
        "globalDefault": True,
        "description": "high",
        "preemptionPolicy": "Never",
    },
    "subjectaccessreview": {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "metadata": {},
        "spec": {
            "resourceAttributes": {
                "verb": "list",
                "group": "apps",
                "resource": "deployments",
                "fieldSelector": {"rawSelector": "metadata.name=x"},
            },
            "user": "alice",
            "groups": ["devs"],
            "extra": {"scopes": ["a", "b"], "empty": []},
            "uid": "42",
        },
    },
    "tokenrequest": {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"name": "sa"},
        "spec": {
            "audiences": ["https://kubernetes.default.svc"],
            "expirationSeconds": 3600,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u-1"},
        },
        "status": {"token": "abc", "expirationTimestamp": "2026-01-02T04:04:05Z"},
    },
    "controllerrevision": {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "web-1"},
        "data": {"spec": {"template": {"$patch": "replace"}}, "list": [1, 2.5, None, True]},
        "revision": 1,
    },
    "scale": {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web"},
        "spec": {"replicas": 5},
        "status": {"replicas": 2, "selector": "app=web"},
    },
}
