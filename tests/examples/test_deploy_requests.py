"""The concurrent-deploy takeaway: direct PUTs race into 409s; DeployRequests all land, conflict-free."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from examples.deploy_requests import controller, crd
from kplane import testing
from kplane.api import errors
from tests.e2e import helpers
from tests.e2e import runtime_support as rs

CLIENTS = 16


def _deployment(name: str) -> dict[str, Any]:
    return helpers.deployment(name, image="app:0", container="app")


@pytest.fixture
def kplane_crds() -> Sequence[testing.CrdSource]:
    return [crd.MANIFEST]


async def test_direct_patches_conflict(kplane: testing.ControlPlane) -> None:
    """Clients that read the same version and PUT at once: one wins, the others get 409 Conflict."""
    dc = kplane.client.dynamic
    await dc.resource(controller.DEPLOYMENTS, "default").create(_deployment("web"))
    barrier = asyncio.Barrier(CLIENTS)
    deployments = dc.resource(controller.DEPLOYMENTS, "default")

    async def deploy(i: int) -> str:
        current = await deployments.get("web")
        await barrier.wait()  # every client has read before anyone writes: "at once"
        current["spec"]["template"]["spec"]["containers"][0]["image"] = f"app:{i}"
        try:
            await deployments.update(current)
        except errors.Conflict as err:
            # upstream's message for a stale resourceVersion (apiserver registry/generic/registry/store.go)
            assert "the object has been modified; please apply your changes to the latest version" in str(err)
            return "conflict"
        return "ok"

    outcomes = await asyncio.gather(*(deploy(i) for i in range(CLIENTS)))
    assert outcomes.count("ok") == 1
    assert outcomes.count("conflict") == CLIENTS - 1

    # The example's own direct client races the same way when run concurrently.
    results = await asyncio.gather(
        *(controller.direct_deploy(dc, "default", "web", f"app:d{i}") for i in range(CLIENTS)),
        return_exceptions=True,
    )
    assert all(isinstance(r, dict | errors.Conflict) for r in results)


async def test_deploy_requests_all_land(kplane: testing.ControlPlane) -> None:
    """Every DeployRequest is applied in turn, each reports its own outcome, no client sees a conflict."""
    assert kplane.config is not None
    dc = kplane.client.dynamic
    await dc.resource(controller.DEPLOYMENTS, "default").create(_deployment("api"))
    manager = rs.new_manager(kplane.config)
    await controller.setup(manager)
    async with rs.running(manager):
        statuses = await asyncio.gather(
            *(controller.request_deploy(dc, "default", "api", "app", f"app:{i}") for i in range(CLIENTS))
        )
    assert [s["phase"] for s in statuses] == ["Applied"] * CLIENTS
    versions = [int(s["deploymentResourceVersion"]) for s in statuses]
    assert len(set(versions)) == CLIENTS  # each request is its own write of the Deployment
    final = await dc.resource(controller.DEPLOYMENTS, "default").get("api")
    last = max(range(CLIENTS), key=lambda i: versions[i])
    assert final["spec"]["template"]["spec"]["containers"][0]["image"] == f"app:{last}"
    assert final["metadata"]["resourceVersion"] == str(versions[last])


async def test_deploy_requests_land_while_others_write_directly(kplane: testing.ControlPlane) -> None:
    """Direct writers racing the controller cost it retries (inside), never a failed request."""
    assert kplane.config is not None
    dc = kplane.client.dynamic
    await dc.resource(controller.DEPLOYMENTS, "default").create(_deployment("mixed"))
    manager = rs.new_manager(kplane.config)
    await controller.setup(manager)
    stop = asyncio.Event()

    async def direct_writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            try:
                await controller.direct_deploy(dc, "default", "mixed", f"direct:{i}")
            except errors.Conflict:
                pass

    async with rs.running(manager):
        writers = [asyncio.get_running_loop().create_task(direct_writer()) for _ in range(4)]
        try:
            statuses = await asyncio.gather(
                *(controller.request_deploy(dc, "default", "mixed", "app", f"app:{i}") for i in range(8))
            )
        finally:
            stop.set()
            await asyncio.gather(*writers)
    assert [s["phase"] for s in statuses] == ["Applied"] * 8


async def test_missing_container_fails_terminally(kplane: testing.ControlPlane) -> None:
    """A request naming a missing container ends Failed, with the reason in its status."""
    assert kplane.config is not None
    dc = kplane.client.dynamic
    await dc.resource(controller.DEPLOYMENTS, "default").create(_deployment("one"))
    manager = rs.new_manager(kplane.config)
    await controller.setup(manager)
    async with rs.running(manager):
        status = await controller.request_deploy(dc, "default", "one", "sidecar", "x:1")
    assert status == {"phase": "Failed", "message": "container sidecar not found", "attempts": 1}
