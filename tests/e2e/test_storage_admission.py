"""LimitRanger's Pod and PersistentVolumeClaim limits and StorageObjectInUseProtection, end to end
with the real kubectl: upstream's messages (``plugin/pkg/admission/limitranger/admission.go``:
minConstraint, maxConstraint, maxRequestConstraint, aggregated by ``utilerrors.NewAggregate``), the
protection finalizers (``plugin/pkg/admission/storage/storageobjectinuseprotection``) and their
removal by the protection controllers (``pkg/controller/volume/pvcprotection``, ``pvprotection``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, poll, unique


def consistently(fn: Any, seconds: float = 1.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not fn():
            return False
        time.sleep(0.1)
    return True


pytestmark = requires_kubectl


@pytest.fixture
def ns(api: Kube) -> str:
    name = unique("stor")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _apply(server: Server, ns: str, obj: dict[str, Any], check: bool = True) -> Any:
    return server.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(obj), check=check)


def _limit_range(limits: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"}, "spec": {"limits": limits}}


def _claim(name: str, storage: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}},
    }


def _pod(name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": containers, **spec},
    }


def _container(name: str, limits: dict[str, str], requests: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {"limits": limits, **({"requests": requests} if requests else {})}
    return {"name": name, "image": "nginx", "resources": resources}


def test_claim_storage_bounds(server: Server, ns: str) -> None:
    """A PersistentVolumeClaim limit bounds the requested storage."""
    _apply(
        server,
        ns,
        _limit_range(
            [{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}]
        ),
    )
    res = _apply(server, ns, _claim("big", "5Gi"), check=False)
    assert (
        'persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, '
        "but request is 5Gi"
    ) in res.stderr
    res = _apply(server, ns, _claim("small", "500Mi"), check=False)
    assert (
        'persistentvolumeclaims "small" is forbidden: minimum storage usage per PersistentVolumeClaim '
        "is 1Gi, but request is 500Mi"
    ) in res.stderr
    _apply(server, ns, _claim("ok", "1536Mi"))


def test_pod_totals_and_aggregated_messages(server: Server, ns: str) -> None:
    """A Pod limit bounds the sum of the containers; several violations come back as one
    bracketed list, as upstream's aggregate prints them."""
    _apply(
        server,
        ns,
        _limit_range(
            [
                {"type": "Pod", "max": {"cpu": "1"}},
                {"type": "Container", "min": {"memory": "64Mi"}},
            ]
        ),
    )
    fat = _pod(
        "fat",
        [
            _container("a", {"cpu": "750m", "memory": "128Mi"}),
            _container("b", {"cpu": "750m", "memory": "128Mi"}),
        ],
    )
    res = _apply(server, ns, fat, check=False)
    assert 'pods "fat" is forbidden: maximum cpu usage per Pod is 1, but limit is 1500m' in res.stderr
    both = _pod("both", [_container("a", {"cpu": "2", "memory": "32Mi"})])
    res = _apply(server, ns, both, check=False)
    assert (
        'pods "both" is forbidden: [minimum memory usage per Container is 64Mi, but request is 32Mi, '
        "maximum cpu usage per Pod is 1, but limit is 2]"
    ) in res.stderr
    _apply(server, ns, _pod("fits", [_container("a", {"cpu": "500m", "memory": "64Mi"})]))


def test_protection_finalizers_and_their_removal(cluster: Server, tmp_path: Path) -> None:
    """Claims and volumes get their protection finalizer on create; with the built-in controllers
    running, a deleted claim stays while a scheduled pod mounts it and goes once the pod is gone,
    and a deleted unbound volume goes."""
    server, api = cluster, Kube.from_kubeconfig(cluster.kubeconfig, tmp_path)
    ns = unique("stor")
    api.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    _apply(server, ns, _claim("data", "1Gi"))
    claim = api.ok("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data")
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    volume_name = unique("pv")
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume_name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/x"},
        },
    }
    created = api.ok("POST", "/api/v1/persistentvolumes", volume)
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    nodes = poll(lambda: api.ok("GET", "/api/v1/nodes")["items"], timeout=30)  # registered by the controllers
    node = nodes[0]["metadata"]["name"]
    mount = {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}
    _apply(server, ns, _pod("user", [{"name": "c", "image": "nginx"}], volumes=[mount], nodeName=node))
    server.kubectl("delete", "pvc", "data", "-n", ns, "--wait=false")
    held = api.ok("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data")
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == [
        "kubernetes.io/pvc-protection"
    ]
    assert consistently(lambda: api.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data").status == 200)
    server.kubectl("delete", "pod", "user", "-n", ns, "--grace-period=0", "--force")
    gone = f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data"
    assert poll(lambda: api.get(gone).status == 404, timeout=60)
    api.request("DELETE", f"/api/v1/persistentvolumes/{volume_name}")
    assert poll(lambda: api.get(f"/api/v1/persistentvolumes/{volume_name}").status == 404, timeout=30)
