"""Several ``kplane serve`` on one etcd: shared PKI, one another's writes, CRDs and controllers.

Three replicas share one etcd member and one PKI (``--pki-dir``); the second and third start at
the same time, so their bootstrap (namespaces, RBAC defaults, API objects) races and must not fail.
Skipped, saying so, where etcd is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kplane.server.storage.testing import etcd_process
from tests.e2e import helpers
from tests.e2e.conftest import Server, requires_etcd, requires_kubectl, start_server

pytestmark = requires_etcd


def start_replicas(
    root: Path, storage: str, n: int, *, controllers: bool = False, first: Server | None = None
) -> list[Server]:
    """``n`` servers on ``storage`` sharing the PKI of the first (started alone when not given)."""
    servers = [first or start_server(root / "r0", storage=storage, controllers=controllers)]
    pki = servers[0].data_dir / "pki"
    with ThreadPoolExecutor(n) as pool:
        futures = [
            pool.submit(
                start_server, root / f"r{i}", "--pki-dir", str(pki), storage=storage, controllers=controllers
            )
            for i in range(len(servers), n)
        ]
        servers.extend(f.result() for f in futures)
    return servers


@pytest.fixture(scope="module")
def replicas(
    etcd: etcd_process.EtcdCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Server]]:
    servers = start_replicas(tmp_path_factory.mktemp("kplane"), f"etcd://{etcd.endpoints[0]}", 3)
    yield servers
    for s in servers:
        s.stop()


def kube(server: Server) -> helpers.Kube:
    return helpers.Kube.from_kubeconfig(server.kubeconfig, server.data_dir / "e2e-pki")


def test_a_write_through_one_is_seen_by_a_watch_on_another(replicas: list[Server]) -> None:
    """Each replica's watch sees the writes made through the others, in order, and reads are
    consistent: a GET through B right after a write through A returns it."""
    a, b, c = (kube(s) for s in replicas)
    ns = helpers.unique("ns")
    a.ok("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    rv = b.ok("GET", f"/api/v1/namespaces/{ns}/configmaps")["metadata"]["resourceVersion"]
    stack = contextlib.ExitStack()
    watch_b = stack.enter_context(
        b.watch(f"/api/v1/namespaces/{ns}/configmaps", query={"resourceVersion": rv})
    )
    watch_c = stack.enter_context(
        c.watch(f"/api/v1/namespaces/{ns}/configmaps", query={"resourceVersion": rv})
    )
    written = []
    for i in range(10):
        server = (a, b, c)[i % 3]
        created = server.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", helpers.configmap(f"cm{i}", ns))
        written.append(created["metadata"]["resourceVersion"])
        other = (b, c, a)[i % 3]
        got = other.ok("GET", f"/api/v1/namespaces/{ns}/configmaps/cm{i}")
        assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    with stack:
        for w in (watch_b, watch_c):
            seen = []
            while len(seen) < 10:
                event = w.next()
                assert event is not None, f"watch ended after {seen}"
                seen.append(event["object"]["metadata"]["resourceVersion"])
            assert seen == written


@requires_kubectl
def test_a_crd_created_through_one_is_served_by_every_other(replicas: list[Server]) -> None:
    """The CRD catalog follows storage: B and C serve a CRD created through A, and its objects."""
    group = f"{helpers.unique('g')}.example.com"
    crd = helpers.open_crd(group, "Widget")
    kube(replicas[0]).ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    plural = crd["spec"]["names"]["plural"]
    version = crd["spec"]["versions"][0]["name"]
    obj = {"apiVersion": f"{group}/{version}", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"a": 1}}
    path = f"/apis/{group}/{version}/namespaces/default/{plural}"
    helpers.poll(lambda: kube(replicas[1]).post(path, obj).status == 201, timeout=15, interval=0.2)
    got = helpers.poll(
        lambda: replicas[2].kubectl("get", f"{plural}.{group}", "w1", "-o", "json", check=False).stdout,
        timeout=15,
        interval=0.2,
    )
    assert json.loads(got)["spec"] == {"a": 1}


def test_a_watch_resumes_on_another_replica_after_a_kill(
    etcd: etcd_process.EtcdCluster, tmp_path: Path
) -> None:
    """A client watching through a replica that is killed -9 resumes on another from its last
    resourceVersion: every write is seen once, none lost, none repeated; every acknowledged write
    (made through the killed replica while it lived) is present."""
    servers = start_replicas(tmp_path, f"etcd://{etcd.endpoints[0]}", 2)
    victim, survivor = servers
    # One client per replica, made before the writer thread starts: making one rewrites its PEM
    # files, which another thread's TLS handshake may be reading (an empty ca.pem fails it).
    victim_api, survivor_api = kube(victim), kube(survivor)
    try:
        ns = helpers.unique("ns")
        survivor_api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        path = f"/api/v1/namespaces/{ns}/configmaps"
        rv = victim_api.ok("GET", path)["metadata"]["resourceVersion"]
        acked: list[str] = []
        stop = threading.Event()

        def write() -> None:
            i = 0
            while not stop.is_set():
                target = victim_api if i % 2 else survivor_api
                try:
                    resp = target.post(path, helpers.configmap(f"cm{i:04}", ns), timeout=10)
                except OSError:
                    resp = None
                if resp is not None and resp.status == 201:
                    acked.append(f"cm{i:04}")
                i += 1

        writer = threading.Thread(target=write)
        writer.start()
        seen: list[str] = []
        last_rv = rv
        stack = contextlib.ExitStack()
        watch: Any = stack.enter_context(victim_api.watch(path, query={"resourceVersion": rv}))
        killed, moved = False, 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not killed and len(seen) >= 20:
                victim.stop(signal.SIGKILL)
                killed = True
            try:
                event = watch.next()
            except (OSError, AssertionError):
                if not killed:
                    raise
                event = None
            if event is None:
                assert killed, "the watch ended while its server lived"
                stack.close()
                moved += 1
                watch = stack.enter_context(survivor_api.watch(path, query={"resourceVersion": last_rv}))
                continue
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                seen.append(event["object"]["metadata"]["name"])
                last_rv = event["object"]["metadata"]["resourceVersion"]
            if killed and len(seen) >= 60:
                break
        stack.close()
        stop.set()
        writer.join(30)
        final = {o["metadata"]["name"] for o in survivor_api.ok("GET", path)["items"]}
        assert killed and moved >= 1, "the client never had to move"
        assert set(acked) <= final, f"acknowledged writes lost: {sorted(set(acked) - final)}"
        assert len(seen) == len(set(seen)), "an event was repeated"
        # Everything up to the last event seen arrived, in write order, without a gap.
        assert seen == sorted(seen)
        missing = sorted(n for n in final if seen[0] <= n <= seen[-1] and n not in seen)
        assert not missing, f"events lost across the move: {missing}"
    finally:
        for s in servers:
            s.stop()


@pytest.mark.slow
def test_controllers_run_once_across_replicas(etcd: etcd_process.EtcdCluster, tmp_path: Path) -> None:
    """With the built-in controllers on two replicas, one holds kube-system/kube-controller-manager
    and the Deployment's pods are made once; when it stops, the other takes over."""
    servers = start_replicas(tmp_path, f"etcd://{etcd.endpoints[0]}", 2, controllers=True)
    try:
        api = kube(servers[0])
        lease_path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
        lease = helpers.poll(
            lambda: api.get(lease_path).status == 200 and api.ok("GET", lease_path), timeout=30
        )
        holder = lease["spec"]["holderIdentity"]
        leader = next(i for i, s in enumerate(servers) if s.url in holder)
        name = helpers.unique("web")
        api.ok("POST", "/apis/apps/v1/namespaces/default/deployments", helpers.deployment(name, replicas=3))

        def pods() -> list[dict[str, Any]]:
            items: list[dict[str, Any]] = api.ok(
                "GET", "/api/v1/namespaces/default/pods", query={"labelSelector": f"app={name}"}
            )["items"]
            return items

        helpers.poll(lambda: len(pods()) == 3, timeout=30, interval=0.2)
        time.sleep(2)  # time for a second controller manager to (wrongly) act
        assert len(pods()) == 3
        rs = api.ok(
            "GET", "/apis/apps/v1/namespaces/default/replicasets", query={"labelSelector": f"app={name}"}
        )
        assert len(rs["items"]) == 1
        servers[leader].stop()  # SIGTERM: the leader releases its lease
        other = kube(servers[1 - leader])
        patch = {"spec": {"replicas": 5}}
        assert other.patch(f"/apis/apps/v1/namespaces/default/deployments/{name}", patch).status == 200
        helpers.poll(
            lambda: (
                len(
                    other.ok(
                        "GET", "/api/v1/namespaces/default/pods", query={"labelSelector": f"app={name}"}
                    )["items"]
                )
                == 5
            ),
            timeout=40,
            interval=0.5,
        )
        holder = other.ok("GET", lease_path)["spec"]["holderIdentity"]
        assert servers[1 - leader].url in holder
    finally:
        for s in servers:
            s.stop()


