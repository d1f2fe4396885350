"""Cluster services on a real server with the real kubectl: the ``default`` ServiceAccount and the
``kube-root-ca.crt`` ConfigMap in every namespace (upstream's serviceaccounts-controller and
root-ca-cert-publisher, reference/cluster.md §9).

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
from kplane.controllers import serviceaccounts
from tests.e2e import conftest as e2e
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
