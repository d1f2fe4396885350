"""The Manager: one shared cache, one client, metrics, probes, leader election, and what runs on them.

Start order (controller-runtime's ``runnableGroup`` order, reference/controllers.md §6.1):

1. HTTP servers: ``/metrics`` and the ``/healthz`` + ``/readyz`` probes (listening before anything);
2. webhook servers (runnables with ``runnable_group = "webhooks"``: they must serve before caches
   sync, or a conversion webhook would deadlock the initial list);
3. caches: every informer created so far starts, and the manager waits until all have synced;
4. runnables that do not need leader election (``need_leader_election()`` returning False);
5. leader election (when enabled); once elected (at once without it), the leader-only runnables,
   which is every controller unless its options say otherwise.

Stopping (cancelling ``start``, or SIGTERM/SIGINT under ``run``) goes in reverse: controllers
finish the reconciles in flight and take no more, then the Lease is released (kplane releases on a
clean stop, so a standby takes over at once; see ``kplane.client.leaderelection``), then the
others, caches, webhooks and HTTP servers stop; all within ``graceful_shutdown_timeout``. A lost
lease ends ``start`` with ``LeaderElectionLost`` and no grace: the process should exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import pathlib
import signal
from collections.abc import Coroutine
from typing import Any, Protocol

from kplane._util import clock as clock_mod
from kplane.client import config as config_mod
from kplane.client import dynamic, events, leaderelection
from kplane.client import typed as typed_mod
from kplane.informers import factory as factory_mod
from kplane.runtime import cache as cache_mod
from kplane.runtime import client as client_mod
from kplane.runtime import controller as controller_mod
from kplane.runtime import metrics as metrics_mod
from kplane.runtime import serving, tracing
from kplane.runtime.options import ManagerOptions
from kplane.runtime.webhook import server as webhook_server

log = logging.getLogger("kplane.runtime.manager")

LEASES = dynamic.Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
EVENTS = dynamic.Resource("", "v1", "events", "Event", namespaced=True)


class Runnable(Protocol):
    """Something the manager runs: ``start`` blocks until done or cancelled (cancellation = stop).

    Optional: ``need_leader_election() -> bool`` (default True: only the leader runs it), and
    ``runnable_group = "webhooks"`` for servers that must serve before the caches sync, with
    ``async wait_ready()`` returning once they accept requests (the manager waits for it).
    """

    async def start(self) -> None: ...


class LeaderElectionLost(Exception):
    """This manager lost its Lease; work it started may still run elsewhere: exit."""


class Manager:
    """Builds the shared cache and client for ``config`` and runs what is added to it."""

    def __init__(
        self,
        config: config_mod.Config | None = None,
        options: ManagerOptions | None = None,
        *,
        api: typed_mod.Client | None = None,
        clock: clock_mod.Clock | None = None,
    ) -> None:
        self.options = opts = options or ManagerOptions()
        self.clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self.api = api or typed_mod.Client(config or config_mod.Config.load())
        self.metrics = metrics_mod.Metrics(process=opts.process_metrics)
        self.api.rest.observer = self.metrics.observe_request
        self.tracer: tracing.Tracer | None = None
        if opts.reconcile_traces > 0:
            self.tracer = tracing.Tracer(
                capacity=opts.reconcile_traces, clock=self.clock, provider=opts.tracer_provider
            )
            self.api.rest.write_observer = self.tracer.observe_write
        self.cache = cache_mod.Cache(
            self.api.dynamic,
            factory_mod.FactoryOptions(namespace=opts.namespace, default_resync=opts.sync_period),
            clock=self.clock,
            sync_timeout=opts.cache_sync_timeout,
        )
        self.client = client_mod.Client(self.cache, self.api, field_manager=opts.field_manager)
        self.healthz: dict[str, serving.Check] = {"ping": _ping}
        self.readyz: dict[str, serving.Check] = {"cache": self._check_cache}
        self.elected = asyncio.Event()
        self.servers: dict[str, serving.HTTPServer] = {}
        self._runnables: list[Runnable] = []
        self._controller_names: set[str] = set()
        self._recorders: list[events.EventRecorder] = []
        self._failure: asyncio.Future[BaseException] | None = None
        self._elector: leaderelection.LeaderElector | None = None
        self._webhook_server: webhook_server.WebhookServer | None = None
        self._apis: list[typed_mod.Client] = []

    # Assembly.

    def add(self, runnable: Runnable) -> None:
        """Run ``runnable`` in its group when the manager starts (see the module docstring)."""
        if isinstance(runnable, controller_mod.Controller):
            name = runnable.name
            if name in self._controller_names and not self.options.skip_name_validation:
                raise ValueError(f"controller with name {name} already exists")
            self._controller_names.add(name)
        self._runnables.append(runnable)

    def webhook_server(self) -> webhook_server.WebhookServer:
        """The manager's webhook server (``options.webhook``), created and added on first use."""
        if self._webhook_server is None:
            self._webhook_server = webhook_server.WebhookServer(
                self.options.webhook, metrics=self.metrics, clock=self.clock
            )
            self.add(self._webhook_server)
        return self._webhook_server

    def event_recorder(self, name: str) -> events.EventRecorder:
        """An Event recorder reporting as component ``name`` (flushed when the manager stops)."""
        recorder = events.EventRecorder(
            self.api.dynamic.resource(EVENTS), events.EventSource(name), clock=self.clock
        )
        self._recorders.append(recorder)
        return recorder

    def with_api(self, api: typed_mod.Client) -> Manager:
        """A view of this manager whose own requests go through ``api`` (another identity): its
        ``api``, its ``client`` (which still reads from the shared cache) and its event recorders
        use ``api``; the cache, clock, metrics, tracer, servers and what runs are this manager's
        (``add`` on the view adds here; the view itself is never started). As upstream's
        kube-controller-manager with ``--use-service-account-credentials``: shared informers under
        the manager's identity, each controller's requests under its own. ``close`` closes ``api``.
        """
        self.adopt(api)
        view = copy.copy(self)
        view.api = api
        view.client = client_mod.Client(self.cache, api, field_manager=self.options.field_manager)
        return view

    def adopt(self, api: typed_mod.Client) -> None:
        """Count ``api``'s requests in this manager's metrics and traces, and close it with the
        manager's (``close``)."""
        api.rest.observer = self.metrics.observe_request
        if self.tracer is not None:
            api.rest.write_observer = self.tracer.observe_write
        self._apis.append(api)

    async def close(self) -> None:
        """Close the manager's client and those of its ``with_api`` views (after it stopped)."""
        for api in (self.api, *self._apis):
            await api.close()

    def is_leader(self) -> bool:
        """True while this manager runs the leader-only runnables."""
        return self.elected.is_set()

    # Running.

    async def run(self) -> None:
        """``start`` until SIGTERM or SIGINT, then stop gracefully (the usual ``main``)."""
        loop = asyncio.get_running_loop()
        task = loop.create_task(self.start())
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    async def start(self) -> None:
        """Start everything in order and run until cancelled or until a runnable fails."""
        loop = asyncio.get_running_loop()
        self._failure = loop.create_future()
        groups: list[list[asyncio.Task[None]]] = []  # in start order; stopped in reverse
        lost = False
        try:
            await self._start_http()
            webhooks = [r for r in self._runnables if _group(r) == "webhooks"]
            groups.append(self._spawn(webhooks))
            await self._wait_ready(webhooks)
            await self.cache.start()
            log.info("caches synced")
            groups.append(self._spawn(r for r in self._runnables if _group(r) == "others"))
            leaders = [r for r in self._runnables if _group(r) == "leader"]
            if self.options.leader_election:
                groups.append([loop.create_task(self._supervise(self._elect(leaders)))])
            else:
                groups.append(self._spawn(leaders))
                self.elected.set()
            err = await self._failure
            lost = isinstance(err, LeaderElectionLost)
            raise err
        finally:
            await self._stop(groups, grace=0.0 if lost else self.options.graceful_shutdown_timeout)

    async def _start_http(self) -> None:
        opts = self.options
        if opts.metrics_bind_address != "0":
            self.servers["metrics"] = serving.HTTPServer(
                opts.metrics_bind_address,
                serving.metrics_app(
                    self.metrics.exposition, traces=self.tracer.query if self.tracer is not None else None
                ),
            )
        if opts.health_probe_bind_address not in ("", "0"):
            self.servers["probes"] = serving.HTTPServer(
                opts.health_probe_bind_address, serving.probes_app(self.healthz, self.readyz)
            )
        for server in self.servers.values():
            await server.listen()
            log.info("serving %s", server.url)

    async def _wait_ready(self, runnables: list[Runnable]) -> None:
        """Wait for runnables that can say when they serve (``wait_ready``), e.g. webhook servers."""
        async with asyncio.timeout(self.options.cache_sync_timeout):
            for runnable in runnables:
                wait_ready = getattr(runnable, "wait_ready", None)
                if wait_ready is not None:
                    await wait_ready()

    def _spawn(self, runnables: Any) -> list[asyncio.Task[None]]:
        loop = asyncio.get_running_loop()
        return [loop.create_task(self._supervise(r.start())) for r in runnables]

    async def _supervise(self, coro: Coroutine[Any, Any, None]) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.error("runnable failed: %s", err, exc_info=err)
            self._fail(err)

    def _fail(self, err: BaseException) -> None:
        if self._failure is not None and not self._failure.done():
            self._failure.set_result(err)

    async def _elect(self, leaders: list[Runnable]) -> None:
        opts = self.options
        if not opts.leader_election_id:
            raise ValueError("leader_election_id must be configured")
        namespace = opts.leader_election_namespace or _in_cluster_namespace()
        lock = leaderelection.LeaseLock(
            self.api.dynamic.resource(LEASES, namespace),
            namespace=namespace,
            name=opts.leader_election_id,
            identity=opts.leader_election_identity,
        )
        gauge = self.metrics.leader.labels(opts.leader_election_id)

        async def lead() -> None:
            self.elected.set()
            gauge.set(1)
            try:
                await asyncio.gather(*self._spawn(leaders))
                await asyncio.Future()  # lead until cancelled, even when every runnable returned
            finally:
                self.elected.clear()
                gauge.set(0)

        self._elector = leaderelection.LeaderElector(
            lock,
            leaderelection.LeaderCallbacks(on_started_leading=lead),
            leaderelection.LeaderElectionConfig(
                lease_duration=opts.lease_duration,
                renew_deadline=opts.renew_deadline,
                retry_period=opts.retry_period,
                release_on_cancel=opts.leader_election_release_on_cancel,
                name=opts.leader_election_id,
            ),
            clock=self.clock,
        )
        await self._elector.run()
        self._fail(LeaderElectionLost("leader election lost"))

    async def _stop(self, groups: list[list[asyncio.Task[None]]], *, grace: float) -> None:
        log.info("stopping")
        try:
            async with asyncio.timeout(None if grace < 0 else grace):
                for tasks in reversed(groups):
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                for recorder in self._recorders:
                    await recorder.aclose()
        except TimeoutError:
            if grace > 0:
                log.error("failed waiting for all runnables to end within grace period of %ss", grace)
            every = [task for tasks in groups for task in tasks]
            for task in every:
                task.cancel()
            await asyncio.gather(*every, return_exceptions=True)
        await self.cache.stop()
        for server in self.servers.values():
            await server.close()
        log.info("stopped")

    # Probes.

    def _check_cache(self) -> None:
        if not self.cache.has_synced():
            raise RuntimeError("informers not synced")
        stopped = self.cache.stopped_informers()
        if stopped:
            raise RuntimeError(f"informers not running: {', '.join(stopped)}")
        grace = self.options.watch_failure_grace
        failing = self.cache.failing_informers(grace)
        if failing:
            raise RuntimeError(
                f"informers failing to list and watch for over {grace:g}s: {', '.join(failing)}"
            )


def _group(runnable: Runnable) -> str:
    group = getattr(runnable, "runnable_group", "")
    if group:
        return str(group)
    need = getattr(runnable, "need_leader_election", None)
    if need is not None and not need():
        return "others"
    return "leader"


def _ping() -> None:
    return None


def _in_cluster_namespace() -> str:
    """The pod's namespace, where the Lease goes when no namespace is configured (upstream's
    ``getInClusterNamespace``, with its messages)."""
    path = pathlib.Path(config_mod.SERVICE_ACCOUNT_DIR) / "namespace"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        reason = "not running in-cluster, please specify leader_election_namespace"
    except OSError as err:
        reason = f"error reading namespace file: {err}"
    raise ValueError(f"unable to find leader election namespace: {reason}")
