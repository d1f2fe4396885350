"""StatefulSets on ``kplane serve`` (built-in controllers, simulated nodes and kubelet) with the real
kubectl: ordinal pods with identity labels, hostname and subdomain, PVCs from claim templates,
OrderedReady gating versus Parallel, scale-down from the highest ordinal, partitioned rolling
updates, ``rollout status``/``history``/``undo`` through ControllerRevisions.

Expected texts are upstream's: kubectl 1.32 ``pkg/polymorphichelpers/rollout_status.go``
(StatefulSetStatusViewer), ``rollback.go`` and ``history.go``; pod and revision labels from
kube-controller-manager's ``pkg/controller/statefulset`` and ``pkg/controller/history``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import conftest as e2e
from tests.e2e.helpers import Kube, unique, until

pytestmark = [e2e.requires_kubectl, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def kube(cluster: e2e.Server) -> Iterator[Kube]:
    yield Kube.from_kubeconfig(cluster.kubeconfig, cluster.data_dir / "e2e-pki")


@pytest.fixture
def ns(cluster: e2e.Server) -> str:
    name = unique("sts")
    cluster.kubectl("create", "namespace", name)
    return name


def statefulset(name: str, replicas: int = 3, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "serviceName": name,
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
            },
            **spec,
        },
    }


def apply(cluster: e2e.Server, ns: str, doc: dict[str, Any]) -> None:
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(doc))


def pods(kube: Kube, ns: str) -> dict[str, dict[str, Any]]:
    items = kube.ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


def images(kube: Kube, ns: str) -> dict[str, str]:
    return {n: p["spec"]["containers"][0]["image"] for n, p in pods(kube, ns).items()}


def rollout_status(cluster: e2e.Server, ns: str, name: str) -> str:
    out = cluster.kubectl("-n", ns, "rollout", "status", f"sts/{name}", "--timeout=90s", timeout=120)
    return out.stdout.strip().splitlines()[-1]


def test_identity_claims_and_scale_order(cluster: e2e.Server, kube: Kube, ns: str) -> None:
    """Pods web-0..2 come up with the set's identity and PVCs; scale-down removes web-2 then web-1."""
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    apply(cluster, ns, statefulset("web", volumeClaimTemplates=[claim]))
    # rollout_status.go: RollingUpdate with the defaulted partition 0
    assert (
        rollout_status(cluster, ns, "web") == "partitioned roll out complete: 3 new pods have been updated..."
    )
    live = pods(kube, ns)
    assert sorted(live) == ["web-0", "web-1", "web-2"]
    sts = kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/statefulsets/web")
    revision = sts["status"]["updateRevision"]
    assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]+", revision)
    assert sts["status"]["currentRevision"] == revision
    for i in range(3):
        pod = live[f"web-{i}"]
        assert pod["metadata"]["labels"] == {
            "app": "web",
            "controller-revision-hash": revision,
            "statefulset.kubernetes.io/pod-name": f"web-{i}",
            "apps.kubernetes.io/pod-index": str(i),
        }
        assert pod["spec"]["hostname"] == f"web-{i}" and pod["spec"]["subdomain"] == "web"
        volumes = {v["name"]: v for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v}
        assert volumes["data"]["persistentVolumeClaim"]["claimName"] == f"data-web-{i}"
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    pvcs = kube.ok("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    assert sorted(p["metadata"]["name"] for p in pvcs) == ["data-web-0", "data-web-1", "data-web-2"]
    assert all(p["metadata"]["labels"] == {"app": "web"} for p in pvcs)
    status = sts["status"]
    assert {k: status[k] for k in ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas")} == {
        "replicas": 3,
        "readyReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 3,
    }
    assert status["availableReplicas"] == 3 and status["observedGeneration"] == sts["metadata"]["generation"]
    got = kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/controllerrevisions/{revision}")
    assert got["revision"] == 1 and got["metadata"]["labels"]["controller.kubernetes.io/hash"]

    # A removed identity label comes back (upstream's updateIdentity).
    cluster.kubectl("-n", ns, "label", "pod", "web-1", "statefulset.kubernetes.io/pod-name-")
    assert until(
        lambda: (
            pods(kube, ns)["web-1"]["metadata"]["labels"].get("statefulset.kubernetes.io/pod-name") == "web-1"
        )
    )

    # Scale-down: highest ordinal first, one at a time.
    rv = kube.ok("GET", f"/api/v1/namespaces/{ns}/pods")["metadata"]["resourceVersion"]
    order: list[str] = []
    with kube.watch(f"/api/v1/namespaces/{ns}/pods", {"resourceVersion": rv}, read_timeout=60) as stream:
        cluster.kubectl("-n", ns, "scale", "sts/web", "--replicas=1")

        def deleted(ev: dict[str, Any]) -> bool:
            if ev["type"] == "DELETED":
                order.append(ev["object"]["metadata"]["name"])
            return len(order) == 2

        stream.until(deleted, limit=500)
    assert order == ["web-2", "web-1"]
    assert sorted(pods(kube, ns)) == ["web-0"]
    # Retain (the default): claims stay for a later scale-up.
    pvcs = kube.ok("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    assert len(pvcs) == 3


def test_ordered_ready_waits_parallel_does_not(cluster: e2e.Server, kube: Kube, ns: str) -> None:
    """OrderedReady creates web-1 only once web-0 is ready; Parallel creates all at once."""
    blocked = {"nodeSelector": {"kplane.test/none": "x"}}
    ordered = statefulset("ord")
    ordered["spec"]["template"]["spec"].update(blocked)
    parallel = statefulset("par", podManagementPolicy="Parallel")
    parallel["spec"]["template"]["spec"].update(blocked)
    apply(cluster, ns, ordered)
    apply(cluster, ns, parallel)
    assert until(lambda: {"par-0", "par-1", "par-2"} <= set(pods(kube, ns)), timeout=30)
    assert "ord-0" in pods(kube, ns)
    assert not {"ord-1", "ord-2"} & set(pods(kube, ns))  # ord-0 is Pending: no successor
    # Unblocking the template makes a new revision, but OrderedReady never replaces a pod that is not
    # ready: as upstream, the stuck ord-0 must be deleted by hand (StatefulSet "forced rollback").
    cluster.kubectl(
        "-n",
        ns,
        "patch",
        "sts/ord",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/spec/template/spec/nodeSelector"}]',
    )
    generation = kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/statefulsets/ord")["metadata"]["generation"]
    assert until(lambda: _status(kube, ns, "ord").get("observedGeneration") == generation)
    assert set(pods(kube, ns)) & {"ord-0", "ord-1"} == {"ord-0"}
    cluster.kubectl("-n", ns, "delete", "pod", "ord-0", "--wait=false")
    assert (
        rollout_status(cluster, ns, "ord") == "partitioned roll out complete: 3 new pods have been updated..."
    )
    assert {"ord-0", "ord-1", "ord-2"} <= set(pods(kube, ns))


def test_partitioned_rollout_history_and_undo(cluster: e2e.Server, kube: Kube, ns: str) -> None:
    """A partition updates only the ordinals at or above it; rollout history lists the revisions and
    undo brings the previous template back as a new revision."""
    apply(cluster, ns, statefulset("db"))
    rollout_status(cluster, ns, "db")
    cluster.kubectl(
        "-n", ns, "patch", "sts/db", "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}'
    )
    cluster.kubectl("-n", ns, "set", "image", "sts/db", "main=nginx:1.27")
    assert (
        rollout_status(cluster, ns, "db") == "partitioned roll out complete: 1 new pods have been updated..."
    )
    assert images(kube, ns) == {"db-0": "nginx:1.25", "db-1": "nginx:1.25", "db-2": "nginx:1.27"}
    sts = kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/statefulsets/db")
    assert sts["status"]["currentRevision"] != sts["status"]["updateRevision"]
    assert sts["status"]["currentReplicas"] == 2 and sts["status"]["updatedReplicas"] == 1

    cluster.kubectl(
        "-n", ns, "patch", "sts/db", "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}'
    )
    assert (
        rollout_status(cluster, ns, "db") == "partitioned roll out complete: 3 new pods have been updated..."
    )
    assert set(images(kube, ns).values()) == {"nginx:1.27"}
    assert until(
        lambda: _status(kube, ns, "db")["currentRevision"] == _status(kube, ns, "db")["updateRevision"]
    )

    history = cluster.kubectl("-n", ns, "rollout", "history", "sts/db").stdout
    # history.go: a header, then one row per ControllerRevision number
    assert re.findall(r"^(\d+)\s", history, re.M) == ["1", "2"]
    out = cluster.kubectl("-n", ns, "rollout", "undo", "sts/db").stdout.strip()
    assert out == "statefulset.apps/db rolled back"
    until(lambda: _status(kube, ns, "db").get("updateRevision") != sts["status"]["updateRevision"])
    assert (
        rollout_status(cluster, ns, "db") == "partitioned roll out complete: 3 new pods have been updated..."
    )
    assert until(lambda: set(images(kube, ns).values()) == {"nginx:1.25"}, timeout=60)
    history = cluster.kubectl("-n", ns, "rollout", "history", "sts/db").stdout
    assert re.findall(r"^(\d+)\s", history, re.M) == ["2", "3"]  # revision 1 re-numbered to 3


def test_on_delete_and_claim_retention(cluster: e2e.Server, kube: Kube, ns: str) -> None:
    """OnDelete leaves pods at the old template until deleted; whenScaled Delete removes the claims of
    removed ordinals; rollout status refuses OnDelete as upstream."""
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    doc = statefulset(
        "od",
        replicas=2,
        updateStrategy={"type": "OnDelete"},
        volumeClaimTemplates=[claim],
        persistentVolumeClaimRetentionPolicy={"whenScaled": "Delete", "whenDeleted": "Retain"},
    )
    apply(cluster, ns, doc)
    assert until(lambda: _status(kube, ns, "od").get("readyReplicas") == 2, timeout=60)
    res = cluster.kubectl("-n", ns, "rollout", "status", "sts/od", check=False)
    assert res.returncode != 0
    assert "rollout status is only available for RollingUpdate strategy type" in res.stderr
    cluster.kubectl("-n", ns, "set", "image", "sts/od", "main=nginx:1.27")
    generation = kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/statefulsets/od")["metadata"]["generation"]
    assert until(lambda: _status(kube, ns, "od").get("observedGeneration") == generation)
    status = _status(kube, ns, "od")
    assert status["updateRevision"] != status["currentRevision"] and status["updatedReplicas"] == 0
    # OnDelete: the sync that saw the new template replaced nothing
    assert set(images(kube, ns).values()) == {"nginx:1.25"}
    # not kubectl's own wait for the pod to be gone (its 30 s bound is the test's, not the behaviour's):
    # the controller's re-creation at the new template is what is awaited
    cluster.kubectl("-n", ns, "delete", "pod", "od-1", "--wait=false")
    assert until(lambda: images(kube, ns).get("od-1") == "nginx:1.27", timeout=60)
    assert images(kube, ns)["od-0"] == "nginx:1.25"

    cluster.kubectl("-n", ns, "scale", "sts/od", "--replicas=1")

    def claims() -> list[str]:
        items = kube.ok("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
        return sorted(p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp"))

    assert until(lambda: claims() == ["data-od-0"], timeout=60), claims()


def _status(kube: Kube, ns: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = (
        kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/statefulsets/{name}").get("status") or {}
    )
    return out


def test_claims_follow_when_deleted_policy(cluster: e2e.Server, kube: Kube, ns: str) -> None:
    """whenDeleted Delete: the set owns its claims and the garbage collector removes them with it;
    Retain keeps them."""
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    for name, policy in (("gone", "Delete"), ("kept", "Retain")):
        doc = statefulset(
            name,
            replicas=1,
            volumeClaimTemplates=[claim],
            persistentVolumeClaimRetentionPolicy={"whenDeleted": policy, "whenScaled": "Retain"},
        )
        apply(cluster, ns, doc)
        rollout_status(cluster, ns, name)
    owners = {
        p["metadata"]["name"]: [o["kind"] for o in p["metadata"].get("ownerReferences") or ()]
        for p in kube.ok("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
    }
    assert owners == {"data-gone-0": ["StatefulSet"], "data-kept-0": []}
    cluster.kubectl("-n", ns, "delete", "sts", "gone", "kept", "--timeout=60s", timeout=90)

    def claims() -> list[str]:
        items = kube.ok("GET", f"/api/v1/namespaces/{ns}/persistentvolumeclaims")["items"]
        return sorted(p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp"))

    assert until(lambda: claims() == ["data-kept-0"], timeout=60), claims()
