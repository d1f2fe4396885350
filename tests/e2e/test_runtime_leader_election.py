"""Leader election across manager processes on a real ``kplane serve``.

Only the leader reconciles; a killed leader is replaced once its lease runs out; a clean stop
(SIGTERM) releases the Lease at once, so the standby takes over within a retry period.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from kplane._util import clock
from kplane.client import dynamic, typed
from tests.e2e import conftest as e2e
from tests.e2e import runtime_support as rs

LEASES = dynamic.Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
LEASE_DURATION, RETRY_PERIOD = 3.0, 0.5


class Child:
    """One manager process; its stdout lines arrive on ``lines``."""

    def __init__(self, server: e2e.Server, identity: str, namespace: str) -> None:
        self.identity = identity
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.runtime_le_child", str(server.kubeconfig), identity, namespace],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def wait_for(self, text: str, timeout: float = 20.0) -> float:
        """Block until a line equal to ``text`` arrives; the monotonic time it was read."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"{self.identity}: no {text!r} within {timeout}s; saw {self.seen}"
                ) from None
            self.seen.append(line)
            if line == text:
                return time.monotonic()

    def drain(self) -> list[str]:
        while not self.lines.empty():
            self.seen.append(self.lines.get_nowait())
        return self.seen

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[e2e.Server]:
    srv = e2e.start_server(tmp_path_factory.mktemp("kplane"), storage="memory")
    yield srv
    srv.stop()


@pytest.mark.slow
async def test_one_leader_failover_and_release(server: e2e.Server) -> None:
    """Only the leader reconciles; kill → takeover after the lease; SIGTERM → Lease released at once."""
    ns = f"le-{uuid.uuid4().hex[:6]}"
    async with typed.Client(rs.config(server)) as api:
        await api.dynamic.resource("namespaces").create({"metadata": {"name": ns}})
        leases = api.dynamic.resource(LEASES, ns)
        cms = api.dynamic.resource(CONFIGMAPS, ns)
        a = Child(server, "a", ns)
        children = [a]
        try:
            a.wait_for("LEADER")
            b = Child(server, "b", ns)
            children.append(b)
            await rs.eventually(lambda: _holder(leases, "a"))
            await cms.create({"metadata": {"name": "one"}})
            a.wait_for("RECONCILE one")

            async def stamped_by_a() -> None:
                cm = await cms.get("one")
                assert cm["metadata"]["annotations"]["reconciled-by"] == "a"

            await rs.eventually(stamped_by_a)
            assert not any(line.startswith("RECONCILE") for line in b.drain()), b.seen

            # A crash: the standby waits for the lease to expire, then leads and reconciles.
            a.proc.kill()
            killed = time.monotonic()
            took_over = b.wait_for("LEADER")
            b.wait_for("RECONCILE one")  # the new leader reconciles every existing object once
            # Upstream's bound: the standby notes the holder's last renewal at its next poll (at most
            # retry_period * 2.2 later, polls being jittered by 1 + rand * 1.2), treats the lease as held
            # for lease_duration from then, and acquires at the poll after that; plus slack for a busy host.
            failover = took_over - killed
            bound = LEASE_DURATION + 2 * 2.2 * RETRY_PERIOD + 1.5
            assert LEASE_DURATION - RETRY_PERIOD - 0.5 <= failover <= bound, failover

            # A clean stop: the Lease is released at once and the next standby leads within a retry.
            c = Child(server, "c", ns)
            children.append(c)
            await rs.eventually(lambda: _holder(leases, "b"))
            await clock.RealClock().sleep(1.0)  # c is now a standby that has observed b's lease
            b.proc.send_signal(signal.SIGTERM)
            stopped = time.monotonic()
            b.wait_for("STOPPED")
            lease = await leases.get("le-test")
            assert lease["spec"]["holderIdentity"] in ("", "c"), lease["spec"]
            handover = c.wait_for("LEADER") - stopped
            assert handover < LEASE_DURATION, handover
            print(
                f"lease {LEASE_DURATION}s: failover after kill {failover:.2f}s, after SIGTERM {handover:.2f}s"
            )
            assert b.proc.wait(10) == 0
        finally:
            for child in children:
                child.stop()


async def _holder(leases: dynamic.DynamicResourceClient, identity: str) -> None:
    lease = await leases.get("le-test")
    assert lease["spec"]["holderIdentity"] == identity, lease["spec"]
