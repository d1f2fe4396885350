"""The DeployRequest controller and the two kinds of deploy client it is compared with.

The controller runs one worker, so requests are applied one at a time in the order their events
arrive. Each is applied with ``retry_on_conflict``: read the Deployment from the server (not the
cache, so the read is current), set the image, PUT; a 409 (another writer got in between) means
read again and retry. The outcome goes into the request's status: ``Applied`` with the
Deployment's resourceVersion after the write and the number of attempts, or ``Failed`` (missing
Deployment or container: a ``TerminalError``, never retried).
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from examples.deploy_requests import crd
from kplane import runtime
from kplane._util import clock as clock_mod
from kplane.api import errors
from kplane.client import dynamic, retry

Object = dict[str, Any]
DEPLOYMENTS = dynamic.Resource("apps", "v1", "deployments", "Deployment", namespaced=True)


class DeployRequestReconciler:
    """Applies one DeployRequest to its Deployment (module docstring)."""

    def __init__(self, manager: runtime.Manager) -> None:
        self.client = manager.client
        self.live = manager.api.dynamic

    async def reconcile(self, request: runtime.Request) -> runtime.Result:
        try:
            req = await self.client.get(crd.DEPLOY_REQUESTS, request.name, request.namespace)
        except errors.NotFound:
            return runtime.Result()
        if (req.get("status") or {}).get("phase"):
            return runtime.Result()  # already applied or failed: requests are one-shot
        spec = req["spec"]
        deployments = self.live.resource(DEPLOYMENTS, request.namespace)
        attempts = 0

        async def apply_once() -> Object:
            nonlocal attempts
            attempts += 1
            deployment = await deployments.get(spec["deployment"])
            containers = deployment["spec"]["template"]["spec"]["containers"]
            matching = [c for c in containers if c["name"] == spec["container"]]
            if not matching:
                raise runtime.TerminalError(f"container {spec['container']} not found")
            matching[0]["image"] = spec["image"]
            return await deployments.update(deployment)

        try:
            updated = await retry.retry_on_conflict(apply_once, backoff=_PERSISTENT)
        except (errors.NotFound, runtime.TerminalError) as err:
            req["status"] = {"phase": "Failed", "message": str(err), "attempts": attempts}
            await self.client.update_status(req)
            raise runtime.TerminalError(str(err)) from err
        req["status"] = {
            "phase": "Applied",
            "deploymentResourceVersion": updated["metadata"]["resourceVersion"],
            "attempts": attempts,
        }
        await self.client.update_status(req)
        return runtime.Result()


_PERSISTENT = dataclasses.replace(retry.DEFAULT_RETRY, steps=50)
"""client-go's DefaultRetry pacing, with more attempts: deploy clients may keep writing directly."""


async def setup(manager: runtime.Manager) -> runtime.Controller:
    """Register the DeployRequest controller (one worker: requests apply in order)."""
    return await runtime.Builder(manager).for_(crd.DEPLOY_REQUESTS).complete(DeployRequestReconciler(manager))


async def direct_deploy(client: dynamic.DynamicClient, namespace: str, deployment: str, image: str) -> Object:
    """What a naive deploy client does: read, set the image, PUT. Raises ``errors.Conflict`` on a race."""
    deployments = client.resource(DEPLOYMENTS, namespace)
    current = await deployments.get(deployment)
    current["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return await deployments.update(current)


async def request_deploy(
    client: dynamic.DynamicClient, namespace: str, deployment: str, container: str, image: str
) -> Object:
    """Ask for a deploy with a DeployRequest and wait for its outcome; returns the request's status."""
    requests = client.resource(crd.DEPLOY_REQUESTS, namespace)
    name = f"{deployment}-{uuid.uuid4().hex[:10]}"
    await requests.create(
        {
            "apiVersion": f"{crd.GROUP}/{crd.VERSION}",
            "kind": crd.KIND,
            "metadata": {"name": name},
            "spec": {"deployment": deployment, "container": container, "image": image},
        }
    )

    clock = clock_mod.RealClock()
    while True:  # a watch would do too; a short poll keeps the example small
        status: Object = (await requests.get(name)).get("status") or {}
        if status.get("phase"):
            return status
        await clock.sleep(0.02)
