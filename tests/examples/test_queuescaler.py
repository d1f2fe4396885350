"""The QueueScaler operator against a real ``redis-server`` and a real in-process kplane: scale to the
queue, bounded by max; back to min after the cool-down (fake clock); racing writers on one
Deployment never lose an update (conflicts are retried from a fresh read)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

from examples.queuescaler import controller, crd, local, resp
from kplane import runtime, testing
from kplane.client import dynamic, retry
from kplane.testing import AutoAdvancingClock, ControlPlane, eventually
from kplane.testing import faults as faults_mod
from tests.e2e import helpers

REDIS = shutil.which("redis-server")
pytestmark = [
    pytest.mark.skipif(
        REDIS is None,
        reason="redis-server is not installed (Debian package redis-server; .ci/run installs it)",
    ),
    pytest.mark.timeout(180),  # an operator, a server and redis-server share a possibly loaded machine
]
KEY = "jobs"


@pytest.fixture
def kplane_crds() -> Sequence[testing.CrdSource]:
    return [crd.MANIFEST]


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A private redis-server on a free loopback port, no persistence."""
    assert REDIS is not None
    with local.private_redis(REDIS) as url:
        yield url


@contextlib.asynccontextmanager
async def _operator(kplane: ControlPlane, clock: AutoAdvancingClock, workers: int = 1) -> AsyncIterator[Any]:
    assert kplane.config is not None
    manager = runtime.Manager(kplane.config, runtime.ManagerOptions(metrics_bind_address="0"), clock=clock)
    reconciler = await controller.setup(manager, workers=workers)
    task = asyncio.get_running_loop().create_task(manager.start())
    try:
        yield manager
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await reconciler.close()
        await manager.api.close()


async def _fill(url: str, count: int) -> None:
    redis = resp.Redis(url)
    try:
        await redis.command("DEL", KEY)
        if count:
            await redis.command("RPUSH", KEY, *[f"m{i}" for i in range(count)])
    finally:
        await redis.close()


def _deployment(name: str) -> dict[str, Any]:
    return helpers.deployment(name, image="worker", container="w")


def _scaler(name: str, url: str, *, max_replicas: int, cooldown: int = 60) -> dict[str, Any]:
    return local.queue_scaler(
        name,
        deployment="workers",
        url=url,
        key=KEY,
        per_replica=10,
        max_replicas=max_replicas,
        cooldown=cooldown,
    )


async def _replicas(dc: dynamic.DynamicClient) -> int:
    d = await dc.resource(controller.DEPLOYMENTS, "default").get("workers")
    return int(d["spec"]["replicas"])


async def _events(dc: dynamic.DynamicClient) -> list[tuple[str, str]]:
    page = await dc.resource(dynamic.Resource("", "v1", "events", "Event", namespaced=True), "default").list()
    return [(e["reason"], e["message"]) for e in page["items"] if e["involvedObject"]["kind"] == crd.KIND]


@pytest.mark.parametrize(("max_replicas", "expected"), [(20, 10), (6, 6)], ids=["ten", "bounded-by-max"])
async def test_hundred_messages_at_ten_per_replica(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, redis_url: str, max_replicas: int, expected: int
) -> None:
    """100 messages at 10 per replica: 10 replicas, or maxReplicas when lower; status and an Event say so."""
    dc = kplane.client.dynamic
    await _fill(redis_url, 100)
    await dc.resource(controller.DEPLOYMENTS, "default").create(_deployment("workers"))
    async with _operator(kplane, kplane_clock):
        await dc.resource(crd.QUEUE_SCALERS, "default").create(
            _scaler("q", redis_url, max_replicas=max_replicas)
        )

        async def scaled() -> bool:
            assert await _replicas(dc) == expected
            return True

        await eventually(scaled, clock=kplane_clock, timeout=60)

        async def reported() -> dict[str, Any]:
            status: dict[str, Any] = (await dc.resource(crd.QUEUE_SCALERS, "default").get("q")).get(
                "status"
            ) or {}
            assert status.get("currentReplicas") == expected
            return status

        status = await eventually(reported, clock=kplane_clock, timeout=60)
        assert (status["queueLength"], status["desiredReplicas"]) == (100, expected)
        ready = status["conditions"][0]
        assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "True", "QueueRead")
        up = f"Scaled deployment workers from 1 to {expected} replicas: queue length 100"
        up += " at 10 messages per replica"
        assert ("Scaled", up) in await _events(dc)


