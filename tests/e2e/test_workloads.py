"""ReplicaSet, Deployment and garbage collector against a real server with the real kubectl.

The controllers are ``kplane serve``'s own (simulated nodes and kubelets make pods Ready); the
collector's restart scan runs on an in-process server, before and after a collector starts.
Expected messages are upstream's (kubectl 1.32 ``rollout_status.go``, ``rollback.go``;
kube-controller-manager's deployment controller).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kplane import testing
from kplane.client import dynamic, typed
from kplane.controllers import garbagecollector, workload
from tests.e2e import conftest as e2e
from tests.e2e import runtime_support as rs

CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)

pytestmark = [e2e.requires_kubectl, pytest.mark.timeout(180)]


@contextlib.asynccontextmanager
async def connect(server: e2e.Server) -> AsyncIterator[tuple[e2e.Server, dynamic.DynamicClient]]:
    async with typed.Client(rs.config(server)) as api:
        yield server, api.dynamic


async def kubectl(server: e2e.Server, *args: str, check: bool = True) -> Any:
    return await asyncio.to_thread(server.kubectl, *args, check=check, timeout=90)


async def namespace(server: e2e.Server) -> str:
    ns = f"w-{uuid.uuid4().hex[:6]}"
    await kubectl(server, "create", "namespace", ns)
    return ns


async def pods(dc: dynamic.DynamicClient, ns: str) -> list[dict[str, Any]]:
    return list((await dc.resource(workload.PODS, ns).list())["items"])


async def test_deployment_lifecycle(cluster: e2e.Server) -> None:
    """create → rollout status; set image with surge/unavailable bounds watched; undo; scale 10 → 0."""
    async with connect(cluster) as (server, dc):
        ns = await namespace(server)
        await kubectl(server, "-n", ns, "create", "deployment", "web", "--image=nginx", "--replicas=3")
        out = await kubectl(server, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
        # kubectl rollout_status.go: the message once complete
        assert 'deployment "web" successfully rolled out' in out.stdout
        live = [p for p in await pods(dc, ns) if not p["metadata"].get("deletionTimestamp")]
        assert len(live) == 3
        rs_name = live[0]["metadata"]["ownerReferences"][0]["name"]
        assert all(p["metadata"]["name"].startswith(rs_name + "-") for p in live)
        await kubectl(
            server, "-n", ns, "wait", "--for=condition=Available", "deployment/web", "--timeout=30s"
        )
        d = json.loads((await kubectl(server, "-n", ns, "get", "deployment", "web", "-o", "json")).stdout)
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        progressing = next(c for c in d["status"]["conditions"] if c["type"] == "Progressing")
        assert progressing["reason"] == "NewReplicaSetAvailable"
        assert progressing["message"] == f'ReplicaSet "{rs_name}" has successfully progressed.'

        # 3 replicas at 25 %/25 %: maxSurge 1 (rounded up), maxUnavailable 0 (rounded down)
        violations: list[str] = []
        stop = asyncio.Event()

        async def watch_bounds() -> None:
            while not stop.is_set():
                items = [p for p in await pods(dc, ns) if not p["metadata"].get("deletionTimestamp")]
                ready = [p for p in items if workload.is_ready(p)]
                if len(items) > 4:
                    violations.append(f"{len(items)} pods > replicas + maxSurge")
                if len(ready) < 3:
                    violations.append(f"{len(ready)} ready < replicas - maxUnavailable")
                await asyncio.sleep(0.01)

        watcher = asyncio.create_task(watch_bounds())
        await kubectl(server, "-n", ns, "set", "image", "deployment/web", "nginx=nginx:1.27")
        await kubectl(server, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
        stop.set()
        await watcher
        assert violations == []
        images = {p["spec"]["containers"][0]["image"] for p in await pods(dc, ns)
                  if not p["metadata"].get("deletionTimestamp")}  # fmt: skip
        assert images == {"nginx:1.27"}

        out = await kubectl(server, "-n", ns, "rollout", "undo", "deployment/web")
        assert "deployment.apps/web rolled back" in out.stdout
        await kubectl(server, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
        d = json.loads((await kubectl(server, "-n", ns, "get", "deployment", "web", "-o", "json")).stdout)
        assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
        old = json.loads((await kubectl(server, "-n", ns, "get", "rs", rs_name, "-o", "json")).stdout)
        assert old["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"

        await kubectl(server, "-n", ns, "scale", "deployment/web", "--replicas=10")
        await kubectl(server, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
        await rs.eventually(lambda: _count(dc, ns, 10), within=30)
        await kubectl(server, "-n", ns, "scale", "deployment/web", "--replicas=0")
        await kubectl(server, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
        await rs.eventually(lambda: _count(dc, ns, 0), within=30)


async def _count(dc: dynamic.DynamicClient, ns: str, n: int) -> None:
    items = await pods(dc, ns)
    assert len(items) == n, len(items)


async def test_delete_cascades(cluster: e2e.Server) -> None:
    """background removes ReplicaSets and pods; orphan keeps them (refs removed); foreground first."""
    async with connect(cluster) as (server, dc):
        ns = await namespace(server)
        for name in ("bg", "orph", "fg"):
            await kubectl(server, "-n", ns, "create", "deployment", name, "--image=nginx", "--replicas=2")
        for name in ("bg", "orph", "fg"):
            await kubectl(server, "-n", ns, "rollout", "status", f"deployment/{name}", "--timeout=60s")

        async def owned(prefix: str) -> tuple[list[Any], list[Any]]:
            rss = [r for r in (await dc.resource(workload.REPLICASETS, ns).list())["items"]
                   if r["metadata"]["name"].startswith(prefix + "-")]  # fmt: skip
            ps = [p for p in await pods(dc, ns) if p["metadata"]["name"].startswith(prefix + "-")]
            return rss, ps

        await kubectl(server, "-n", ns, "delete", "deployment", "bg")

        async def bg_gone() -> None:
            assert await owned("bg") == ([], [])

        await rs.eventually(bg_gone, within=30)

        await kubectl(server, "-n", ns, "delete", "deployment", "orph", "--cascade=orphan")

        async def orphaned() -> None:
            rss, ps = await owned("orph")
            assert len(rss) == 1 and len(ps) == 2
            assert not rss[0]["metadata"].get("ownerReferences")

        await rs.eventually(orphaned, within=30)
        await asyncio.sleep(0.5)
        await orphaned()  # and they stay

        await kubectl(server, "-n", ns, "delete", "deployment", "fg", "--cascade=foreground", "--wait=false")
        # upstream: the owner stays, with the foregroundDeletion finalizer, until its dependents are gone
        d = json.loads((await kubectl(server, "-n", ns, "get", "deployment", "fg", "-o", "json",
                                      check=False)).stdout or "{}")  # fmt: skip
        if d:
            assert "foregroundDeletion" in d["metadata"]["finalizers"]

        async def fg_gone() -> None:
            assert await owned("fg") == ([], [])
            res = await kubectl(server, "-n", ns, "get", "deployment", "fg", check=False)
            assert res.returncode != 0 and "NotFound" in res.stderr

        await rs.eventually(fg_gone, within=30)


async def test_collector_scans_what_happened_while_it_was_down(tmp_path: Path) -> None:
    """Dependents of owners deleted while no collector ran are collected when it starts; an Orphan
    deletion left pending is completed; dependents with a live owner stay (upstream's full resync)."""
    async with testing.ControlPlane() as cp:
        cp.server.registry.gc_finalizers = True
        assert cp.config is not None
        dc = cp.client.dynamic
        cms = dc.resource(CONFIGMAPS, "default")
        owner = await cms.create({"metadata": {"name": "owner"}})
        gone = await cms.create({"metadata": {"name": "gone"}})
        kept_owner = await cms.create({"metadata": {"name": "orphaner"}})

        def ref(o: dict[str, Any]) -> dict[str, Any]:
            return {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": o["metadata"]["name"],
                "uid": o["metadata"]["uid"],
            }

        await cms.create({"metadata": {"name": "child-of-owner", "ownerReferences": [ref(owner)]}})
        await cms.create({"metadata": {"name": "child-of-gone", "ownerReferences": [ref(gone)]}})
        await cms.create({"metadata": {"name": "child-of-orphaner", "ownerReferences": [ref(kept_owner)]}})
        await cms.delete("gone")
        await cms.delete("orphaner", propagation_policy="Orphan")
        pinned = await cms.get("orphaner")
        assert pinned["metadata"]["finalizers"] == ["orphan"]  # upstream: the server adds it

        manager = rs.new_manager(cp.config)
        manager.add(garbagecollector.GarbageCollector(manager))
        async with rs.running(manager):

            async def settled() -> None:
                names = {o["metadata"]["name"] for o in (await cms.list())["items"]}
                assert "child-of-gone" not in names and "orphaner" not in names
                assert {"owner", "child-of-owner", "child-of-orphaner"} <= names
                orphan = await cms.get("child-of-orphaner")
                assert not orphan["metadata"].get("ownerReferences")

            await rs.eventually(settled, within=20)
