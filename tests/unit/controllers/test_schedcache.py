"""The scheduler's per-node accounting: bound pods counted once, assumptions confirmed or dropped."""

from __future__ import annotations

from typing import Any

from kplane.controllers import schedcache


def _pod(name: str, uid: str = "u1", node: str = "", phase: str = "Running", cpu: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "x"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"namespace": "ns", "name": name, "uid": uid},
        "spec": spec,
        "status": {"phase": phase},
    }


def test_bound_pods_are_counted_once_on_their_node() -> None:
    """Repeated updates of one bound pod count it once; a terminal or deleted pod stops counting."""
    acc = schedcache.PodAccounting()
    acc.observe(_pod("a", node="n1", cpu="500m"))
    acc.observe(_pod("a", node="n1", cpu="500m"))
    acc.observe(_pod("b", uid="u2", node="n1", cpu="250m"))
    acc.observe(_pod("c", uid="u3"))  # pending: not counted anywhere
    assert (acc.usage("n1").pods, acc.usage("n1").requested) == (2, {"cpu": 0.75})
    acc.observe(_pod("a", node="n1", phase="Succeeded", cpu="500m"))
    assert (acc.usage("n1").pods, acc.usage("n1").requested) == (1, {"cpu": 0.25})
    acc.forget(_pod("b", uid="u2", node="n1"))
    assert acc.usage("n1").pods == 0 and acc.usage("n1").requested == {}


def test_an_assumption_counts_until_the_pod_is_seen_bound() -> None:
    """An assumed pod counts on its node; the event showing it bound moves it to counted (no double
    count); a failed binding (unassume) removes it."""
    acc = schedcache.PodAccounting()
    acc.assume("ns/a", "u1", "n1", {"cpu": 1.0})
    assert acc.is_assumed("ns/a", "u1") and not acc.is_assumed("ns/a", "other")
    assert acc.usage("n1").pods == 1
    acc.observe(_pod("a"))  # an event from before the binding: still assumed
    assert acc.is_assumed("ns/a", "u1") and acc.usage("n1").pods == 1
    acc.observe(_pod("a", node="n1", cpu="1"))
    assert not acc.is_assumed("ns/a", "u1")
    assert (acc.usage("n1").pods, acc.usage("n1").requested) == (1, {"cpu": 1.0})
    acc.assume("ns/b", "u2", "n2", {})
    acc.unassume("ns/b")
    assert acc.usage("n2").pods == 0


def test_a_pod_recreated_under_the_same_name_drops_the_old_assumption() -> None:
    """An event of a new pod (new UID) with the assumed pod's name, or its deletion, ends the assumption."""
    acc = schedcache.PodAccounting()
    acc.assume("ns/a", "u1", "n1", {})
    acc.observe(_pod("a", uid="u9"))
    assert acc.usage("n1").pods == 0 and not acc.is_assumed("ns/a", "u1")
    acc.assume("ns/a", "u9", "n1", {})
    acc.forget(_pod("a", uid="u9"))
    assert acc.usage("n1").pods == 0
