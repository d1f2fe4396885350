"""The WebApp operator: each ``WebApp`` gets a ConfigMap, a Deployment and a Service, kept as declared.

Reconcile, for one WebApp:

1. Gone → nothing to do. Being deleted → delete the owned objects, then drop the finalizer so the
   deletion completes (the finalizer guarantees cleanup even where no garbage collector runs).
2. Add the finalizer if missing.
3. Server-side apply the desired ConfigMap, Deployment and Service, each with the WebApp as its
   controller. Apply is declarative: a field someone else changed on an owned object (drift) is
   taken back by the next reconcile, which ``owns()`` triggers as soon as the object changes.
4. Write status (``Ready`` condition, ``observedGeneration``) only when it changed.

Admission-time validation (``webhook.py``: a validating webhook refusing images that pin no
version) is served by the same manager's webhook server; see ``setup``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from examples.webapp import crd, webhook
from kplane import runtime
from kplane.api import errors
from kplane.client import events
from kplane.client.models import apps_v1, core_v1
from kplane.runtime import conditions, finalizers
from kplane.runtime.webhook import WebhookServerOptions

FINALIZER = "example.kplane.dev/cleanup"
FIELD_MANAGER = "webapp-operator"
Object = dict[str, Any]


def desired_objects(app: Object) -> list[Object]:
    """The ConfigMap, Deployment and Service ``app`` asks for, each controlled by ``app``."""
    meta, spec = app["metadata"], app.get("spec") or {}
    name, namespace = meta["name"], meta["namespace"]
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": FIELD_MANAGER}
    message = str(spec.get("message", "hello"))
    port = int(spec.get("port", 8080))
    config_hash = hashlib.sha256(message.encode()).hexdigest()[:16]
    config_map: Object = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"index.html": message},
    }
    deployment: Object = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": int(spec.get("replicas", 1)),
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {"example.kplane.dev/config-hash": config_hash},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": spec["image"],
                            "ports": [{"containerPort": port, "protocol": "TCP"}],
                            "volumeMounts": [{"name": "content", "mountPath": "/usr/share/web"}],
                        }
                    ],
                    "volumes": [{"name": "content", "configMap": {"name": name}}],
                },
            },
        },
    }
    service: Object = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "selector": labels,
            "ports": [{"name": "http", "port": 80, "targetPort": port, "protocol": "TCP"}],
        },
    }
    out = [config_map, deployment, service]
    for obj in out:
        runtime.set_controller_reference(app, obj)
    return out


class WebAppReconciler:
    """Reconciles one WebApp (module docstring); safe to run with several workers."""

    def __init__(self, client: runtime.Client, recorder: events.EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    async def reconcile(self, request: runtime.Request) -> runtime.Result:
        log = runtime.logger()
        try:
            app = await self.client.get(crd.WEBAPPS, request.name, request.namespace)
        except errors.NotFound:
            return runtime.Result()
        if finalizers.is_being_deleted(app):
            await self._finalize(app)
            return runtime.Result()
        if finalizers.add_finalizer(app, FINALIZER):
            app = await self.client.update(app)
        for obj in desired_objects(app):
            await self.client.apply(obj)
        status = dict(app.get("status") or {})
        conds = list(status.get("conditions") or [])
        generation = app["metadata"].get("generation")
        changed = conditions.set_status_condition(
            conds,
            {
                "type": "Ready",
                "status": "True",
                "reason": "Reconciled",
                "message": "ConfigMap, Deployment and Service are applied",
                "observedGeneration": generation,
            },
        )
        if changed or status.get("observedGeneration") != generation:
            app["status"] = {**status, "conditions": conds, "observedGeneration": generation}
            await self.client.update_status(app)
            self.recorder.event(app, "Normal", "Reconciled", f"applied generation {generation}")
            log.info("reconciled generation %s", generation)
        return runtime.Result()

    async def _finalize(self, app: Object) -> None:
        if not finalizers.contains_finalizer(app, FINALIZER):
            return
        for obj in desired_objects(app):
            try:
                await self.client.delete(obj)
            except errors.NotFound:
                pass
        finalizers.remove_finalizer(app, FINALIZER)
        await self.client.update(app)
        runtime.logger().info("cleaned up owned objects")


async def setup(
    manager: runtime.Manager, *, max_concurrent_reconciles: int = 2, validating_webhook: bool = False
) -> runtime.Controller:
    """Register the WebApp controller with ``manager``, and with ``validating_webhook`` the WebApp
    validator on the manager's webhook server (``options.webhook``), which then serves before the
    caches sync."""
    if validating_webhook:
        webhook.setup(manager)
    reconciler = WebAppReconciler(manager.client, manager.event_recorder("webapp-operator"))
    return await (
        runtime.Builder(manager)
        .for_(crd.WEBAPPS, predicates=[runtime.GenerationChanged()])
        .owns(core_v1.ConfigMap)
        .owns(apps_v1.Deployment)
        .owns(core_v1.Service)
        .with_options(runtime.ControllerOptions(max_concurrent_reconciles=max_concurrent_reconciles))
        .complete(reconciler)
    )


async def main(options: runtime.ManagerOptions | None = None) -> None:
    """Install the CRD, then run the operator until SIGTERM or SIGINT."""
    manager = runtime.Manager(
        options=options
        or runtime.ManagerOptions(
            field_manager=FIELD_MANAGER,
            health_probe_bind_address="127.0.0.1:8081",
            # Development: a self-signed certificate in the default cert dir, loopback only.
            webhook=WebhookServerOptions(host="127.0.0.1", self_signed=True),
        )
    )
    await crd.install(manager.api.dynamic)
    await setup(manager, validating_webhook=True)
    try:
        await manager.run()
    finally:
        await manager.api.close()
