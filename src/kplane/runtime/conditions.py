"""Status conditions (``metav1.Condition`` lists) with apimachinery's ``meta.SetStatusCondition`` rules.

A condition is ``{type, status, reason, message, observedGeneration, lastTransitionTime}``.
``set_status_condition`` adds or updates by ``type``; ``lastTransitionTime`` changes only when
``status`` changes (or is added), so it tells when the condition last flipped, not when a
reconcile last ran. Reason, message and observedGeneration are updated in place. The functions
return whether the list changed, so a reconciler writes status only when something did.

Conditions are JSON-shaped dicts or typed models (``meta_v1.Condition``, a CRD's own condition
Struct): a list of models gets models (the class of ``new``), a list of dicts gets dicts.
"""

from __future__ import annotations

import datetime
from collections.abc import MutableSequence, Sequence
from typing import Any, TypeVar, cast

import msgspec

from kplane._util import clock as clock_mod

Condition = dict[str, Any] | msgspec.Struct
"""A condition: a JSON object, or a model with ``type``, ``status``... attributes."""
C = TypeVar("C", bound=Condition)

_REAL = clock_mod.RealClock()


def _timestamp(clock: clock_mod.Clock) -> str:
    now = clock.now().astimezone(datetime.UTC).replace(microsecond=0)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _field(cond: Condition, name: str) -> Any:
    return cond.get(name) if isinstance(cond, dict) else getattr(cond, name, None)


def find_status_condition(conditions: Sequence[Condition] | None, type: str) -> Condition | None:
    """The condition of ``type``, or None."""
    for cond in conditions or ():
        if _field(cond, "type") == type:
            return cond
    return None


def set_status_condition(conditions: MutableSequence[C], new: C, *, clock: clock_mod.Clock = _REAL) -> bool:
    """Add or update ``new`` (by type) in ``conditions``; True if anything changed."""
    if not isinstance(new, dict):  # models: the same rules on their JSON form, then models again
        views: list[dict[str, Any]] = [msgspec.to_builtins(c) for c in conditions]
        changed = set_status_condition(views, msgspec.to_builtins(new), clock=clock)
        if changed:
            conditions[:] = [msgspec.convert(view, type(new)) for view in views]
        return changed
    existing = find_status_condition(conditions, str(new.get("type", "")))
    if existing is not None and not isinstance(existing, dict):
        raise TypeError("a list of condition models takes a model, not a dict")
    if existing is None:
        cond = dict(new)
        if not cond.get("lastTransitionTime"):
            cond["lastTransitionTime"] = _timestamp(clock)
        conditions.append(cast(C, cond))  # C is the dict type here: ``new`` is one
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


def remove_status_condition(conditions: MutableSequence[C], type: str) -> bool:
    """Remove the condition of ``type``; True if there was one."""
    for i, cond in enumerate(conditions):
        if _field(cond, "type") == type:
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
    return cond is not None and _field(cond, "status") == status


def conditions_of(obj: dict[str, Any]) -> list[Condition]:
    """``obj.status.conditions`` of a JSON object, created empty if absent, for the functions above."""
    status = obj.setdefault("status", {})
    conds: list[Condition] = status.setdefault("conditions", [])
    return conds
