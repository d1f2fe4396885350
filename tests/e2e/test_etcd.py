"""``kplane serve --storage etcd://...``: a real server on a real etcd (one member, on loopback).

Skipped, saying so, where etcd is not installed (CI installs it: .ci/run).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kplane.server.storage.etcd import EtcdClient, wire
from kplane.server.storage.testing import etcd_process
from tests.e2e import helpers
from tests.e2e.conftest import Server, requires_etcd, requires_kubectl, serve_command, start_server

pytestmark = requires_etcd


@pytest.fixture(scope="module")
def server(etcd: etcd_process.EtcdCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("kplane"), storage=f"etcd://{etcd.endpoints[0]}")
    yield srv
    srv.stop()


def _etcd_get(endpoint: str, key: str) -> wire.KeyValue | None:
    async def read() -> wire.KeyValue | None:
        client = EtcdClient([endpoint])
        try:
            response = wire.range_response(await client.call("KV/Range", wire.range_request(key.encode())))
        finally:
            await client.close()
        return response.kvs[0] if response.kvs else None

    return asyncio.run(read())


@requires_kubectl
def test_objects_live_in_etcd_with_its_revision(server: Server, etcd: etcd_process.EtcdCluster) -> None:
    """kubectl writes land in etcd under /registry/...; resourceVersion is etcd's mod_revision."""
    name = helpers.unique("cm")
    server.kubectl("create", "configmap", name, "--from-literal=a=b")
    got = json.loads(server.kubectl("get", "configmap", name, "-o", "json").stdout)
    kv = _etcd_get(etcd.endpoints[0], f"/registry/core/configmaps/default/{name}")
    assert kv is not None
    assert got["metadata"]["resourceVersion"] == str(kv.mod_revision)
    assert json.loads(kv.value)["data"] == {"a": "b"}
    server.kubectl("label", "configmap", name, "x=y")
    relabeled = json.loads(server.kubectl("get", "configmap", name, "-o", "json").stdout)
    kv2 = _etcd_get(etcd.endpoints[0], f"/registry/core/configmaps/default/{name}")
    assert kv2 is not None and relabeled["metadata"]["resourceVersion"] == str(kv2.mod_revision)
    assert kv2.mod_revision > kv.mod_revision
    server.kubectl("delete", "configmap", name)
    assert _etcd_get(etcd.endpoints[0], f"/registry/core/configmaps/default/{name}") is None
    ready = server.kubectl("get", "--raw", "/readyz?verbose").stdout
    assert "[+]etcd ok" in ready and "[+]etcd-readiness ok" in ready


def test_events_are_stored_with_a_lease(server: Server, etcd: etcd_process.EtcdCluster) -> None:
    """Events carry an etcd lease of --event-ttl (1 h) plus the minute a lease is reused."""
    api = helpers.Kube.from_kubeconfig(server.kubeconfig, server.data_dir / "e2e-pki")
    name = helpers.unique("ev")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": "default"},
        "reason": "Test",
        "message": "hello",
    }
    api.ok("POST", "/api/v1/namespaces/default/events", event)
    kv = _etcd_get(etcd.endpoints[0], f"/registry/core/events/default/{name}")
    assert kv is not None and kv.lease != 0

    async def ttl() -> int:
        client = EtcdClient(etcd.endpoints)
        try:
            # LeaseTimeToLive: ID = 1 (etcdserverpb.LeaseTimeToLiveRequest); TTL = 3 in the answer.
            raw = await client.call("Lease/LeaseTimeToLive", wire.int_field(1, kv.lease))
        finally:
            await client.close()
        return wire.lease_grant_response(raw).ttl

    assert 3600 < asyncio.run(ttl()) <= 3660
    cm = helpers.configmap(helpers.unique("cm"))
    api.ok("POST", "/api/v1/namespaces/default/configmaps", cm)
    plain = _etcd_get(etcd.endpoints[0], f"/registry/core/configmaps/default/{cm['metadata']['name']}")
    assert plain is not None and plain.lease == 0


