"""A CustomResourceDefinition's status conditions, read and set as upstream's ``apihelpers`` do.

``set_condition`` follows apiextensions-apiserver ``pkg/apihelpers/helpers.go`` ``SetCRDCondition``:
a condition of a new type is appended; an existing one takes the new status, reason and message,
and its ``lastTransitionTime`` moves only when the status changes (or it had none). Every function
here is pure: the CRD it is given is read, never modified; ``set_condition`` returns a new CRD
dict sharing everything but its status.
"""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]


def condition(ctype: str, status: str, reason: str, message: str, now: str) -> Object:
    """A condition as the API writes it (``lastTransitionTime`` is ``now``)."""
    return {"type": ctype, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}


def find(crd: Object, ctype: str) -> Object | None:
    """The condition of type ``ctype``, or None."""
    for c in (crd.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def is_true(crd: Object, ctype: str) -> bool:
    """Whether the condition of type ``ctype`` has status ``True`` (upstream's ``IsCRDConditionTrue``)."""
    found = find(crd, ctype)
    return found is not None and found.get("status") == "True"


def set_condition(crd: Object, ctype: str, status: str, reason: str, message: str, now: str) -> Object:
    """``crd`` with the condition of type ``ctype`` set (see the module docstring)."""
    new = condition(ctype, status, reason, message, now)
    conditions: list[Any] = []
    found = False
    for c in (crd.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == ctype and not found:
            found = True
            if c.get("status") == status and c.get("lastTransitionTime"):
                new["lastTransitionTime"] = c["lastTransitionTime"]
            c = {**c, **new}
        conditions.append(c)
    if not found:
        conditions.append(new)
    return {**crd, "status": {**(crd.get("status") or {}), "conditions": conditions}}
