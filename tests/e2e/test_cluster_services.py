"""Cluster services on a real server with the real kubectl: the ``default`` ServiceAccount and the
``kube-root-ca.crt`` ConfigMap in every namespace (upstream's serviceaccounts-controller and
root-ca-cert-publisher, reference/cluster.md §9); Endpoints and EndpointSlices following ready pods
(upstream's endpoint and endpointslice controllers, §8).

The controllers run on a manager in the test process, reaching the server over HTTP only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kplane import testing
from kplane.client import dynamic
from kplane.controllers import endpoints, endpointslices, endpointutil, serviceaccounts, workload
from tests.e2e import conftest as e2e
from tests.e2e import helpers
from tests.e2e import runtime_support as rs

pytestmark = [e2e.requires_kubectl, pytest.mark.timeout(120)]

# pkg/controller/certificates/rootcacertpublisher/publisher.go: the annotation on kube-root-ca.crt
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints"
    " such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across"
    " distributions of Kubernetes clusters."
)


@contextlib.asynccontextmanager
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[testing.ControlPlane, dynamic.DynamicClient]]:
    async with testing.ControlPlane() as cp:
        assert cp.config is not None
        manager = rs.new_manager(cp.config)
        await serviceaccounts.ServiceAccountsController(manager).setup()
        await serviceaccounts.RootCAPublisher(manager).setup()
        async with rs.running(manager):
            yield cp, cp.client.dynamic


def kubectl(cp: testing.ControlPlane, tmp_path: Path, *args: str) -> str:
    assert e2e.KUBECTL is not None
    env = {**os.environ, "KUBECONFIG": str(cp.kubeconfig)}
    res = subprocess.run(
        [e2e.KUBECTL, f"--cache-dir={tmp_path / 'kubecache'}", *args],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return res.stdout


async def _get(dc: dynamic.DynamicClient, ref: dynamic.Resource, ns: str, name: str) -> dict[str, Any]:
    return dict(await dc.resource(ref, ns).get(name))


async def test_every_namespace_gets_default_sa_and_root_ca(tmp_path: Path) -> None:
    async with cluster(tmp_path) as (cp, dc):
        assert cp.config is not None
        ca = cp.config.ca_data.decode()
        assert "BEGIN CERTIFICATE" in ca
        ns = f"cs-{uuid.uuid4().hex[:6]}"
        await asyncio.to_thread(kubectl, cp, tmp_path, "create", "namespace", ns)

        async def present() -> None:
            await _get(dc, serviceaccounts.SERVICEACCOUNTS, ns, "default")
            cm = await _get(dc, serviceaccounts.CONFIGMAPS, ns, "kube-root-ca.crt")
            assert cm["data"] == {"ca.crt": ca}
            assert cm["metadata"]["annotations"]["kubernetes.io/description"] == DESCRIPTION

        await rs.eventually(present)
        # Namespaces that existed before are served too.
        for existing in ("default", "kube-system", "kube-public"):
            await rs.eventually(lambda n=existing: _get(dc, serviceaccounts.SERVICEACCOUNTS, n, "default"))
        out = await asyncio.to_thread(kubectl, cp, tmp_path, "-n", ns, "get", "serviceaccounts", "-o", "name")
        assert out.split() == ["serviceaccount/default"]

        # Deleted: recreated (a new uid).
        sa = await _get(dc, serviceaccounts.SERVICEACCOUNTS, ns, "default")
        await asyncio.to_thread(kubectl, cp, tmp_path, "-n", ns, "delete", "serviceaccount", "default")

        async def recreated() -> None:
            again = await _get(dc, serviceaccounts.SERVICEACCOUNTS, ns, "default")
            assert again["metadata"]["uid"] != sa["metadata"]["uid"]

        await rs.eventually(recreated)

        # Edited: reverted; deleted: recreated.
        cms = dc.resource(serviceaccounts.CONFIGMAPS, ns)
        await cms.patch("kube-root-ca.crt", {"data": {"ca.crt": "tampered", "extra": "x"}})
        await rs.eventually(present)
        await asyncio.to_thread(kubectl, cp, tmp_path, "-n", ns, "delete", "configmap", "kube-root-ca.crt")
        await rs.eventually(present)
        cm = json.loads(
            await asyncio.to_thread(
                kubectl, cp, tmp_path, "-n", ns, "get", "configmap", "kube-root-ca.crt", "-o", "json"
            )
        )
        assert cm["data"]["ca.crt"] == ca


async def _pod(
    dc: dynamic.DynamicClient, ns: str, name: str, ip: str, *, ready: bool, app: str = "web"
) -> None:
    """A pod selected by ``app``, with a named container port, put Running at ``ip`` through
    ``pods/status`` (the part the kubelet plays)."""
    pods = dc.resource(workload.PODS, ns)
    spec = {
        "nodeName": "node-1",
        "containers": [{"name": "c", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}]}],
    }
    await pods.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": app}},
                       "spec": spec})  # fmt: skip
    status = {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    await pods.patch(name, {"status": status}, subresource="status")


async def _slices(dc: dynamic.DynamicClient, ns: str, svc: str) -> list[dict[str, Any]]:
    items = (await dc.resource(endpointslices.ENDPOINTSLICES, ns).list())["items"]
    return [s for s in items if s["metadata"]["labels"].get("kubernetes.io/service-name") == svc]


async def test_endpoints_and_slices_follow_ready_pods(tmp_path: Path) -> None:
    async with testing.ControlPlane() as cp:
        assert cp.config is not None
        manager = rs.new_manager(cp.config)
        await endpoints.EndpointsController(manager).setup()
        await endpointslices.EndpointSliceController(manager, max_endpoints=2).setup()
        async with rs.running(manager):
            dc = cp.client.dynamic
            ns = f"ep-{uuid.uuid4().hex[:6]}"
            await asyncio.to_thread(kubectl, cp, tmp_path, "create", "namespace", ns)
            svc = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "labels": {"tier": "front"}},
                "spec": {
                    "selector": {"app": "web"},
                    "ports": [{"name": "web", "port": 80, "targetPort": "http"}],
                },
            }
            await dc.resource(endpointutil.SERVICES, ns).create(svc)
            await _pod(dc, ns, "a", "10.244.0.3", ready=True)
            await _pod(dc, ns, "b", "10.244.0.2", ready=False)
            await _pod(dc, ns, "c", "10.244.0.4", ready=True)
            await _pod(dc, ns, "other", "10.244.0.9", ready=True, app="db")

            async def endpoints_listed() -> dict[str, Any]:
                ep = await _get(dc, endpoints.ENDPOINTS, ns, "web")
                [subset] = ep["subsets"]
                assert [a["ip"] for a in subset["addresses"]] == ["10.244.0.3", "10.244.0.4"]
                assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.244.0.2"]
                assert subset["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
                return ep

            ep = await rs.eventually(endpoints_listed)
            addr = ep["subsets"][0]["addresses"][0]
            assert addr["nodeName"] == "node-1"
            assert addr["targetRef"]["kind"] == "Pod" and addr["targetRef"]["name"] == "a"
            assert ep["metadata"]["labels"] == {"tier": "front"}
            assert "endpoints.kubernetes.io/last-change-trigger-time" in ep["metadata"]["annotations"]

            async def sliced() -> list[dict[str, Any]]:
                items = await _slices(dc, ns, "web")
                eps = [e for s in items for e in s["endpoints"]]
                assert sorted(e["addresses"][0] for e in eps) == ["10.244.0.2", "10.244.0.3", "10.244.0.4"]
                assert len(items) == 2  # at most 2 per slice here
                return list(items)

            slices = await rs.eventually(sliced)
            for s in slices:
                assert s["addressType"] == "IPv4"
                assert s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == (
                    "endpointslice-controller.k8s.io"
                )
                assert s["metadata"]["ownerReferences"][0]["kind"] == "Service"
                assert s["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]
            by_ip = {e["addresses"][0]: e for s in slices for e in s["endpoints"]}
            assert by_ip["10.244.0.2"]["conditions"] == {
                "ready": False,
                "serving": False,
                "terminating": False,
            }
            assert by_ip["10.244.0.3"]["conditions"] == {"ready": True, "serving": True, "terminating": False}

            # b turns Ready; a goes away.
            pods = dc.resource(workload.PODS, ns)
            await pods.patch("b", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                             subresource="status")  # fmt: skip
            await pods.delete("a", grace_period_seconds=0)

            async def followed() -> None:
                ep = await _get(dc, endpoints.ENDPOINTS, ns, "web")
                [subset] = ep["subsets"]
                assert [a["ip"] for a in subset["addresses"]] == ["10.244.0.2", "10.244.0.4"]
                assert "notReadyAddresses" not in subset
                items = await _slices(dc, ns, "web")
                assert len(items) == 1
                assert all(e["conditions"]["ready"] for e in items[0]["endpoints"])

            await rs.eventually(followed)
            out = await asyncio.to_thread(kubectl, cp, tmp_path, "-n", ns, "get", "endpoints", "web")
            assert "10.244.0.2:8080,10.244.0.4:8080" in out

            # The Service goes: its Endpoints and slices go too.
            await dc.resource(endpointutil.SERVICES, ns).delete("web")

            async def cleaned() -> None:
                assert (await dc.resource(endpoints.ENDPOINTS, ns).list())["items"] == []
                assert (await dc.resource(endpointslices.ENDPOINTSLICES, ns).list())["items"] == []

            await rs.eventually(cleaned)


def test_kplane_serve_runs_cluster_services(cluster: e2e.Server) -> None:
    """``kplane serve`` (its default controllers): a new namespace gets ``default`` and
    ``kube-root-ca.crt`` at once, and an exposed running pod is listed by its Service's Endpoints
    and EndpointSlice."""
    ns = f"sv-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", ns)

    def has(kind: str, name: str) -> bool:
        return cluster.kubectl("-n", ns, "get", kind, name, check=False).returncode == 0

    assert helpers.until(lambda: has("serviceaccount", "default") and has("configmap", "kube-root-ca.crt"))
    cluster.kubectl("-n", ns, "run", "web", "--image=nginx", "--port=80", "--labels=app=web")
    cluster.kubectl("-n", ns, "expose", "pod", "web", "--port=8080", "--target-port=80")

    def pod_ip() -> str:
        pod = json.loads(cluster.kubectl("-n", ns, "get", "pod", "web", "-o", "json").stdout)
        ready = any(
            c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", ())
        )
        return str(pod["status"].get("podIP", "")) if ready else ""

    ip = helpers.until(pod_ip)
    assert ip
    assert helpers.until(lambda: f"{ip}:80" in cluster.kubectl("-n", ns, "get", "endpoints", "web").stdout)

    def slice_endpoints() -> list[Any]:
        out = cluster.kubectl(
            "-n", ns, "get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o", "json"
        ).stdout
        return [e for s in json.loads(out)["items"] for e in s.get("endpoints") or ()]

    eps = helpers.until(slice_endpoints)
    assert [e["addresses"] for e in eps] == [[ip]]
    assert eps[0]["conditions"] == {"ready": True, "serving": True, "terminating": False}
