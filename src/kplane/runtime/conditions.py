"""Status conditions (``metav1.Condition`` lists) with apimachinery's ``meta.SetStatusCondition`` rules.

A condition is ``{type, status, reason, message, observedGeneration, lastTransitionTime}``.
``set_status_condition`` adds or updates by ``type``; ``lastTransitionTime`` changes only when
``status`` changes (or is added), so it tells when the condition last flipped, not when a
reconcile last ran. Reason, message and observedGeneration are updated in place. The functions
return whether the list changed, so a reconciler writes status only when something did.
"""

from __future__ import annotations

import datetime
from collections.abc import MutableSequence, Sequence
from typing import Any

from kplane._util import clock as clock_mod

Condition = dict[str, Any]

_REAL = clock_mod.RealClock()


def _timestamp(clock: clock_mod.Clock) -> str:
    now = clock.now().astimezone(datetime.UTC).replace(microsecond=0)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def find_status_condition(conditions: Sequence[Condition] | None, type: str) -> Condition | None:
    """The condition of ``type``, or None."""
    for cond in conditions or ():
        if cond.get("type") == type:
            return cond
    return None


def set_status_condition(
    conditions: MutableSequence[Condition], new: Condition, *, clock: clock_mod.Clock = _REAL
) -> bool:
    """Add or update ``new`` (by type) in ``conditions``; True if anything changed."""
    existing = find_status_condition(conditions, str(new.get("type", "")))
    if existing is None:
        cond = dict(new)
        if not cond.get("lastTransitionTime"):
            cond["lastTransitionTime"] = _timestamp(clock)
        conditions.append(cond)
        return True
    changed = False
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = new.get("lastTransitionTime") or _timestamp(clock)
        changed = True
    for field in ("reason", "message", "observedGeneration"):
        if existing.get(field) != new.get(field):
            if new.get(field) is None:
                existing.pop(field, None)
            else:
                existing[field] = new[field]
            changed = True
    return changed


def remove_status_condition(conditions: MutableSequence[Condition], type: str) -> bool:
    """Remove the condition of ``type``; True if there was one."""
    for i, cond in enumerate(conditions):
        if cond.get("type") == type:
            del conditions[i]
            return True
    return False


def is_status_condition_true(conditions: Sequence[Condition] | None, type: str) -> bool:
    return is_status_condition_present_and_equal(conditions, type, "True")


def is_status_condition_false(conditions: Sequence[Condition] | None, type: str) -> bool:
    return is_status_condition_present_and_equal(conditions, type, "False")


def is_status_condition_present_and_equal(
    conditions: Sequence[Condition] | None, type: str, status: str
) -> bool:
    cond = find_status_condition(conditions, type)
    return cond is not None and cond.get("status") == status


def conditions_of(obj: dict[str, Any]) -> list[Condition]:
    """``obj.status.conditions``, created empty if absent, for use with the functions above."""
    status = obj.setdefault("status", {})
    conds: list[Condition] = status.setdefault("conditions", [])
    return conds
