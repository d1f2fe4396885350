"""A manager process for the leader-election test: ``python -m tests.e2e.runtime_le_child KUBECONFIG ID NS``.

It elects on the Lease ``NS/le-test`` (lease 3 s, renew 2 s, retry 0.5 s), reconciles ConfigMaps of
``NS`` by stamping them with its identity, and prints ``LEADER`` when it starts leading and
``RECONCILE <name>`` per reconcile (flushed at once, for the parent to read).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys

from kplane import runtime
from kplane.api import errors
from kplane.client import Config, typed

CONFIGMAPS = "configmaps"


async def main(kubeconfig: str, identity: str, namespace: str) -> None:
    cfg = dataclasses.replace(Config.from_kubeconfig(kubeconfig), qps=0)
    manager = runtime.Manager(
        options=runtime.ManagerOptions(
            namespace=namespace,
            metrics_bind_address="0",
            leader_election=True,
            leader_election_id="le-test",
            leader_election_namespace=namespace,
            leader_election_identity=identity,
            lease_duration=3.0,
            renew_deadline=2.0,
            retry_period=0.5,
        ),
        api=typed.Client(cfg),
    )

    async def stamp(req: runtime.Request) -> None:
        print(f"RECONCILE {req.name}", flush=True)
        try:
            await manager.client.patch(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": req.name, "namespace": namespace},
                },
                {"metadata": {"annotations": {"reconciled-by": identity}}},
            )
        except errors.NotFound:
            pass

    await runtime.Builder(manager).for_(CONFIGMAPS, predicates=[runtime.GenerationChanged()]).complete(stamp)

    async def announce() -> None:
        await manager.elected.wait()
        print("LEADER", flush=True)

    watcher = asyncio.get_running_loop().create_task(announce())
    try:
        await manager.run()
    finally:
        watcher.cancel()
        await manager.api.close()
    print("STOPPED", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
