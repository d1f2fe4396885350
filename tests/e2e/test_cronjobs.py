"""CronJobs on a fake clock: the server and the controller share an ``AutoAdvancingClock`` that jumps
to the next deadline (the controller's requeue at the next scheduled time) whenever the loop is idle,
so a CronJob fires on schedule without sleeping. Event reasons and messages are upstream's
(pkg/controller/cronjob/cronjob_controllerv2.go; reference/cluster.md §7.4)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kplane import runtime, testing
from kplane.client import dynamic, typed
from kplane.controllers import cronjobs, jobutil
from tests.e2e import runtime_support as rs

pytestmark = pytest.mark.timeout(120)

EVENTS = dynamic.Resource("", "v1", "events", "Event", namespaced=True)
START = datetime.datetime(2026, 3, 1, 10, 2, 30, tzinfo=datetime.UTC)


@contextlib.asynccontextmanager
async def cluster() -> AsyncIterator[tuple[testing.AutoAdvancingClock, dynamic.DynamicClient]]:
    clock = testing.AutoAdvancingClock(START)
    async with testing.ControlPlane(clock=clock) as cp, clock:
        assert cp.config is not None
        opts = runtime.ManagerOptions(metrics_bind_address="0")
        manager = runtime.Manager(
            options=opts, api=typed.Client(dataclasses.replace(cp.config, qps=0)), clock=clock
        )
        await cronjobs.CronJobController(manager).setup()
        async with rs.running(manager):
            yield clock, cp.client.dynamic


def _cronjob(name: str, schedule: str, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, **spec,
                 "jobTemplate": {"metadata": {"labels": {"app": name}}, "spec": {"template": template}}},
    }  # fmt: skip


async def _jobs(dc: dynamic.DynamicClient, ns: str) -> list[dict[str, Any]]:
    return sorted((await dc.resource(jobutil.JOBS, ns).list())["items"], key=lambda j: j["metadata"]["name"])


def _minutes(when: datetime.datetime) -> int:
    return int(when.timestamp()) // 60


async def test_cronjob_fires_on_schedule_forbid_and_history() -> None:
    async with cluster() as (clock, dc):
        ns = "default"
        cjs = dc.resource(cronjobs.CRONJOBS, ns)
        await cjs.create(_cronjob("tick", "*/5 * * * *", concurrencyPolicy="Forbid"))

        async def first() -> dict[str, Any]:
            [job] = await _jobs(dc, ns)
            return job

        job = await rs.eventually(first)
        fired = datetime.datetime(2026, 3, 1, 10, 5, tzinfo=datetime.UTC)  # the first */5 after 10:02:30
        assert job["metadata"]["name"] == f"tick-{_minutes(fired)}"
        assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == (
            "2026-03-01T10:05:00Z"
        )
        assert job["metadata"]["labels"]["app"] == "tick"
        assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"

        # Later ticks come while the 10:05 Job still runs: Forbid skips them.
        async def forbidden() -> None:
            evs = (await dc.resource(EVENTS, ns).list())["items"]
            assert cronjobs.FORBID_MESSAGE in [
                e["message"] for e in evs if e.get("reason") == "JobAlreadyActive"
            ]
            st = (await cjs.get("tick"))["status"]
            assert st["lastScheduleTime"] == "2026-03-01T10:05:00Z"
            assert [a["name"] for a in st["active"]] == [job["metadata"]["name"]]

        await rs.eventually(forbidden)
        assert len(await _jobs(dc, ns)) == 1

        # The Job completes: seen, lastSuccessfulTime; a later tick starts the next one.
        done = "2026-03-01T10:06:00Z"
        reached = {
            "status": "True",
            "reason": "CompletionsReached",
            "message": jobutil.COMPLETIONS_REACHED[1],
        }
        conds = [{"type": t, **reached} for t in ("SuccessCriteriaMet", "Complete")]
        body = {
            "startTime": "2026-03-01T10:05:00Z",
            "completionTime": done,
            "succeeded": 1,
            "conditions": conds,
        }
        await dc.resource(jobutil.JOBS, ns).patch(
            job["metadata"]["name"], {"status": body}, subresource="status"
        )

        async def second() -> None:
            st = (await cjs.get("tick"))["status"]
            assert st.get("lastSuccessfulTime") == done
            jobs = await _jobs(dc, ns)
            assert len(jobs) >= 2
            minutes = int(jobs[1]["metadata"]["name"].rsplit("-", 1)[1])
            assert minutes > _minutes(fired) and minutes % 5 == 0

        await rs.eventually(second)
        assert clock.now() > fired  # fake time, moved by the clock alone


async def test_time_zone_suspend_and_starting_deadline() -> None:
    async with cluster() as (clock, dc):
        ns = "default"
        cjs = dc.resource(cronjobs.CRONJOBS, ns)
        await cjs.create(_cronjob("paris", "0 12 * * *", timeZone="Europe/Paris"))
        await cjs.create(_cronjob("paused", "* * * * *", suspend=True))

        async def fired() -> None:
            jobs = await _jobs(dc, ns)
            noon = datetime.datetime(2026, 3, 1, 11, 0, tzinfo=datetime.UTC)  # 12:00 in Paris (CET)
            assert jobs[0]["metadata"]["name"] == f"paris-{_minutes(noon)}"
            stamp = jobs[0]["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
            assert stamp == "2026-03-01T12:00:00+01:00"

        await rs.eventually(fired)
        assert clock.now() > START
        assert not [j for j in await _jobs(dc, ns) if j["metadata"]["name"].startswith("paused-")]