class _Proxy:
    """A TCP forwarder on a free loopback port to one replica at a time (what a load balancer in
    front of the replicas does): ``switch`` points new connections elsewhere."""

    def __init__(self, port: int) -> None:
        self.target = port
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._pipe, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()


async def test_an_informer_stays_exact_when_its_replica_dies(
    etcd: etcd_process.EtcdCluster, tmp_path: Path
) -> None:
    """An informer behind a forwarder to replica A: A is killed -9 while writes go on through B, the
    forwarder sends new connections to B; the informer's cache ends equal to the server's state
    and no handler saw an object go back in time or the same state twice."""
    from kplane.client import Client, Config
    from kplane.informers import FactoryOptions, HandlerFuncs, SharedInformerFactory, wait_for_cache_sync

    servers = await asyncio.to_thread(start_replicas, tmp_path, f"etcd://{etcd.endpoints[0]}", 2)
    victim, survivor = servers
    proxy = _Proxy(int(victim.url.rsplit(":", 1)[1]))
    await proxy.start()
    try:
        writer_api = kube(survivor)
        ns = helpers.unique("ns")
        await asyncio.to_thread(writer_api.ok, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        config = dataclasses.replace(
            Config.from_kubeconfig(victim.kubeconfig), host=f"https://127.0.0.1:{proxy.port}"
        )
        deliveries: dict[str, list[int]] = {}

        def record(obj: Any, new: Any = None) -> None:
            o = new if new is not None else obj
            deliveries.setdefault(o["metadata"]["name"], []).append(int(o["metadata"]["resourceVersion"]))

        async with Client(config) as client:
            factory = SharedInformerFactory(client.dynamic, FactoryOptions(namespace=ns))
            informer = await factory.informer("configmaps")
            handled = informer.add_event_handler(HandlerFuncs(add=record, update=record))
            factory.start()
            await wait_for_cache_sync(handled.has_synced)
            path = f"/api/v1/namespaces/{ns}/configmaps"
            for i in range(40):
                await asyncio.to_thread(writer_api.ok, "POST", path, helpers.configmap(f"cm{i:02}", ns))
                if i % 3 == 0:
                    patch = {"data": {"n": str(i)}}
                    await asyncio.to_thread(writer_api.patch, f"{path}/cm{i:02}", patch)
                if i == 15:
                    await asyncio.to_thread(victim.stop, signal.SIGKILL)
                    proxy.target = int(survivor.url.rsplit(":", 1)[1])
            truth = {
                o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                for o in (await asyncio.to_thread(writer_api.ok, "GET", path))["items"]
            }

            def cached() -> dict[str, str]:
                return {
                    o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.store.list()
                }

            for _ in range(300):  # up to 30 s
                if cached() == truth:
                    break
                await asyncio.sleep(0.1)
            assert cached() == truth
            await factory.shutdown()
        for name, rvs in deliveries.items():
            assert rvs == sorted(set(rvs)), f"{name}: states delivered out of order or twice: {rvs}"
    finally:
        await proxy.close()
        for s in servers:
            await asyncio.to_thread(s.stop)
