"""Cost of pruning + defaulting + validating a typical Deployment; prints one JSON line.

``builtin_validation_*_us`` is the hand-written part that follows (``kplane.api.validation``: upstream's
rules a schema cannot express) for the same Deployment and for its pod template as a Pod.

The budget (ARCHITECTURE.md §5) is 100 µs per object. The Deployment has one container with ports,
env (one ``valueFrom``), resources and two probes. ``copy_json_us`` (a plain deep copy of the same
object) is printed as a yardstick for how loaded the machine was during the run.

    python benchmarks/schema_bench.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import time
import timeit
from typing import Any

from kplane.api import validation
from kplane.api.schema import compile as compiling
from kplane.api.schema import containers

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx:1.27",
                        "ports": [{"containerPort": 80, "name": "http"}],
                        "env": [
                            {"name": "MODE", "value": "prod"},
                            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        ],
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "128Mi"},
                            "limits": {"cpu": "500m", "memory": "256Mi"},
                        },
                        "livenessProbe": {
                            "httpGet": {"path": "/healthz", "port": 80},
                            "initialDelaySeconds": 5,
                        },
                        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}},
                    }
                ]
            },
        },
    },
}


def best_us(fn: Any, rounds: int) -> float:
    """The best of five runs of ``rounds`` calls, per call, in µs (the least disturbed run)."""
    return min(timeit.repeat(fn, number=rounds, repeat=5)) / rounds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    start = time.perf_counter()
    compiled = compiling.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    compile_ms = (time.perf_counter() - start) * 1e3
    result = compiled.process(DEPLOYMENT)
    assert not result.errors and not result.unknown_fields, result
    old = compiled.process(DEPLOYMENT).obj
    pod = {"metadata": {"name": "web"}, "spec": old["spec"]["template"]["spec"]}
    assert not validation.validate("apps", "Deployment", old, None)
    assert not validation.validate("", "Pod", pod, None)
    print(
        json.dumps(
            {
                "bench": "schema",
                "compile_deployment_ms": round(compile_ms, 1),
                "process_deployment_us": round(best_us(lambda: compiled.process(DEPLOYMENT), args.rounds), 1),
                "process_deployment_update_us": round(
                    best_us(lambda: compiled.process(DEPLOYMENT, old=old), args.rounds), 1
                ),
                "builtin_validation_deployment_us": round(
                    best_us(lambda: validation.validate("apps", "Deployment", old, None), args.rounds), 1
                ),
                "builtin_validation_pod_us": round(
                    best_us(lambda: validation.validate("", "Pod", pod, None), args.rounds), 1
                ),
                "copy_json_us": round(best_us(lambda: containers.copy_json(DEPLOYMENT), args.rounds), 1),
                "budget_us": 100,
            }
        )
    )


if __name__ == "__main__":
    main()
