"""The controller's requeue policy and level-based queueing, on a fake clock (no server)."""

from __future__ import annotations

import asyncio
import io
import logging
import uuid

import orjson
import pytest

from kplane._util import clock as clock_mod
from kplane.runtime import controller as controller_mod
from kplane.runtime import log as log_mod
from kplane.runtime import metrics as metrics_mod
from kplane.runtime import reconcile

REQ = reconcile.Request("ns", "a")
LOG = logging.LoggerAdapter(logging.getLogger("test"), {})


def _controller(clock: clock_mod.FakeClock, metrics: metrics_mod.Metrics) -> controller_mod.Controller:
    async def noop(req: reconcile.Request) -> None:
        return None

    return controller_mod.Controller("c", noop, metrics=metrics, clock=clock)


def _count(metrics: metrics_mod.Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, {"controller": "c", **labels})
    return value or 0.0


@pytest.mark.parametrize(
    ("outcome", "result", "queued_now", "waiting", "requeues"),
    [
        (reconcile.Result(), "success", 0, 0, 0),
        (reconcile.Result(requeue_after=30.0), "requeue_after", 0, 1, 0),
        (reconcile.Result(requeue=True), "requeue", 0, 1, 1),
        (RuntimeError("boom"), "error", 0, 1, 1),
        (reconcile.TerminalError("bad spec"), "error", 0, 0, 0),
    ],
    ids=["success", "requeue-after", "requeue", "error", "terminal"],
)
async def test_requeue_policy(
    outcome: reconcile.Result | BaseException, result: str, queued_now: int, waiting: int, requeues: int
) -> None:
    """Each outcome gets controller-runtime's queue action and result label."""
    clock, metrics = clock_mod.FakeClock(), metrics_mod.Metrics()
    ctl = _controller(clock, metrics)
    ctl.handle_outcome(REQ, outcome, LOG)
    assert len(ctl.queue) == queued_now
    assert ctl.queue.waiting() == waiting
    assert ctl.queue.num_requeues(REQ) == requeues
    assert _count(metrics, "controller_runtime_reconcile_total", result=result) == 1
    terminal = isinstance(outcome, reconcile.TerminalError)
    assert _count(metrics, "controller_runtime_terminal_reconcile_errors_total") == (1 if terminal else 0)
    ctl.queue.shutdown()


async def test_requeue_after_resets_backoff() -> None:
    """requeue_after forgets earlier failures and brings the request back after the delay."""
    clock, metrics = clock_mod.FakeClock(), metrics_mod.Metrics()
    ctl = _controller(clock, metrics)
    ctl.handle_outcome(REQ, RuntimeError("x"), LOG)
    assert ctl.queue.num_requeues(REQ) == 1
    ctl.handle_outcome(REQ, reconcile.Result(requeue_after=5.0), LOG)
    assert ctl.queue.num_requeues(REQ) == 0
    clock.step(5.0)
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(ctl.queue) == 1
    ctl.queue.shutdown()


async def test_terminal_error_wrapped() -> None:
    """An error raised from a TerminalError counts as terminal (errors.Is semantics)."""
    clock, metrics = clock_mod.FakeClock(), metrics_mod.Metrics()
    ctl = _controller(clock, metrics)
    try:
        try:
            raise reconcile.TerminalError("invalid")
        except reconcile.TerminalError as inner:
            raise ValueError("wrapped") from inner
    except ValueError as err:
        ctl.handle_outcome(REQ, err, LOG)
    assert ctl.queue.waiting() == 0
    assert _count(metrics, "controller_runtime_terminal_reconcile_errors_total") == 1