async def test_draining_returns_to_min_after_cooldown(
    kplane: ControlPlane, kplane_clock: AutoAdvancingClock, redis_url: str
) -> None:
    """An emptied queue keeps the replicas for the cool-down (120 s), then goes back to min."""
    dc = kplane.client.dynamic
    await _fill(redis_url, 100)
    await dc.resource(controller.DEPLOYMENTS, "default").create(_deployment("workers"))
    async with _operator(kplane, kplane_clock):
        await dc.resource(crd.QUEUE_SCALERS, "default").create(
            _scaler("q", redis_url, max_replicas=20, cooldown=120)
        )

        async def at(n: int) -> bool:
            assert await _replicas(dc) == n
            return True

        await eventually(lambda: at(10), clock=kplane_clock, timeout=60)
        await _fill(redis_url, 0)
        drained = kplane_clock.monotonic()

        async def cooling() -> str:
            status = (await dc.resource(crd.QUEUE_SCALERS, "default").get("q"))["status"]
            assert status["queueLength"] == 0
            message: str = status["conditions"][0]["message"]
            assert "cool-down" in message
            return message

        await eventually(cooling, clock=kplane_clock, timeout=60)
        assert await _replicas(dc) == 10
        await eventually(lambda: at(1), clock=kplane_clock, timeout=300)
        assert kplane_clock.monotonic() - drained >= 110  # the cool-down ran from the last busy poll
        assert (
            "Scaled",
            "Scaled deployment workers from 10 to 1 replicas: queue length 0 at 10 messages per replica",
        ) in (await _events(dc))


class TestRacing:
    """Two QueueScalers and a third writer on one Deployment, with the server refusing three
    scale writes in four with 409: every writer's update lands."""

    @pytest.fixture
    def kplane_faults(self) -> faults_mod.FaultPlan:
        # seed 0 refuses the first three scale writes (decisions are replayed per seed and request)
        scale_writes = faults_mod.Match(
            verbs=("update",), resources=("deployments.apps",), subresource="scale"
        )
        return faults_mod.FaultPlan(faults_mod.Conflicts(probability=0.75, match=scale_writes), seed=0)

    async def test_racing_writers_never_lose_an_update(
        self,
        kplane: ControlPlane,
        kplane_clock: AutoAdvancingClock,
        kplane_faults: faults_mod.FaultPlan,
        redis_url: str,
    ) -> None:
        dc = kplane.client.dynamic
        await _fill(redis_url, 100)
        deployments = dc.resource(controller.DEPLOYMENTS, "default")
        await deployments.create(_deployment("workers"))
        bumps = 20

        async def bump() -> None:
            """A rival writer: read, count up an annotation, PUT (retrying its own conflicts)."""

            async def once() -> None:
                d = await deployments.get("workers")
                notes = d["metadata"].setdefault("annotations", {})
                notes["rival/count"] = str(int(notes.get("rival/count", "0")) + 1)
                await deployments.update(d)

            await retry.retry_on_conflict(once, backoff=dataclasses.replace(retry.DEFAULT_RETRY, steps=500))

        async with _operator(kplane, kplane_clock, workers=2):
            scalers = dc.resource(crd.QUEUE_SCALERS, "default")
            await asyncio.gather(
                scalers.create(_scaler("a", redis_url, max_replicas=20)),
                scalers.create(_scaler("b", redis_url, max_replicas=20)),
                *(bump() for _ in range(bumps)),
            )

            async def settled() -> bool:
                assert await _replicas(dc) == 10
                for name in ("a", "b"):
                    status = (await scalers.get(name)).get("status") or {}
                    assert status.get("currentReplicas") == 10
                return True

            await eventually(settled, clock=kplane_clock, timeout=120)
        final = await deployments.get("workers")
        assert final["metadata"]["annotations"]["rival/count"] == str(bumps)  # no rival write lost
        assert final["spec"]["replicas"] == 10  # and the scalers' write survived the rival's PUTs
        injected = [i for i in kplane_faults.log if "scale" in str(i)]
        assert injected, "the fault plan refused no scale write: the race was not exercised"
        statuses = [(await scalers.get(n)).get("status") or {} for n in "ab"]
        assert sum(int(s.get("conflictsRetried", 0)) for s in statuses) >= 1


async def test_unreachable_redis_is_reported(kplane: ControlPlane, kplane_clock: AutoAdvancingClock) -> None:
    """A Redis nobody listens on: Ready False QueueUnavailable and a Warning, replicas untouched."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    dc = kplane.client.dynamic
    await dc.resource(controller.DEPLOYMENTS, "default").create(_deployment("workers"))
    async with _operator(kplane, kplane_clock):
        await dc.resource(crd.QUEUE_SCALERS, "default").create(
            _scaler("q", f"redis://127.0.0.1:{dead}/0", max_replicas=5)
        )

        async def unavailable() -> dict[str, Any]:
            status = (await dc.resource(crd.QUEUE_SCALERS, "default").get("q")).get("status") or {}
            ready: dict[str, Any] = (status.get("conditions") or [{}])[0]
            assert (ready.get("status"), ready.get("reason")) == ("False", "QueueUnavailable")
            return ready

        ready = await eventually(unavailable, clock=kplane_clock, timeout=60)
        assert "cannot read the queue" in ready["message"]
    assert await _replicas(dc) == 1


def test_resp_client_bounds_and_errors(redis_url: str) -> None:
    """Errors from the server surface as RedisError; URLs are checked."""

    async def run() -> None:
        redis = resp.Redis(redis_url)
        try:
            assert await redis.command("PING") == "PONG"
            with pytest.raises(resp.RedisError, match="ERR unknown command"):
                await redis.command("NOSUCHCOMMAND")
            assert await redis.command("PING") == "PONG"  # reconnects after an error
        finally:
            await redis.close()

    asyncio.run(run())
    with pytest.raises(ValueError, match="not a redis:// URL"):
        resp.parse_url("http://example")
