"""The namespace deletion conditions, against upstream's ``status_condition_utils.go`` texts."""

from __future__ import annotations

from kplane.controllers import nsconditions


def test_healthy_pass_reports_all_five_false() -> None:
    """A clean pass writes all five conditions in their healthy (False) form."""
    out = nsconditions.conditions([], nsconditions.Tally(), "2026-01-01T00:00:00Z")
    assert [(c["type"], c["status"], c["reason"]) for c in out] == [
        ("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered"),
        ("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions"),
        ("NamespaceDeletionContentFailure", "False", "ContentDeleted"),
        ("NamespaceContentRemaining", "False", "ContentRemoved"),
        ("NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers"),
    ]


def test_problems_sorted_and_transition_time_kept() -> None:
    """Remaining resources are listed sorted as ``<resource>.<group> has <n> resource instances``; the
    transition time moves only when a status flips."""
    tally = nsconditions.Tally(
        remaining={("", "pods"): 2, ("apps", "deployments"): 1},
        finalizers={"b.io/x": 1, "a.io/y": 3},
        delete_errors=["z failed", "a failed"],
    )
    first = nsconditions.conditions([], tally, "T1")
    by = {c["type"]: c for c in first}
    # status_condition_utils.go (upstream): the message shapes
    assert by["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: deployments.apps has 1 resource instances, "
        "pods. has 2 resource instances"
    )
    assert by["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: a.io/y in 3 resource instances, "
        "b.io/x in 1 resource instances"
    )
    assert by["NamespaceDeletionContentFailure"]["message"] == (
        "Failed to delete all resource types, 2 remaining: a failed, z failed"
    )
    again = {
        c["type"]: c
        for c in nsconditions.conditions(first, nsconditions.Tally(remaining={("", "pods"): 1}), "T2")
    }
    assert again["NamespaceContentRemaining"]["lastTransitionTime"] == "T1"
    assert again["NamespaceFinalizersRemaining"]["lastTransitionTime"] == "T2"
    assert again["NamespaceFinalizersRemaining"]["status"] == "False"
