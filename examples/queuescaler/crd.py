"""The ``QueueScaler`` custom resource: "keep Deployment D at one replica per N messages of a Redis
list, between min and max, scaling down only after a cool-down"."""

from __future__ import annotations

from typing import Any

from kplane.client import dynamic

GROUP = "queuescaler.example.kplane.dev"
VERSION = "v1"
KIND = "QueueScaler"
PLURAL = "queuescalers"

QUEUE_SCALERS = dynamic.Resource(GROUP, VERSION, PLURAL, KIND, namespaced=True)

_INT = {"type": "integer", "format": "int32"}

MANIFEST: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "queuescaler", "kind": KIND, "listKind": "QueueScalerList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Target", "type": "string", "jsonPath": ".spec.deployment"},
                    {"name": "Queue", "type": "integer", "jsonPath": ".status.queueLength"},
                    {"name": "Desired", "type": "integer", "jsonPath": ".status.desiredReplicas"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".status.currentReplicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": [
                                    "deployment",
                                    "redisURL",
                                    "listKey",
                                    "messagesPerReplica",
                                    "maxReplicas",
                                ],
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "self.minReplicas <= self.maxReplicas",
                                        "message": "minReplicas must not exceed maxReplicas",
                                    }
                                ],
                                "properties": {
                                    "deployment": {"type": "string", "minLength": 1},
                                    "redisURL": {"type": "string", "pattern": "^redis://"},
                                    "listKey": {"type": "string", "minLength": 1},
                                    "messagesPerReplica": {**_INT, "minimum": 1},
                                    "minReplicas": {**_INT, "minimum": 0, "default": 1},
                                    "maxReplicas": {**_INT, "minimum": 1},
                                    "cooldownSeconds": {**_INT, "minimum": 0, "default": 300},
                                    "pollSeconds": {**_INT, "minimum": 1, "default": 5},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "observedGeneration": {"type": "integer", "format": "int64"},
                                    "queueLength": {"type": "integer", "format": "int64"},
                                    "desiredReplicas": _INT,
                                    "currentReplicas": _INT,
                                    "lastScaleTime": {"type": "string", "format": "date-time"},
                                    "lastBusyTime": {"type": "string", "format": "date-time"},
                                    "conflictsRetried": {"type": "integer", "format": "int64"},
                                    "conditions": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["type"],
                                        "items": {
                                            "type": "object",
                                            "required": ["type", "status"],
                                            "properties": {
                                                "type": {"type": "string"},
                                                "status": {"type": "string"},
                                                "reason": {"type": "string"},
                                                "message": {"type": "string"},
                                                "lastTransitionTime": {
                                                    "type": "string",
                                                    "format": "date-time",
                                                },
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}
