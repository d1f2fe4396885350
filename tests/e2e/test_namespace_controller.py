"""The namespace controller of ``kplane serve`` with the real kubectl: ``delete namespace`` empties
the namespace (workloads, pods, custom objects) and finalizes it; while content is held by a
finalizer the namespace reports upstream's deletion conditions (kube-controller-manager's
``pkg/controller/namespace/deletion/status_condition_utils.go``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import conftest as e2e
from tests.e2e.helpers import Kube, configmap, open_crd, unique, until

pytestmark = [e2e.requires_kubectl, pytest.mark.timeout(180)]

GROUP = "nsdel.example.com"


@pytest.fixture(scope="module")
def kube(cluster: e2e.Server) -> Iterator[Kube]:
    yield Kube.from_kubeconfig(cluster.kubeconfig, cluster.data_dir / "e2e-pki")


def _gone(kube: Kube, path: str) -> bool:
    return kube.request("GET", path).status == 404


def _conditions(kube: Kube, name: str) -> dict[str, dict[str, Any]]:
    ns = kube.ok("GET", f"/api/v1/namespaces/{name}")
    return {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or ()}


def test_delete_namespace_removes_everything(cluster: e2e.Server, kube: Kube) -> None:
    """kubectl delete namespace waits until the Deployment, its pods and a custom object are gone,
    then the namespace itself."""
    ns = unique("nsdel")
    cluster.kubectl("create", "namespace", ns)
    crd = open_crd(GROUP, "Gizmo")
    kube.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    gizmos = f"/apis/{GROUP}/v1/namespaces/{ns}/gizmos"
    assert until(lambda: kube.request("GET", gizmos).status == 200)
    kube.ok("POST", gizmos, {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g1"}})
    cluster.kubectl("-n", ns, "create", "deployment", "web", "--image=nginx", "--replicas=2")
    cluster.kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
    kube.ok("POST", f"/api/v1/namespaces/{ns}/configmaps", configmap("plain", ns))

    out = cluster.kubectl("delete", "namespace", ns, "--timeout=120s", timeout=150)
    assert out.stdout.strip() == f'namespace "{ns}" deleted'
    assert _gone(kube, f"/api/v1/namespaces/{ns}")
    assert kube.ok("GET", gizmos)["items"] == []
    assert kube.ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"] == []
    assert kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets")["items"] == []
    res = cluster.kubectl("get", "namespace", ns, check=False)
    assert res.returncode != 0 and f'namespaces "{ns}" not found' in res.stderr


def test_namespace_conditions_while_content_is_held(cluster: e2e.Server, kube: Kube) -> None:
    """A finalizer on a ConfigMap keeps the namespace Terminating with upstream's five conditions;
    removing it lets the namespace go."""
    ns = unique("nsheld")
    cluster.kubectl("create", "namespace", ns)
    kube.ok(
        "POST", f"/api/v1/namespaces/{ns}/configmaps", configmap("held", ns, finalizers=["example.com/hold"])
    )
    kube.ok("DELETE", f"/api/v1/namespaces/{ns}")

    def reported() -> dict[str, dict[str, Any]] | None:
        conds = _conditions(kube, ns)
        return conds if conds.get("NamespaceFinalizersRemaining", {}).get("status") == "True" else None

    conds = until(reported, timeout=60)
    assert conds, _conditions(kube, ns)
    summary = {t: (c["status"], c["reason"], c["message"]) for t, c in conds.items()}
    # status_condition_utils.go: healthy forms are False; remaining content is named per resource
    assert summary == {
        "NamespaceDeletionDiscoveryFailure": (
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure": (
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure": (
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        "NamespaceContentRemaining": (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: configmaps. has 1 resource instances",
        ),
        "NamespaceFinalizersRemaining": (
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: "
            "example.com/hold in 1 resource instances",
        ),
    }
    ns_obj = kube.ok("GET", f"/api/v1/namespaces/{ns}")
    assert ns_obj["status"]["phase"] == "Terminating" and ns_obj["spec"]["finalizers"] == ["kubernetes"]
    held = kube.ok("GET", f"/api/v1/namespaces/{ns}/configmaps/held")
    assert held["metadata"].get("deletionTimestamp")

    kube.ok(
        "PATCH",
        f"/api/v1/namespaces/{ns}/configmaps/held",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    assert until(lambda: _gone(kube, f"/api/v1/namespaces/{ns}"), timeout=60)