@pytest.mark.slow
def test_etcd_down_gives_statuses_then_recovers(tmp_path: Path) -> None:
    """With etcd gone, requests fail within the deadline with upstream's Statuses (no hang); once
    etcd is back the same server serves again, without a restart."""
    with etcd_process.EtcdCluster(1, tmp_path / "etcd") as cluster:
        srv = start_server(tmp_path / "kplane", storage=f"etcd://{cluster.endpoints[0]}")
        try:
            api = helpers.Kube.from_kubeconfig(srv.kubeconfig, srv.data_dir / "e2e-pki")
            api.ok("POST", "/api/v1/namespaces/default/configmaps", helpers.configmap("before"))
            cluster.kill(0)
            start = time.monotonic()
            resp = api.post("/api/v1/namespaces/default/configmaps", helpers.configmap("during"), timeout=30)
            elapsed = time.monotonic() - start
            # endpoints/handlers/finisher.go: NewTimeoutError("request did not complete within
            # requested timeout - context deadline exceeded", 0).
            body = helpers.assert_status(resp, 504, "Timeout")
            assert body["message"] == (
                "Timeout: request did not complete within requested timeout - context deadline exceeded"
            )
            assert elapsed < 15, f"the request took {elapsed:.1f}s"
            readyz = api.get("/readyz?verbose", timeout=30)
            assert readyz.status == 500 and "[-]etcd failed" in readyz.body.decode()
            cluster.restart(0)
            helpers.poll(
                lambda: (
                    api.post("/api/v1/namespaces/default/configmaps", helpers.configmap("after")).status
                    == 201
                ),
                timeout=30,
                interval=0.5,
            )
            names = {
                item["metadata"]["name"]
                for item in api.ok("GET", "/api/v1/namespaces/default/configmaps")["items"]
            }
            assert {"before", "after"} <= names and "during" not in names
        finally:
            srv.stop()


def test_history_is_etcds(server: Server) -> None:
    """On etcd, a GET at an exact past resourceVersion reads etcd's own MVCC history."""
    api = helpers.Kube.from_kubeconfig(server.kubeconfig, server.data_dir / "e2e-pki")
    name = helpers.unique("cm")
    path = f"/api/v1/namespaces/default/configmaps/{name}"
    first = api.ok("POST", "/api/v1/namespaces/default/configmaps", helpers.configmap(name, data={"v": "1"}))
    assert api.patch(path, {"data": {"v": "2"}}).status == 200
    rv = first["metadata"]["resourceVersion"]
    old = api.ok("GET", path, query={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
    assert old["data"] == {"v": "1"} and old["metadata"]["resourceVersion"] == rv
    assert api.ok("GET", path)["data"] == {"v": "2"}


@pytest.mark.slow
def test_tls_with_client_certificates(tmp_path: Path) -> None:
    """--etcd-cafile/--etcd-certfile/--etcd-keyfile: TLS to an etcd that requires client certificates
    (here: one kplane PKI's CA, serving pair and admin client pair)."""
    from kplane.server.auth import certs

    pki = certs.ensure_pki(tmp_path / "etcd-pki", hosts=["127.0.0.1"])
    tls = (pki.ca_cert_file, pki.serving_cert_file, pki.serving_key_file)
    with etcd_process.EtcdCluster(1, tmp_path / "etcd", tls=tls) as cluster:
        storage = f"etcd://{cluster.endpoints[0]}"
        files = ["--etcd-cafile", str(pki.ca_cert_file)]
        files += ["--etcd-certfile", str(pki.admin_cert_file), "--etcd-keyfile", str(pki.admin_key_file)]
        srv = start_server(tmp_path / "kplane", *files, storage=storage)
        try:
            api = helpers.Kube.from_kubeconfig(srv.kubeconfig, srv.data_dir / "e2e-pki")
            api.ok("POST", "/api/v1/namespaces/default/configmaps", helpers.configmap("over-tls"))
            assert api.ok("GET", "/api/v1/namespaces/default/configmaps/over-tls")["data"] == {"k": "v"}
        finally:
            srv.stop()
        # Without a client certificate etcd refuses the connection: kplane does not start, and says why.
        res = subprocess.run(
            [
                *serve_command(tmp_path / "refused"),
                "--storage",
                storage,
                "--etcd-cafile",
                str(pki.ca_cert_file),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 1
        assert res.stderr.startswith(
            f"kplane: cannot start: etcd at {cluster.endpoints[0]} did not answer"
        ), res.stderr
