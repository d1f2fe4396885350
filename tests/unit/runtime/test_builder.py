"""Builder wiring on the in-process control plane: map-function watches, filters, a custom rate limiter."""

from __future__ import annotations

from typing import Any

from kplane import runtime, testing
from kplane.workqueue import rate_limiters
from tests.e2e import runtime_support as rs


async def test_watches_with_map_function_and_event_filter(kplane: testing.ControlPlane) -> None:
    """A plain map function turns ConfigMap events into requests; a plain-function filter drops some."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    seen: list[runtime.Request] = []

    async def record(req: runtime.Request) -> None:
        seen.append(req)

    def target(obj: Any) -> list[runtime.Request]:
        labels = obj["metadata"].get("labels") or {}
        return [runtime.Request("default", labels["target"])] if "target" in labels else []

    ctl = await (
        runtime.Builder(manager)
        .named("mapper")
        .watches("configmaps", target)
        .with_event_filter(lambda obj: not obj["metadata"]["name"].startswith("skip-"))
        .complete(record)
    )
    assert ctl.name == "mapper"
    cms = kplane.client.dynamic.resource("configmaps", "default")
    async with rs.running(manager):
        await cms.create({"metadata": {"name": "skip-me", "labels": {"target": "ignored"}}})
        await cms.create({"metadata": {"name": "a", "labels": {"target": "alpha"}}})
        await cms.create({"metadata": {"name": "b"}})
        await testing.eventually(lambda: runtime.Request("default", "alpha") in seen)
        await testing.consistently(lambda: all(r.name == "alpha" for r in seen), duration=0.2)


async def test_custom_rate_limiter_paces_retries(kplane: testing.ControlPlane) -> None:
    """The controller retries failures with the rate limiter it was given."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    limiter: rate_limiters.ItemFastSlowRateLimiter[Any] = rate_limiters.ItemFastSlowRateLimiter(
        0.001, 60.0, 2
    )
    attempts: list[str] = []

    async def always_fails(req: runtime.Request) -> None:
        attempts.append(req.name)
        raise RuntimeError("still broken")

    await (
        runtime.Builder(manager)
        .for_("configmaps")
        .with_options(runtime.ControllerOptions(rate_limiter=limiter))
        .complete(always_fails)
    )
    async with rs.running(manager):
        await kplane.client.dynamic.resource("configmaps", "default").create({"metadata": {"name": "r"}})
        # Two fast retries (1 ms), then the slow delay (60 s): three attempts, then quiet.
        await testing.eventually(lambda: attempts.count("r") == 3)
        await testing.consistently(lambda: attempts.count("r") == 3, duration=0.3)
    assert limiter.num_requeues(runtime.Request("default", "r")) == 3
