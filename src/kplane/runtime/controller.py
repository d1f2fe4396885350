"""The controller: a work queue of requests, the sources that fill it, and workers that reconcile.

Level-based by construction. Sources add ``Request``s (names, never events) to a deduplicating
queue that never hands one request to two workers at once; so any number of events about an object
while it is queued become one reconcile, and events arriving *during* its reconcile become exactly
one more. ``start`` runs controller-runtime's sequence: start every source, wait (bounded by
``cache_sync_timeout``) until each has delivered the objects that existed at start (so each is
reconciled once), then run ``max_concurrent_reconciles`` workers until cancelled.

Stopping (cancelling ``start``): the queue is shut down, workers finish the reconcile they are in and
take no more; ``start`` returns when they have. A second cancellation abandons them.

The requeue policy is ``Controller.handle_outcome``, one ``match`` over what the reconciler did.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Sequence
from typing import Any

from kplane._util import clock as clock_mod
from kplane.runtime import handler as handler_mod
from kplane.runtime import log as log_mod
from kplane.runtime import metrics as metrics_mod
from kplane.runtime import reconcile, tracing
from kplane.runtime import source as source_mod
from kplane.workqueue import metrics as queue_metrics
from kplane.workqueue import queue as queue_mod
from kplane.workqueue import rate_limiters, rate_limiting

_RECONCILE_LOG = logging.getLogger("kplane.runtime.reconcile")  # looked up once, not per reconcile


class CacheSyncTimeout(Exception):
    """A source did not deliver its initial objects within ``cache_sync_timeout``."""


@dataclasses.dataclass(frozen=True)
class ControllerOptions:
    """How one controller runs (controller-runtime's ``controller.Options`` defaults).

    ``rate_limiter`` paces retries of failed requests; the default is controller-runtime's for the
    client-go queue: per item 5 ms doubling to 1000 s, and overall 10 retries/s with a burst of 100.
    ``reconciliation_timeout`` (0: none) bounds each reconcile; a timeout counts as an error.
    ``need_leader_election`` False runs the controller on every replica, leader or not.
    """

    max_concurrent_reconciles: int = 1
    rate_limiter: rate_limiters.RateLimiter[Any] | None = None
    cache_sync_timeout: float = 120.0
    reconciliation_timeout: float = 0.0
    need_leader_election: bool = True

    def __post_init__(self) -> None:
        if self.max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")


class Controller:
    """Reconciles the requests its sources produce. Build it with ``kplane.runtime.Builder``."""

    def __init__(
        self,
        name: str,
        reconciler: reconcile.Reconciler | reconcile.ReconcileFunc,
        options: ControllerOptions | None = None,
        *,
        metrics: metrics_mod.Metrics | None = None,
        clock: clock_mod.Clock | None = None,
        tracer: tracing.Tracer | None = None,
    ) -> None:
        self.name = name
        self.tracer = tracer
        self.options = options or ControllerOptions()
        self._reconcile = reconcile.as_reconcile_func(reconciler)
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        provider: queue_metrics.MetricsProvider = (
            metrics.queue_provider if metrics is not None else queue_metrics.NoopMetricsProvider()
        )
        self.queue: rate_limiting.RateLimitingQueue[reconcile.Request] = rate_limiting.RateLimitingQueue(
            name,
            rate_limiter=self.options.rate_limiter
            or rate_limiters.default_controller_rate_limiter(clock=self._clock),
            clock=self._clock,
            metrics_provider=provider,
        )
        self._metrics = (metrics or metrics_mod.Metrics()).controller(
            name, self.options.max_concurrent_reconciles
        )
        self._sources: list[source_mod.Source] = []
        self._started = False
        self._stopping = False
        self.log = log_mod.bind(logging.getLogger("kplane.runtime.controller"), controller=name)

    def need_leader_election(self) -> bool:
        return self.options.need_leader_election

    def watch(self, source: source_mod.Source) -> None:
        """Add a source; only before ``start``."""
        if self._started:
            raise RuntimeError(f"controller {self.name}: watch after start")
        self._sources.append(source)

    @property
    def sources(self) -> Sequence[source_mod.Source]:
        return tuple(self._sources)

    async def start(self) -> None:
        """Start sources, wait for their initial lists, reconcile until cancelled (module docstring)."""
        if self._started:
            raise RuntimeError(f"controller {self.name} was already started")
        self._started = True
        feed: handler_mod.RequestQueue = self.queue
        if self.tracer is not None:
            feed = tracing.TriggerQueue(self.queue, self.tracer, self.name)
        for src in self._sources:
            await src.start(feed)
        await self._wait_for_sources()
        self.log.info("starting workers", extra={"workers": self.options.max_concurrent_reconciles})
        loop = asyncio.get_running_loop()
        workers = [
            loop.create_task(self._worker(), name=f"{self.name}-worker-{i}")
            for i in range(self.options.max_concurrent_reconciles)
        ]
        try:
            await asyncio.wait(workers)  # unlike gather, cancelling this wait leaves the workers running
        finally:
            self._stopping = True
            self.queue.shutdown()
            try:
                await asyncio.wait(workers)
            finally:  # cancelled again: abandon the reconciles in flight
                for worker in workers:
                    worker.cancel()
            self.log.info("all workers finished")

    async def _wait_for_sources(self) -> None:
        try:
            async with asyncio.timeout(self.options.cache_sync_timeout):
                while not all(src.has_synced() for src in self._sources):
                    await self._clock.sleep(0.01)
        except TimeoutError:
            pending = [str(src) for src in self._sources if not src.has_synced()]
            raise CacheSyncTimeout(f"timed out waiting for cache to be synced for {pending}") from None

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                req = await queue.get()
            except queue_mod.ShutDown:
                return
            try:
                if not self._stopping:
                    await self.reconcile_handler(req)
            finally:
                queue.done(req)

    async def reconcile_handler(self, req: reconcile.Request) -> None:
        """One pass for ``req``: call the reconciler, then apply the requeue policy to its outcome.
        With a tracer, the pass is traced (``tracing``) and its logger carries the ``traceID``."""
        reconcile_id = new_reconcile_id()
        trace = self.tracer.begin(self.name, req, reconcile_id) if self.tracer is not None else None
        fields = {
            "controller": self.name,
            "namespace": req.namespace,
            "name": req.name,
            "reconcileID": reconcile_id,
        }
        if trace is not None:
            fields["traceID"] = trace.trace_id
        log = log_mod.bind(_RECONCILE_LOG, **fields)
        token = log_mod.set_current(log)
        trace_token = tracing.CURRENT.set(trace) if trace is not None else None
        m = self._metrics
        m.active_workers.inc()
        started = self._clock.monotonic()
        outcome: reconcile.Result | BaseException
        try:
            timeout = self.options.reconciliation_timeout
            if timeout > 0:
                async with asyncio.timeout(timeout):
                    outcome = await self._reconcile(req) or reconcile.Result()
            else:  # no timer to arm and cancel on every pass
                outcome = await self._reconcile(req) or reconcile.Result()
        except TimeoutError as err:
            m.timeouts.inc()
            outcome = err
        except Exception as err:
            outcome = err
        finally:
            m.active_workers.dec()
            m.time.observe(self._clock.monotonic() - started)
            log_mod.reset_current(token)
            if trace_token is not None:
                tracing.CURRENT.reset(trace_token)
        result = self.handle_outcome(req, outcome, log)
        if trace is not None and self.tracer is not None:
            self.tracer.end(trace, result, str(outcome) if isinstance(outcome, BaseException) else "")

    def handle_outcome(
        self,
        req: reconcile.Request,
        outcome: reconcile.Result | BaseException,
        log: logging.LoggerAdapter[logging.Logger],
    ) -> str:
        """The requeue policy (controller-runtime's ``reconcileHandler``), counted and logged;
        returns the outcome's name (``Success``, ``Requeue``, ``RequeueAfter``, ``Error``,
        ``TerminalError``). A requeue is noted as the cause of the next reconcile when tracing."""
        queue, m = self.queue, self._metrics
        match outcome:
            case BaseException() if _is_terminal(outcome):
                # No requeue and no forget: the backoff persists until a later success.
                m.total["error"].inc()
                m.errors.inc()
                m.terminal_errors.inc()
                log.error("terminal reconciler error: %s", outcome, exc_info=outcome)
                return "TerminalError"
            case BaseException():
                self._note(req, "Retry")
                queue.add_rate_limited(req)
                m.total["error"].inc()
                m.errors.inc()
                log.error("reconciler error: %s", outcome, exc_info=outcome)
                return "Error"
            case reconcile.Result(requeue_after=delay) if delay > 0:
                self._note(req, "RequeueAfter", delay)
                queue.forget(req)
                queue.add_after(req, delay)
                m.total["requeue_after"].inc()
                return "RequeueAfter"
            case reconcile.Result(requeue=True):
                self._note(req, "Requeue")
                queue.add_rate_limited(req)
                m.total["requeue"].inc()
                return "Requeue"
            case _:
                queue.forget(req)
                m.total["success"].inc()
                return "Success"

    def _note(self, req: reconcile.Request, kind: str, after: float = 0.0) -> None:
        if self.tracer is not None:
            self.tracer.note(self.name, req, tracing.Trigger(kind, self.tracer.now(), after=after))


def new_reconcile_id() -> str:
    """A random version-4 UUID in its text form (what ``str(uuid.uuid4())`` gives, from the
    process's PRNG instead of the OS's: an identifier for logs and traces, not a secret; a third
    of the cost on the per-reconcile path)."""
    n = (random.getrandbits(128) & ~(0xF000 << 64) & ~(0xC000 << 48)) | (0x4000 << 64) | (0x8000 << 48)
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _is_terminal(err: BaseException) -> bool:
    """True if ``err`` or an exception it was raised from is a ``TerminalError`` (Go's errors.Is)."""
    seen: set[int] = set()
    cur: BaseException | None = err
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, reconcile.TerminalError):
            return True
        seen.add(id(cur))
        cur = cur.__cause__
    return False
