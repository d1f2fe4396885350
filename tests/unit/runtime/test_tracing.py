"""Reconcile tracing: triggers, writes, the ring, the served JSON and OpenTelemetry spans."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.request
from typing import Any

import pytest

from kplane import runtime, testing
from kplane.cli import main as cli_main
from kplane.runtime import tracing
from tests.e2e import runtime_support as rs

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    },
}


def _settings_to_deployment(manager: runtime.Manager) -> runtime.ReconcileFunc:
    """A controller that copies ConfigMap ``settings``'s ``image`` into Deployment ``web``."""

    async def reconcile(req: runtime.Request) -> None:
        cm = await manager.client.get("configmaps", req.name, req.namespace)
        image = (cm.get("data") or {}).get("image")
        if image:
            runtime.logger().info("copying image %s", image)
            patch = {"metadata": {"annotations": {"example.com/image": image}}}
            await manager.api.dynamic.resource("deployments.apps", req.namespace).patch("web", patch)

    return reconcile


async def test_a_deployment_revision_is_explained_by_its_reconcile(
    kplane: testing.ControlPlane, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """For the revision of a Deployment that a controller wrote on a ConfigMap change, the traces
    hold the reconcile, its trigger (the ConfigMap's event and resourceVersion) and the write."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    await (
        runtime.Builder(manager)
        .named("settings")
        .for_("configmaps")
        .complete(_settings_to_deployment(manager))
    )
    deployments = kplane.client.dynamic.resource("deployments.apps", "default")
    cms = kplane.client.dynamic.resource("configmaps", "default")
    await deployments.create(DEPLOYMENT)
    caplog.set_level(logging.INFO, logger="kplane.runtime.reconcile")
    async with rs.running(manager):
        cm = await cms.create({"metadata": {"name": "settings"}, "data": {"image": "nginx:2"}})

        async def annotated() -> bool:
            web = await deployments.get("web")
            return (web["metadata"].get("annotations") or {}).get("example.com/image") == "nginx:2"

        await testing.eventually(annotated)
        web = await deployments.get("web")
        revision = web["metadata"]["resourceVersion"]
        assert manager.tracer is not None
        found = manager.tracer.query({"resourceVersion": revision, "writeName": "web"})["items"]
        assert len(found) == 1, found
        trace = found[0]
        assert (trace["controller"], trace["namespace"], trace["name"], trace["result"]) == (
            "settings", "default", "settings", "Success"
        )  # fmt: skip
        assert [
            (t["type"], t["event"], t["kind"], t["name"], t["resourceVersion"], t["via"])
            for t in trace["triggers"]
        ] == [("Event", "ADDED", "ConfigMap", "settings", cm["metadata"]["resourceVersion"], "object")]
        writes = [
            (w["verb"], w["resource"], w["namespace"], w["name"], w["resourceVersion"])
            for w in trace["writes"]
        ]
        assert writes == [("patch", "deployments.apps", "default", "web", revision)]
        assert trace["writes"][0]["conflict"] is False

        # The same JSON is served beside /metrics.
        url = manager.servers["metrics"].url + f"/debug/kplane/traces?traceID={trace['traceID']}"
        served = json.loads(await _fetch(url))
        assert served["kind"] == "ReconcileTraceList" and served["items"] == [trace]
        # kplane why: the revision from history beside the reconcile that wrote it.
        argv = ["why", "deploy/web", "--revision", revision, "--kubeconfig", str(kplane.kubeconfig)]
        argv += ["--traces", manager.servers["metrics"].url + "/debug/kplane/traces"]
        assert await asyncio.to_thread(cli_main.main, argv) == 0
    why = capsys.readouterr().out.splitlines()
    assert why[0].startswith(f"revision {revision} of Deployment default/web: UPDATE at ")
    assert why[1].startswith("reconcile of settings for default/settings: Success")
    assert trace["traceID"] in why[1]
    cm_rv = cm["metadata"]["resourceVersion"]
    assert why[2:] == [
        "  triggered by:",
        f"    Event ADDED ConfigMap default/settings resourceVersion {cm_rv} (via object)",
        "  wrote:",
        f"    patch deployments.apps default/web -> {revision}  <- this revision",
    ]
    logged = [r for r in caplog.records if r.getMessage() == "copying image nginx:2"]
    assert logged and logged[0].kv["traceID"] == trace["traceID"]  # the reconcile's log lines carry it


async def _fetch(url: str) -> bytes:
    def get() -> bytes:
        with urllib.request.urlopen(url, timeout=10) as resp:
            body: bytes = resp.read()
            return body

    return await asyncio.to_thread(get)


async def test_requeues_and_errors_become_the_next_reconciles_triggers(kplane: testing.ControlPlane) -> None:
    """A failed reconcile's retry and a requested requeue are the causes of the next reconciles."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    calls: list[int] = []

    async def flaky(req: runtime.Request) -> runtime.Result:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first time fails")
        return runtime.Result(requeue=len(calls) == 2)

    await (
        runtime.Builder(manager)
        .named("flaky")
        .for_("configmaps")
        .with_options(runtime.ControllerOptions(rate_limiter=_fast_limiter()))
        .complete(flaky)
    )
    async with rs.running(manager):
        await kplane.client.dynamic.resource("configmaps", "default").create({"metadata": {"name": "x"}})
        assert manager.tracer is not None
        tracer = manager.tracer
        await testing.eventually(lambda: len([t for t in tracer.traces() if t.controller == "flaky"]) >= 3)
    mine = [t for t in tracer.traces() if t.controller == "flaky"][:3]
    assert [t.result for t in mine] == ["Error", "Requeue", "Success"]
    assert mine[0].error == "first time fails"
    assert [t.type for t in mine[1].triggers] == ["Retry"]
    assert [t.type for t in mine[2].triggers] == ["Requeue"]


def _fast_limiter() -> Any:
    from kplane.workqueue import rate_limiters

    return rate_limiters.ItemExponentialFailureRateLimiter(0.001, 0.01)


class _Conflict(Exception):
    reason = "Conflict"


async def test_ring_is_bounded_and_writes_outside_reconciles_are_not_traced() -> None:
    """The ring keeps the newest ``capacity`` traces; a conflict is marked; a write made outside a
    reconcile is recorded nowhere; causes past the bound are counted, not kept."""
    tracer = tracing.Tracer(capacity=3)
    tracer.observe_write("create", "configmaps", "", "ns", "a", {"metadata": {"resourceVersion": "1"}}, None)
    req = runtime.Request("ns", "a")
    for i in range(tracing.MAX_TRIGGERS + 4):
        tracer.note("c", req, tracing.Trigger("Requeue", float(i)))
    for i in range(5):
        trace = tracer.begin("c", req, f"r{i}")
        token = tracing.CURRENT.set(trace)
        try:
            tracer.observe_write(
                "update", "configmaps", "", "ns", "a", None, _Conflict("the object has been modified")
            )
        finally:
            tracing.CURRENT.reset(token)
        tracer.end(trace, "Error", "conflict")
    kept = tracer.traces()
    assert [t.reconcile_id for t in kept] == ["r2", "r3", "r4"]
    first = tracer.query({"traceID": kept[0].trace_id})["items"]
    assert first[0]["writes"][0]["conflict"] is True and first[0]["writes"][0]["resourceVersion"] == ""
    assert all(len(t.writes) == 1 for t in kept)
    assert tracer.query({"limit": "2"})["items"][-1]["reconcileID"] == "r4"
    assert len(tracer.query({"limit": "2"})["items"]) == 2


async def test_reconciles_are_exported_as_opentelemetry_spans() -> None:
    """With a TracerProvider, each reconcile is a span with the trace's id, its triggers and writes
    as events, and an error status when it failed."""
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    tracer = tracing.Tracer(provider=provider)
    req = runtime.Request("ns", "a")
    tracer.note("c", req, tracing.Trigger("Requeue", 1.0))
    trace = tracer.begin("c", req, "r1")
    token = tracing.CURRENT.set(trace)
    try:
        tracer.observe_write(
            "create", "configmaps", "", "ns", "b", {"metadata": {"resourceVersion": "7"}}, None
        )
    finally:
        tracing.CURRENT.reset(token)
    tracer.end(trace, "Error", "boom")
    (span,) = exporter.get_finished_spans()
    assert span.name == "reconcile c"
    assert format(span.context.trace_id, "032x") == trace.trace_id
    assert [e.name for e in span.events] == ["trigger Requeue", "write create"]
    assert span.events[1].attributes["resourceVersion"] == "7"
    assert span.status.status_code.name == "ERROR"


def test_a_cause_says_how_the_event_led_to_the_request() -> None:
    """An event's cause names the handler's way to the request (the object itself, its owner, a
    mapping) and an informer resync (same resourceVersion) is told apart from a change."""
    from kplane.runtime import handler, source

    tracer = tracing.Tracer()
    added: list[runtime.Request] = []
    queue = tracing.TriggerQueue(type("Q", (), {"add": lambda self, r: added.append(r)})(), tracer, "c")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "resourceVersion": "5",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}
            ],
        },
    }
    handlers: list[tuple[handler.EventHandler, str]] = [
        (handler.EnqueueRequestForObject(), "object"),
        (handler.EnqueueRequestForOwner("apps", "ReplicaSet"), "owner"),
        (handler.as_handler(lambda obj: [runtime.Request("ns", "mapped")]), "map"),
    ]
    for h, via in handlers:
        adapter = source._Adapter(h, (), queue)
        adapter.on_add(pod, False)
        req = added[-1]
        (cause,) = tracer.begin("c", req, "r").triggers
        assert (cause.type, cause.via, cause.event, cause.kind, cause.resource_version) == (
            "Event", via, "ADDED", "Pod", "5"
        )  # fmt: skip
    adapter = source._Adapter(handler.EnqueueRequestForObject(), (), queue)
    adapter.on_update(pod, pod)
    adapter.on_add(pod, True)
    assert [t.type for t in tracer.begin("c", runtime.Request("ns", "p"), "r").triggers] == [
        "Resync",
        "InitialList",
    ]
