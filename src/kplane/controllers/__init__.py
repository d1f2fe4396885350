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

from collections.abc import Awaitable, Callable
from pathlib import Path

from kplane import runtime
from kplane.controllers import nodes as nodes_mod

Identity = Callable[[str], Awaitable[runtime.Manager]]
"""Gives a controller its identity: the manager (a ``Manager.with_api`` view) through which the
controller named by its upstream ServiceAccount (``deployment-controller``...) or ``SCHEDULER``
makes its requests."""

SCHEDULER = "kube-scheduler"
"""The scheduler's name for ``Identity`` (upstream runs it as the user ``system:kube-scheduler``)."""


async def _same(manager: runtime.Manager) -> runtime.Manager:
    return manager


async def install(
    manager: runtime.Manager,
    *,
    nodes: int,
    pod_logs: Path | None,
    identity: Identity | None = None,
    node_api: nodes_mod.NodeAPI | None = None,
) -> None:
    """Add the built-in controllers to ``manager`` (before it starts). ``nodes`` simulated nodes are
    registered (0: none, and no kubelet); ``pod_logs`` is where the kubelet writes container output
    (the server's pod log directory). ``identity`` gives each controller the manager it acts
    through (default: ``manager`` itself, one identity for all); ``node_api`` the client a
    simulated node and its kubelet use (default: ``manager.api``)."""
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

    def as_(name: str) -> Awaitable[runtime.Manager]:
        return identity(name) if identity is not None else _same(manager)

    # the names are upstream's ServiceAccounts (and roles system:controller:<name>) of each controller
    await serviceaccounts.ServiceAccountsController(await as_("service-account-controller")).setup()
    await serviceaccounts.RootCAPublisher(await as_("root-ca-cert-publisher")).setup()
    await endpoints.EndpointsController(await as_("endpoint-controller")).setup()
    await endpointslices.EndpointSliceController(await as_("endpointslice-controller")).setup()
    await jobs.JobController(await as_("job-controller")).setup()
    await cronjobs.CronJobController(await as_("cronjob-controller")).setup()
    await ttlafterfinished.TTLAfterFinishedController(await as_("ttl-after-finished-controller")).setup()

    await scheduler.Scheduler(await as_(SCHEDULER)).setup()  # the builder adds each controller to the manager
    await replicaset.ReplicaSetController(await as_("replicaset-controller")).setup()
    await deployment.DeploymentController(await as_("deployment-controller")).setup()
    await hpa.HorizontalPodAutoscalerController(await as_("horizontal-pod-autoscaler")).setup()
    manager.add(garbagecollector.GarbageCollector(await as_("generic-garbage-collector")))
    await namespaces.NamespaceController(await as_("namespace-controller")).setup()
    await statefulset.StatefulSetController(await as_("statefulset-controller")).setup()
    await daemonset.DaemonSetController(await as_("daemon-set-controller")).setup()
    await storageprotection.PVCProtectionController(await as_("pvc-protection-controller")).setup()
    await storageprotection.PVProtectionController(await as_("pv-protection-controller")).setup()
    manager.add(await nodelifecycle.NodeLifecycle(await as_("node-controller")).setup())
    if nodes > 0:
        simulator = nodes_mod.NodeSimulator(manager, nodes, node_api=node_api)
        await simulator.setup()
        manager.add(simulator)
        await kubelet.Kubelet(manager, simulator, pod_logs).setup()
        reporter = resourceusage.UsageReporter(manager, simulator)
        await reporter.setup()
        manager.add(reporter)
