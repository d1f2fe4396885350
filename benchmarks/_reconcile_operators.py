"""The two operators ``reconcile_throughput.py`` races: kplane.runtime and kopf, doing the same work.

Each reconciles ``Widget`` objects of one namespace: read the object, and if ``status.observed``
differs from ``spec.value``, write ``status.observed`` through the status subresource. Run as
``python -m benchmarks._reconcile_operators kplane|kopf KUBECONFIG NAMESPACE WORKERS``; prints
``READY`` once it is watching. A mode ending in ``+uvloop`` (``kplane+uvloop``, ``kopf+uvloop``)
runs the operator on uvloop's event loop instead of asyncio's (kopf's CLI picks uvloop when
installed, as ``kplane serve`` does; in code, both run on whatever loop the caller starts).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
from typing import Any

from kplane.client import dynamic

GROUP, VERSION, PLURAL = "bench.kplane.dev", "v1", "widgets"
WIDGETS = dynamic.Resource(GROUP, VERSION, PLURAL, "Widget", namespaced=True)

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"value": {"type": "integer"}}},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


async def run_kplane(kubeconfig: str, namespace: str, workers: int, *, traces: int = 1000) -> None:
    from kplane import runtime
    from kplane.client import Config, typed

    cfg = dataclasses.replace(Config.from_kubeconfig(kubeconfig), qps=0)
    manager = runtime.Manager(
        options=runtime.ManagerOptions(
            namespace=namespace, metrics_bind_address="0", reconcile_traces=traces
        ),
        api=typed.Client(cfg),
    )

    async def reconcile(req: runtime.Request) -> None:
        obj = await manager.client.get(WIDGETS, req.name, req.namespace)
        value = obj["spec"]["value"]
        if (obj.get("status") or {}).get("observed") != value:
            await manager.client.patch(obj, {"status": {"observed": value}}, subresource="status")

    await (
        runtime.Builder(manager)
        .for_(WIDGETS, predicates=[runtime.GenerationChanged()])
        .with_options(runtime.ControllerOptions(max_concurrent_reconciles=workers))
        .complete(reconcile)
    )

    async def ready() -> None:
        await manager.elected.wait()
        print("READY", flush=True)

    announcer = asyncio.get_running_loop().create_task(ready())
    try:
        await manager.run()
    finally:
        announcer.cancel()
        await manager.api.close()


def run_kopf(kubeconfig: str, namespace: str, workers: int, *, uvloop: bool = False) -> None:
    os.environ["KUBECONFIG"] = kubeconfig  # before kopf loads the kubernetes client, which reads it once
    import kopf

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # kplane's reconciler posts no events either
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
        if workers > 0:
            settings.batching.worker_limit = workers
        print("READY", flush=True)

    @kopf.on.create(GROUP, VERSION, PLURAL)
    async def created(spec: Any, status: Any, patch: Any, **_: Any) -> None:
        if (status or {}).get("observed") != spec["value"]:
            patch.status["observed"] = spec["value"]

    if uvloop:
        import uvloop as uvloop_mod

        with asyncio.Runner(loop_factory=uvloop_mod.new_event_loop) as runner:
            kopf.run(standalone=True, namespaces=[namespace], clusterwide=False, loop=runner.get_loop())
    else:
        kopf.run(standalone=True, namespaces=[namespace], clusterwide=False)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    mode, config_path, ns, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    mode, _, loop = mode.partition("+")
    run: Any = asyncio.run
    if loop == "uvloop":
        import uvloop

        run = uvloop.run
    if mode == "kplane":
        run(run_kplane(config_path, ns, n))
    elif mode == "kplane-untraced":  # reconcile tracing off, to measure what it costs
        run(run_kplane(config_path, ns, n, traces=0))
    else:
        run_kopf(config_path, ns, n, uvloop=loop == "uvloop")
