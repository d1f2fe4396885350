"""An in-process kplane server for tests: ``ControlPlane`` (same event loop) and ``ThreadedControlPlane``.

Design note. envtest starts etcd and kube-apiserver binaries (seconds). Here the real kplane server
(``kplane.server.launch``, the same start-up as ``kplane serve``) runs inside the test process with
memory storage on a free loopback port, over HTTPS with the admin credentials ``kplane serve``
writes, so clients, ``kubectl`` and the ``kubernetes`` package all reach it as they would a cluster.

Two ways to host it, one implementation:

* ``ControlPlane`` runs in the caller's event loop (``async with``). Requests, watches and the code
  under test interleave on one loop: no thread hand-offs, no GIL contention between two loops, and
  the order of events is decided by the loop alone, which makes runs reproducible and fault plans
  replayable. A test must then never block the loop (a blocking client call would deadlock), and
  the server lives only as long as the loop (pytest-asyncio: one per test by default, ~0.1 s each).
* ``ThreadedControlPlane`` runs the same ``ControlPlane`` on a private loop in a daemon thread
  (``with``; the loop runner of ``kplane.client.sync``). Use it from synchronous tests, blocking
  clients (``kplane.client.sync``, ``kubectl``, the ``kubernetes`` package) and for one server
  shared by a whole session across test loops.
  Interleaving with the test is then up to the OS scheduler.

The PKI (CA, serving and admin certificates) is reused between servers and runs from a per-user
cache directory (``$KPLANE_TESTING_DIR``, else ``$XDG_CACHE_HOME/kplane/testing``, else
``~/.cache/kplane/testing``), so only the first start ever pays for key generation. Each server
writes its own admin kubeconfig into a private temporary directory removed on exit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Coroutine, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from kplane._util import clock as clock_mod
from kplane.client import config as config_mod
from kplane.client import sync, typed
from kplane.server import launch
from kplane.testing import crds as crds_mod
from kplane.testing import faults as faults_mod

T = TypeVar("T")

CrdSource = crds_mod.CrdSource


def default_state_dir() -> Path:
    """Where the reusable test PKI lives (see the module docstring)."""
    explicit = os.environ.get("KPLANE_TESTING_DIR")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "kplane" / "testing"


class ControlPlane:
    """A kplane server in this event loop; ``async with ControlPlane() as cp:``.

    On entry the server listens on a free 127.0.0.1 port, ``crds`` are installed and established,
    and ``cp.client`` (a ``kplane.client.Client``, closed on exit) is ready. ``cp.config`` is the
    admin client ``Config`` (no client-side rate limit), ``cp.kubeconfig`` the admin kubeconfig
    file, ``cp.url`` the HTTPS URL, ``cp.server`` the ``APIServer`` itself (white-box access).

    ``faults`` (a ``FaultPlan``) is installed as a server filter: every authenticated request passes
    it. ``clock`` is the server's clock (default real; a ``FakeClock`` shared with the code under
    test moves timestamps and watch timers with it). ``state_dir`` holds the reusable PKI.

    No built-in controller runs (as envtest): a deleted namespace stays ``Terminating``, owners
    do not take their dependents with them. Run ``kplane.controllers.install`` on a manager
    against ``cp.config`` for that.
    """

    def __init__(
        self,
        *,
        crds: Iterable[CrdSource] = (),
        faults: faults_mod.FaultPlan | None = None,
        clock: clock_mod.Clock | None = None,
        state_dir: Path | None = None,
        history_window: int = 10_000,
        watch_bookmark_interval: float = 60.0,
        schema_validation: bool = True,
    ) -> None:
        self.faults = faults
        self._crds = list(crds)
        self._clock = clock or clock_mod.RealClock()
        self._state_dir = state_dir or default_state_dir()
        self._history_window = history_window
        self._bookmark_interval = watch_bookmark_interval
        self._schema_validation = schema_validation
        self._tmp: str | None = None
        self._server: Any = None
        self._client: typed.Client | None = None
        self.config: config_mod.Config | None = None

    # Lifecycle.

    async def start(self) -> None:
        """Start the server, open ``client``, install the CRDs; on failure nothing is left running."""
        # Loaded on first start (the server's modules are not needed to import kplane.testing).
        # aiohttp itself is already imported by the client stack, with the process's CA settings
        # untouched: this is the user's test process, not a server's.
        from kplane.server.serverconfig import ServerConfig

        self._tmp = tempfile.mkdtemp(prefix="kplane-testing-")
        try:
            self._server = await launch.launch(
                ServerConfig(
                    data_dir=self._state_dir,
                    port=0,
                    storage="memory",
                    kubeconfig_path=Path(self._tmp) / "kubeconfig",
                    history_window=self._history_window,
                    watch_bookmark_interval=self._bookmark_interval,
                    schema_validation=self._schema_validation,
                    clock=self._clock,
                    filters=(self.faults.filter,) if self.faults is not None else (),
                    # A test's server is thrown away: open watches must not hold its stop up.
                    shutdown_timeout=0.05,
                )
            )
            self.config = dataclasses.replace(config_mod.Config.from_kubeconfig(self.kubeconfig), qps=0.0)
            self._client = typed.Client(self.config)
            if self._crds:
                await self.install_crds(*self._crds)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Close the client, stop the server, remove the kubeconfig. Idempotent."""
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._server is not None:
            await self._server.stop()
            self._server = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    async def __aenter__(self) -> ControlPlane:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # What tests use.

    @property
    def client(self) -> typed.Client:
        """The admin ``Client`` opened in this loop (typed, dynamic, discovery, mapper, rest)."""
        if self._client is None:
            raise RuntimeError("the control plane is not running")
        return self._client

    @property
    def server(self) -> Any:
        """The running ``kplane.server.app.APIServer`` (its storage, registry and catalog)."""
        if self._server is None:
            raise RuntimeError("the control plane is not running")
        return self._server

    @property
    def url(self) -> str:
        return str(self.server.url)

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (context ``kplane``, namespace ``default``); valid while running."""
        return Path(self.server.kubeconfig_path)

    async def install_crds(
        self,
        *sources: CrdSource,
        timeout: float = 10.0,  # noqa: ASYNC109 - a bound on polling, reported by eventually
    ) -> list[dict[str, Any]]:
        """Create (or replace) CRDs and wait until each is Established and served by discovery.

        A source is a CRD dict, a YAML file (several documents allowed; non-CRD documents are
        refused), or a directory whose ``*.yaml``/``*.yml``/``*.json`` files are read in name order.
        Returns the CRDs as the server stored them.
        """
        return await crds_mod.install(self.client, crds_mod.load(sources), timeout=timeout)


class ThreadedControlPlane:
    """A ``ControlPlane`` on its own event loop in a daemon thread; ``with ThreadedControlPlane() as cp:``.

    Same arguments and attributes as ``ControlPlane`` except ``client`` (a client belongs to one
    loop: open your own on ``cp.config`` in yours). ``install_crds`` blocks until done.
    """

    def __init__(self, **options: Any) -> None:
        self._plane = ControlPlane(**options)
        self._runner: sync.Runner | None = None

    def start(self) -> None:
        self._runner = sync.Runner()
        try:
            self._runner.run(self._plane.start())
        except BaseException:
            self._runner.stop()
            self._runner = None
            raise

    def stop(self) -> None:
        """Stop the server and its thread. Idempotent."""
        if self._runner is None:
            return
        try:
            self._runner.run(self._plane.stop())
            self._runner.run(_cancel_other_tasks())
        finally:
            self._runner.stop()
            self._runner = None

    def __enter__(self) -> ThreadedControlPlane:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def config(self) -> config_mod.Config:
        assert self._plane.config is not None, "the control plane is not running"
        return self._plane.config

    @property
    def url(self) -> str:
        return self._plane.url

    @property
    def kubeconfig(self) -> Path:
        return self._plane.kubeconfig

    @property
    def server(self) -> Any:
        return self._plane.server

    @property
    def faults(self) -> faults_mod.FaultPlan | None:
        return self._plane.faults

    def install_crds(self, *sources: CrdSource, timeout: float = 10.0) -> list[dict[str, Any]]:
        """``ControlPlane.install_crds``, run on the server's loop; blocks until done."""
        return self._call(self._plane.install_crds(*sources, timeout=timeout))

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the server's loop (e.g. with ``server`` internals) and return its result."""
        return self._call(coro)

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._runner is None:
            coro.close()
            raise RuntimeError("the control plane is not running")
        return self._runner.run(coro)


async def _cancel_other_tasks() -> None:
    """Cancel and await what the stopped server left in its loop, so closing the loop strands nothing."""
    current = asyncio.current_task()
    rest = [t for t in asyncio.all_tasks() if t is not current]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)
