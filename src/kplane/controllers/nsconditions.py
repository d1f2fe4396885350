"""The five deletion conditions of a Terminating namespace, as upstream's
``pkg/controller/namespace/deletion/status_condition_utils.go`` writes them (reference/cluster.md §2):
every one is always present, the healthy form has status ``False``, and ``lastTransitionTime``
changes only when a condition's status flips.

``Tally`` collects what one deletion pass saw; ``conditions`` turns it into the list to write.
"""

from __future__ import annotations

import dataclasses
from typing import Any

Object = dict[str, Any]

DISCOVERY_FAILURE = "NamespaceDeletionDiscoveryFailure"
PARSING_FAILURE = "NamespaceDeletionGroupVersionParsingFailure"
CONTENT_FAILURE = "NamespaceDeletionContentFailure"
CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"

ORDER = (DISCOVERY_FAILURE, PARSING_FAILURE, CONTENT_FAILURE, CONTENT_REMAINING, FINALIZERS_REMAINING)

_HEALTHY = {
    DISCOVERY_FAILURE: ("ResourcesDiscovered", "All resources successfully discovered"),
    PARSING_FAILURE: ("ParsedGroupVersions", "All legacy kube types successfully parsed"),
    CONTENT_FAILURE: ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    CONTENT_REMAINING: ("ContentRemoved", "All content successfully removed"),
    FINALIZERS_REMAINING: ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}


@dataclasses.dataclass
class Tally:
    """What one pass over a namespace's content found."""

    discovery_errors: list[str] = dataclasses.field(default_factory=list)
    parsing_errors: list[str] = dataclasses.field(default_factory=list)
    delete_errors: list[str] = dataclasses.field(default_factory=list)
    remaining: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    """(group, resource) → objects still listed after the deletion."""
    finalizers: dict[str, int] = dataclasses.field(default_factory=dict)
    """finalizer → remaining objects that carry it."""

    def problems(self) -> dict[str, tuple[str, str]]:
        """Condition type → (reason, message) for each condition that reports a problem."""
        out: dict[str, tuple[str, str]] = {}
        if self.discovery_errors:
            n = len(self.discovery_errors)
            out[DISCOVERY_FAILURE] = (
                "DiscoveryFailed",
                f"Discovery failed for some groups, {n} failing: {', '.join(self.discovery_errors)}",
            )
        if self.parsing_errors:
            out[PARSING_FAILURE] = ("GroupVersionParsingFailed", ", ".join(self.parsing_errors))
        if self.delete_errors:
            errs = sorted(self.delete_errors)
            out[CONTENT_FAILURE] = (
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(errs)} remaining: {', '.join(errs)}",
            )
        if self.remaining:
            parts = sorted(
                f"{res}.{group} has {n} resource instances" for (group, res), n in self.remaining.items()
            )
            out[CONTENT_REMAINING] = (
                "SomeResourcesRemain",
                f"Some resources are remaining: {', '.join(parts)}",
            )
        if self.finalizers:
            parts = sorted(f"{f} in {n} resource instances" for f, n in self.finalizers.items())
            out[FINALIZERS_REMAINING] = (
                "SomeFinalizersRemain",
                f"Some content in the namespace has finalizers remaining: {', '.join(parts)}",
            )
        return out


def conditions(old: list[Object], tally: Tally, now: str) -> list[Object]:
    """The namespace's conditions after a pass: ``old``'s other conditions kept, the five deletion
    conditions set from ``tally`` (``lastTransitionTime`` kept unless the status flips)."""
    problems = tally.problems()
    previous = {c.get("type"): c for c in old}
    out = [dict(c) for c in old if c.get("type") not in ORDER]
    for kind in ORDER:
        status = "True" if kind in problems else "False"
        reason, message = problems.get(kind) or _HEALTHY[kind]
        prior = previous.get(kind) or {}
        since = prior.get("lastTransitionTime") if prior.get("status") == status else None
        out.append(
            {
                "type": kind,
                "status": status,
                "lastTransitionTime": since or now,
                "reason": reason,
                "message": message,
            }
        )
    return out
