"""Decoding a Deployment from JSON: kplane's msgspec models against lightkube and the official client.

    python benchmarks/decode_bench.py [--rounds 2000]

Each library decodes the same realistic Deployment (server-filled defaults, managedFields, status)
from the JSON bytes an API server sends: kplane with ``msgspec.json.decode(data, type=Deployment)``,
lightkube with ``Deployment.from_dict(orjson.loads(data))`` (its client decodes JSON first; orjson
is the fastest way to do that, so this is generous to it), the official ``kubernetes`` client with
``ApiClient().deserialize`` (given the body text, or a stand-in response object before 35). Time is the
best of five runs of ``--rounds`` decodes, in µs per object; size is the memory held per decoded
object (tracemalloc, 200 objects kept alive). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

from kplane.client.models import apps_v1


def deployment(i: int = 0) -> bytes:
    """One Deployment as a server returns it after creation and a rollout."""
    ts = "2026-01-01T00:00:00Z"
    labels = {"app": f"web-{i}", "tier": "frontend"}
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"web-{i}",
            "namespace": "default",
            "uid": "6f1c2b8e-2d1b-4a39-9a5e-3f8a8f0b1c2d",
            "resourceVersion": "123456",
            "generation": 3,
            "creationTimestamp": ts,
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": "2"},
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": ts,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {}}}}
                    },
                },
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": ts,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:replicas": {}, "f:conditions": {}}},
                    "subresource": "status",
                },
            ],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "registry.example/web:1.2.3",
                            "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
                            "env": [{"name": "MODE", "value": "prod"}, {"name": "LOG", "value": "info"}],
                            "resources": {
                                "limits": {"cpu": "500m", "memory": "256Mi"},
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                            },
                            "readinessProbe": {
                                "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                                "periodSeconds": 10,
                                "timeoutSeconds": 1,
                                "successThreshold": 1,
                                "failureThreshold": 3,
                            },
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "IfNotPresent",
                        }
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler",
                },
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
        "status": {
            "observedGeneration": 3,
            "replicas": 3,
            "updatedReplicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "lastUpdateTime": ts,
                    "lastTransitionTime": ts,
                    "reason": "MinimumReplicasAvailable",
                    "message": "Deployment has minimum availability.",
                },
                {
                    "type": "Progressing",
                    "status": "True",
                    "lastUpdateTime": ts,
                    "lastTransitionTime": ts,
                    "reason": "NewReplicaSetAvailable",
                    "message": f'ReplicaSet "web-{i}-5d8f7c9b6d" has successfully progressed.',
                },
            ],
        },
    }
    return orjson.dumps(obj)


def decoders() -> dict[str, Callable[[bytes], Any]]:
    from kubernetes.client import ApiClient
    from lightkube.resources.apps_v1 import Deployment as LKDeployment

    api = ApiClient()

    class FakeResponse:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def getheader(self, name: str, default: str | None = None) -> str | None:
            return "application/json" if name.lower() == "content-type" else default

    decoder = msgspec.json.Decoder(apps_v1.Deployment)
    if "content_type" in inspect.signature(api.deserialize).parameters:  # kubernetes >= 35 takes the text.

        def official(data: bytes) -> Any:
            return api.deserialize(data.decode(), "V1Deployment", "application/json")
    else:

        def official(data: bytes) -> Any:
            return api.deserialize(FakeResponse(data), "V1Deployment")

    return {
        "kplane": decoder.decode,
        "lightkube": lambda data: LKDeployment.from_dict(orjson.loads(data)),
        "kubernetes": official,
    }


def time_us(fn: Callable[[bytes], Any], data: bytes, rounds: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            fn(data)
        best = min(best, time.perf_counter() - start)
    return best / rounds * 1e6


def bytes_per_object(fn: Callable[[bytes], Any], count: int = 200) -> float:
    payloads = [deployment(i) for i in range(count)]
    fn(payloads[0])  # Warm caches (type resolution, class attributes) outside the measurement.
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [fn(p) for p in payloads]
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return (after - before) / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args(argv)
    data = deployment()
    results: dict[str, Any] = {"benchmark": "decode_deployment", "json_bytes": len(data)}
    fns = decoders()
    for name, fn in fns.items():
        rounds = args.rounds if name != "kubernetes" else max(50, args.rounds // 20)
        results[f"{name}_us"] = round(time_us(fn, data, rounds), 2)
        results[f"{name}_bytes"] = round(bytes_per_object(fn))
    results["speedup_vs_kubernetes"] = round(results["kubernetes_us"] / results["kplane_us"], 1)
    results["speedup_vs_lightkube"] = round(results["lightkube_us"] / results["kplane_us"], 1)
    results["size_ratio_vs_lightkube"] = round(results["kplane_bytes"] / results["lightkube_bytes"], 2)
    json.dump(results, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
