"""kplane's built-in controllers, written with ``kplane.runtime`` and reaching the server only over its
API: simulated nodes (``nodes``), the scheduler (``scheduler``), the simulated kubelet
(``kubelet``), the node lifecycle controller (``nodelifecycle``), the per-namespace ``default``
ServiceAccount and ``kube-root-ca.crt`` (``serviceaccounts``), Endpoints and EndpointSlices
(``endpoints``, ``endpointslices``), Jobs (``jobs``), CronJobs (``cronjobs``), TTL-after-finished
(``ttlafterfinished``), ReplicaSets and Deployments (``replicaset``, ``deployment``), the garbage
collector (``garbagecollector``), the namespace controller (``namespaces``), StatefulSets
(``statefulset``) and DaemonSets (``daemonset``), revisions in ``history``, the PVC/PV
protection controllers (``storageprotection``), the nodes' resource usage reports
(``resourceusage``) and the HorizontalPodAutoscaler (``hpa``). ``install`` adds them to a
manager; ``kplane serve`` runs them in its process over loopback.
"""

from __future__ import annotations

from pathlib import Path

from kplane import runtime


async def install(manager: runtime.Manager, *, nodes: int, pod_logs: Path | None) -> None:
    """Add the built-in controllers to ``manager`` (before it starts). ``nodes`` simulated nodes are
    registered (0: none, and no kubelet); ``pod_logs`` is where the kubelet writes container output
    (the server's pod log directory)."""
    from kplane.controllers import (
        cronjobs,
        daemonset,
        deployment,
        endpoints,
        endpointslices,
        garbagecollector,
        hpa,
        jobs,
        kubelet,
        namespaces,
        nodelifecycle,
        replicaset,
        resourceusage,
        scheduler,
        serviceaccounts,
        statefulset,
        storageprotection,
        ttlafterfinished,
    )
    from kplane.controllers import nodes as nodes_mod

    await serviceaccounts.ServiceAccountsController(manager).setup()
    await serviceaccounts.RootCAPublisher(manager).setup()
    await endpoints.EndpointsController(manager).setup()
    await endpointslices.EndpointSliceController(manager).setup()
    await jobs.JobController(manager).setup()
    await cronjobs.CronJobController(manager).setup()
    await ttlafterfinished.TTLAfterFinishedController(manager).setup()

    await scheduler.Scheduler(manager).setup()  # the builder adds each controller to the manager
    await replicaset.ReplicaSetController(manager).setup()
    await deployment.DeploymentController(manager).setup()
    await hpa.HorizontalPodAutoscalerController(manager).setup()
    manager.add(garbagecollector.GarbageCollector(manager))
    await namespaces.NamespaceController(manager).setup()
    await statefulset.StatefulSetController(manager).setup()
    await daemonset.DaemonSetController(manager).setup()
    await storageprotection.PVCProtectionController(manager).setup()
    await storageprotection.PVProtectionController(manager).setup()
    manager.add(await nodelifecycle.NodeLifecycle(manager).setup())
    if nodes > 0:
        simulator = nodes_mod.NodeSimulator(manager, nodes)
        await simulator.setup()
        manager.add(simulator)
        await kubelet.Kubelet(manager, simulator, pod_logs).setup()
        reporter = resourceusage.UsageReporter(manager, simulator)
        await reporter.setup()
        manager.add(reporter)
