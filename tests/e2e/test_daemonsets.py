"""DaemonSets on ``kplane serve`` (built-in controllers, 3 simulated nodes) with the real kubectl:
one pod per eligible node, pinned by node affinity and bound by the scheduler, with upstream's
automatic tolerations; nodes added, removed, labelled and tainted; RollingUpdate with maxUnavailable
and with maxSurge; ``rollout status``/``history``/``undo`` through ControllerRevisions.

Expected texts are upstream's: kubectl 1.32 ``pkg/polymorphichelpers/rollout_status.go``
(DaemonSetStatusViewer) and ``rollback.go``; tolerations and affinity from kube-controller-manager's
``pkg/controller/daemon/util/daemonset_util.go``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import conftest as e2e
from tests.e2e.helpers import Kube, unique, until

pytestmark = [e2e.requires_kubectl, pytest.mark.timeout(240)]

NODES = ["kplane-node-0", "kplane-node-1", "kplane-node-2"]


@pytest.fixture(scope="module")
def kube(cluster: e2e.Server) -> Iterator[Kube]:
    """Raw access to the cluster, once its simulated nodes have registered and lost the
    ``not-ready:NoSchedule`` taint they register with (daemon pods do not tolerate it, as upstream)."""
    kube = Kube.from_kubeconfig(cluster.kubeconfig, cluster.data_dir / "e2e-pki")

    def settled() -> bool:
        nodes = kube.ok("GET", "/api/v1/nodes")["items"]
        return len(nodes) == len(NODES) and not any(n["spec"].get("taints") for n in nodes)

    assert until(settled, timeout=60)
    yield kube


@pytest.fixture
def ns(cluster: e2e.Server) -> str:
    name = unique("ds")
    cluster.kubectl("create", "namespace", name)
    return name


def daemonset(name: str, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "agent", "image": "busybox:1.36"}]},
            },
            **spec,
        },
    }


def apply(cluster: e2e.Server, ns: str, doc: dict[str, Any]) -> None:
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(doc))


def live_pods(kube: Kube, ns: str) -> list[dict[str, Any]]:
    items = kube.ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def pinned(pod: dict[str, Any]) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return str(terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0])


def status(kube: Kube, ns: str, name: str) -> dict[str, Any]:
    out: dict[str, Any] = (
        kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/daemonsets/{name}").get("status") or {}
    )
    return out


def rollout_status(cluster: e2e.Server, ns: str, name: str) -> str:
    out = cluster.kubectl("-n", ns, "rollout", "status", f"ds/{name}", "--timeout=90s", timeout=120)
    return out.stdout.strip().splitlines()[-1]


def test_one_pod_per_node_following_nodes(cluster: e2e.Server, kube: Kube, ns: str) -> None:
    """A pod on each node, bound by the scheduler; a Node added gets one, a Node removed loses it;
    an untolerated NoExecute taint evicts the daemon pod and a nodeSelector narrows the nodes."""
    apply(cluster, ns, daemonset("agent"))
    # rollout_status.go: the DaemonSet message once every node runs an available updated pod
    assert rollout_status(cluster, ns, "agent") == 'daemon set "agent" successfully rolled out'
    pods = live_pods(kube, ns)
    assert sorted(p["spec"]["nodeName"] for p in pods) == NODES
    assert all(pinned(p) == p["spec"]["nodeName"] for p in pods)
    pod = pods[0]
    assert pod["metadata"]["generateName"] == "agent-"
    assert pod["metadata"]["labels"]["controller-revision-hash"]
    assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
    auto = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"] if t.get("operator") == "Exists"}
    # daemonset_util.go AddOrUpdateDaemonPodTolerations
    assert {
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    } <= auto
    st = status(kube, ns, "agent")
    assert {k: st[k] for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady")} == {
        "desiredNumberScheduled": 3,
        "currentNumberScheduled": 3,
        "numberReady": 3,
    }
    assert st["numberAvailable"] == st["updatedNumberScheduled"] == 3 and st["numberMisscheduled"] == 0

    # A node joins, then leaves.
    extra = unique("edge")
    kube.ok(
        "POST",
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": extra, "labels": {"kubernetes.io/hostname": extra}},
        },
    )
    try:
        assert until(lambda: any(pinned(p) == extra for p in live_pods(kube, ns)), timeout=30)
        assert until(lambda: status(kube, ns, "agent").get("desiredNumberScheduled") == 4, timeout=30)
    finally:
        kube.request("DELETE", f"/api/v1/nodes/{extra}")
    assert until(lambda: not any(pinned(p) == extra for p in live_pods(kube, ns)), timeout=30)
    assert until(lambda: status(kube, ns, "agent").get("desiredNumberScheduled") == 3, timeout=30)

    # An untolerated NoExecute taint takes the daemon pod off the node; removing it brings one back.
    node = NODES[2]
    cluster.kubectl("taint", "nodes", node, "kplane.test/evict=yes:NoExecute")
    try:
        assert until(
            lambda: sorted(p["spec"].get("nodeName") or "" for p in live_pods(kube, ns)) == NODES[:2]
        )
        assert until(lambda: status(kube, ns, "agent").get("desiredNumberScheduled") == 2)
    finally:
        cluster.kubectl("taint", "nodes", node, "kplane.test/evict=yes:NoExecute-")
    assert rollout_status(cluster, ns, "agent") == 'daemon set "agent" successfully rolled out'
    assert len(live_pods(kube, ns)) == 3

    # A nodeSelector: only the labelled node keeps a pod.
    cluster.kubectl("label", "nodes", NODES[1], "kplane.test/role=edge")
    try:
        cluster.kubectl(
            "-n",
            ns,
            "patch",
            "ds/agent",
            "-p",
            '{"spec":{"template":{"spec":{"nodeSelector":{"kplane.test/role":"edge"}}}}}',
        )
        assert until(lambda: [pinned(p) for p in live_pods(kube, ns)] == [NODES[1]], timeout=60)
        assert rollout_status(cluster, ns, "agent") == 'daemon set "agent" successfully rolled out'
        assert status(kube, ns, "agent")["desiredNumberScheduled"] == 1
    finally:
        cluster.kubectl("label", "nodes", NODES[1], "kplane.test/role-")


def _watch_rollout(cluster: e2e.Server, kube: Kube, ns: str, name: str) -> tuple[int, int]:
    """Run ``rollout status`` while sampling the pods not being deleted: (most at once, fewest ready
    at once)."""
    proc = cluster.kubectl_popen("-n", ns, "rollout", "status", f"ds/{name}", "--timeout=90s")
    most, fewest = 0, 99
    deadline = time.monotonic() + 100
    while proc.poll() is None and time.monotonic() < deadline:
        items = live_pods(kube, ns)  # terminating pods count for neither budget, as upstream
        most = max(most, len(items))
        ready = [
            p
            for p in items
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or ()
            )
        ]
        fewest = min(fewest, len(ready))
        time.sleep(0.05)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1] == f'daemon set "{name}" successfully rolled out'
    return most, fewest


def test_rolling_update_max_unavailable_history_and_undo(cluster: e2e.Server, kube: Kube, ns: str) -> None:
    """maxUnavailable 1: never fewer than 2 ready pods during the update; history lists two revisions
    and undo restores the first template."""
    apply(
        cluster,
        ns,
        daemonset("roll", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    )
    rollout_status(cluster, ns, "roll")
    cluster.kubectl("-n", ns, "set", "image", "ds/roll", "agent=busybox:1.37")
    most, fewest = _watch_rollout(cluster, kube, ns, "roll")
    assert fewest >= 2 and most <= 3
    assert {p["spec"]["containers"][0]["image"] for p in live_pods(kube, ns)} == {"busybox:1.37"}
    history = cluster.kubectl("-n", ns, "rollout", "history", "ds/roll").stdout
    assert re.findall(r"^(\d+)\s", history, re.M) == ["1", "2"]
    revisions = kube.ok("GET", f"/apis/apps/v1/namespaces/{ns}/controllerrevisions")["items"]
    for rev in revisions:
        # pkg/controller/daemon/update.go: <ds>-<hash>, labelled with that hash
        assert rev["metadata"]["name"] == f"roll-{rev['metadata']['labels']['controller-revision-hash']}"
    out = cluster.kubectl("-n", ns, "rollout", "undo", "ds/roll").stdout.strip()
    assert out == "daemonset.apps/roll rolled back"
    assert until(lambda: status(kube, ns, "roll").get("observedGeneration") == 3)
    assert rollout_status(cluster, ns, "roll") == 'daemon set "roll" successfully rolled out'
    assert {p["spec"]["containers"][0]["image"] for p in live_pods(kube, ns)} == {"busybox:1.36"}
    history = cluster.kubectl("-n", ns, "rollout", "history", "ds/roll").stdout
    assert re.findall(r"^(\d+)\s", history, re.M) == ["2", "3"]


def test_rolling_update_with_surge(cluster: e2e.Server, kube: Kube, ns: str) -> None:
    """maxSurge 1, maxUnavailable 0: a new pod starts beside the old one, at most 4 pods at once and
    never fewer than 3 ready."""
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    apply(cluster, ns, daemonset("surge", updateStrategy=strategy))
    rollout_status(cluster, ns, "surge")
    cluster.kubectl("-n", ns, "set", "image", "ds/surge", "agent=busybox:1.37")
    most, fewest = _watch_rollout(cluster, kube, ns, "surge")
    assert most <= 4 and fewest >= 3
    images = sorted((p["spec"]["nodeName"], p["spec"]["containers"][0]["image"]) for p in live_pods(kube, ns))
    assert images == [(n, "busybox:1.37") for n in NODES]