async def test_events_during_reconcile_cause_exactly_one_more() -> None:
    """Adds while a request is being reconciled fold into exactly one more reconcile."""
    calls: list[reconcile.Request] = []
    gate, first = asyncio.Event(), asyncio.Event()

    async def slow(req: reconcile.Request) -> None:
        calls.append(req)
        first.set()
        if len(calls) == 1:
            await gate.wait()

    ctl = controller_mod.Controller("c", slow, metrics=metrics_mod.Metrics())
    task = asyncio.get_running_loop().create_task(ctl.start())
    ctl.queue.add(REQ)
    await first.wait()
    for _ in range(10):  # ten events while the first reconcile runs
        ctl.queue.add(REQ)
    gate.set()
    for _ in range(50):
        await asyncio.sleep(0)
    assert calls == [REQ, REQ]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_stop_drains_in_flight_reconcile() -> None:
    """Cancelling start lets the reconcile in progress finish and starts no new one."""
    started, finished = asyncio.Event(), []
    release = asyncio.Event()

    async def work(req: reconcile.Request) -> None:
        started.set()
        await release.wait()
        finished.append(req)

    ctl = controller_mod.Controller("c", work, metrics=metrics_mod.Metrics())
    task = asyncio.get_running_loop().create_task(ctl.start())
    ctl.queue.add(REQ)
    await started.wait()
    ctl.queue.add(reconcile.Request("ns", "b"))  # queued, never started
    task.cancel()
    await asyncio.sleep(0)
    assert not task.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == [REQ]


async def test_reconciler_protocol_and_function() -> None:
    """Both a Reconciler object and a plain async function are accepted."""

    class R:
        async def reconcile(self, request: reconcile.Request) -> reconcile.Result:
            return reconcile.Result()

    async def f(request: reconcile.Request) -> None:
        return None

    assert reconcile.as_reconcile_func(R()) is not None
    assert reconcile.as_reconcile_func(f) is f
    with pytest.raises(TypeError):
        reconcile.as_reconcile_func(42)  # type: ignore[arg-type]


async def test_reconcile_logs_carry_request_and_reconcile_id(caplog: pytest.LogCaptureFixture) -> None:
    """Framework and reconciler log lines of one pass share controller, namespace, name, reconcileID."""
    seen: list[dict[str, object]] = []

    async def failing(req: reconcile.Request) -> None:
        adapter = log_mod.logger()
        seen.append(dict(adapter.extra or {}))
        adapter.info("inside")
        raise RuntimeError("nope")

    ctl = controller_mod.Controller("c", failing, metrics=metrics_mod.Metrics(), clock=clock_mod.FakeClock())
    with caplog.at_level(logging.INFO, logger="kplane.runtime"):
        await ctl.reconcile_handler(REQ)
    inside = next(r for r in caplog.records if r.getMessage() == "inside")
    failed = next(r for r in caplog.records if r.getMessage().startswith("reconciler error: nope"))
    fields = inside.kv  # type: ignore[attr-defined]
    assert fields == failed.kv == seen[0]  # type: ignore[attr-defined]
    assert (fields["controller"], fields["namespace"], fields["name"]) == ("c", "ns", "a")
    assert len(str(fields["reconcileID"])) == 36
    line = log_mod.JSONFormatter().format(failed)
    assert '"reconcileID"' in line and '"name":"a"' in line and '"error":"Traceback' in line
    ctl.queue.shutdown()


@pytest.mark.parametrize("json", [False, True], ids=["key-value", "json"])
def test_configure_shows_the_bound_fields(json: bool) -> None:
    """``configure`` installs a handler whose lines carry the reconcile's fields (the default
    formatter, which ``logging.basicConfig`` gives, prints the message alone)."""
    root = logging.getLogger()
    saved = (root.level, root.handlers[:])
    out = io.StringIO()
    try:
        log_mod.configure(json=json, stream=out)
        log_mod.bind(controller="c", namespace="ns", name="a", reconcileID="r-1").info("reconciled %s", 2)
    finally:
        root.handlers[:] = saved[1]
        root.setLevel(saved[0])
    line = out.getvalue().strip()
    if json:
        assert orjson.loads(line) | {"ts": 0} == {
            "ts": 0, "level": "info", "logger": "kplane.runtime", "msg": "reconciled 2",
            "controller": "c", "namespace": "ns", "name": "a", "reconcileID": "r-1",
        }  # fmt: skip
    else:
        assert line.endswith(
            " INFO kplane.runtime reconciled 2 controller=c namespace=ns name=a reconcileID=r-1"
        )


def test_reconcile_ids_are_distinct_version_4_uuids() -> None:
    """Reconcile ids read as controller-runtime's: RFC 4122 version-4 UUIDs, never repeated."""
    ids = [controller_mod.new_reconcile_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids[:200]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
