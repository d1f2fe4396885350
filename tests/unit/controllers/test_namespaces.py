"""The namespace controller on a fake clock against a real in-process server: upstream's 5 s grace
before the first pass, the deletion conditions while a finalizer holds content, the 15 s finalizer
estimate (requeue after 8 s), then ``/finalize`` (kube-controller-manager's
``pkg/controller/namespace``)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic
from kplane.controllers import namespaces
from kplane.testing import AutoAdvancingClock, ControlPlane, eventually

CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)


def _time(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_grace_conditions_estimate_and_finalize(kplane_clock: AutoAdvancingClock) -> None:
    """Nothing happens for 5 s; then the held ConfigMap is reported; once its finalizer goes, the
    namespace is finalized at the next pass (8 s later), not before."""
    # one clock for the server's deletionTimestamp and the controller's grace period
    async with ControlPlane(clock=kplane_clock) as kplane:
        await _scenario(kplane, kplane_clock)


async def _scenario(kplane: ControlPlane, kplane_clock: AutoAdvancingClock) -> None:
    assert kplane.config is not None
    manager = runtime.Manager(
        kplane.config, runtime.ManagerOptions(metrics_bind_address="0"), clock=kplane_clock
    )
    await namespaces.NamespaceController(manager).setup()
    task = asyncio.get_running_loop().create_task(manager.start())
    dc = manager.api.dynamic
    nss = dc.resource(namespaces.NAMESPACES)
    try:
        await nss.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
        held = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "held", "finalizers": ["example.com/x"]},
        }
        await dc.resource(CONFIGMAPS, "doomed").create(held)
        await dc.resource(CONFIGMAPS, "doomed").create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "free"}}
        )
        await nss.delete("doomed")
        deleted_at = _time((await nss.get("doomed"))["metadata"]["deletionTimestamp"])

        async def reported() -> dict[str, Any] | None:
            ns = await nss.get("doomed")
            conds = {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or ()}
            remaining = conds.get("NamespaceFinalizersRemaining")
            return conds if remaining and remaining["status"] == "True" else None

        # fake time runs on while a pass's requests are in flight: bounds are loose, the checks
        # below are on the timestamps
        conds = await eventually(reported, clock=kplane_clock, timeout=600, interval=0.5)
        first_pass = _time(conds["NamespaceContentRemaining"]["lastTransitionTime"])
        assert (first_pass - deleted_at).total_seconds() >= 4  # timestamps have whole seconds
        assert conds["NamespaceContentRemaining"]["message"] == (
            "Some resources are remaining: configmaps. has 1 resource instances"
        )
        items = (await dc.resource(CONFIGMAPS, "doomed").list())["items"]
        assert [i["metadata"]["name"] for i in items] == ["held"]  # the free one went at once

        await dc.resource(CONFIGMAPS, "doomed").patch("held", {"metadata": {"finalizers": None}})

        async def gone() -> bool:
            try:
                await nss.get("doomed")
            except errors.NotFound:
                return True
            return False

        await eventually(gone, clock=kplane_clock, timeout=600, interval=0.5)
        # upstream requeues a namespace with finalizer-held content after 15/2 + 1 s
        assert (kplane_clock.now() - first_pass).total_seconds() >= 7
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await manager.api.close()
