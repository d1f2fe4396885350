"""Upstream's hand-written validation of Events (kubernetes ``pkg/apis/core/validation/events.go``).

Every Event passes the legacy checks; an Event created through ``events.k8s.io/v1`` also the strict
ones (eventTime required, a Normal/Warning type, the deprecated fields unset). The checks read the
core form, and their paths name core fields (``count``, ``source``) even for an events.k8s.io
request, as upstream validates its internal type. Pure functions.
"""

from __future__ import annotations

from typing import Any

from kplane.api import errors, names
from kplane.api.builtin import eventversions

Object = dict[str, Any]

_LIMITS = (("reportingInstance", 128), ("action", 128), ("reason", 128))
_NOTE_LIMIT = 1024


def validate_create(obj: Object, api_version: str) -> list[errors.FieldError]:
    """``ValidateEventCreate`` for a create through ``api_version`` (``v1`` or ``events.k8s.io/v1``)."""
    event = eventversions.convert(obj, eventversions.CORE)
    errs = _legacy(event)
    if api_version == eventversions.CORE:
        return errs
    series = event.get("series")
    if isinstance(series, dict):
        count = series.get("count")
        if not isinstance(count, int) or count < 2:
            errs.append(errors.invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            errs.append(errors.required("series.lastObservedTime"))
    if not event.get("eventTime"):
        errs.append(errors.required("eventTime"))
    kind = event.get("type")
    if kind not in ("Normal", "Warning"):
        errs.append(errors.invalid("type", "", f"has invalid value: {'' if kind is None else kind}"))
    for name in ("firstTimestamp", "lastTimestamp"):
        if event.get(name):
            errs.append(errors.invalid(name, "", "needs to be unset"))
    if event.get("count"):
        errs.append(errors.invalid("count", "", "needs to be unset"))
    source = event.get("source")
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        errs.append(errors.invalid("source", "", "needs to be unset"))
    return errs


def validate_update(obj: Object) -> list[errors.FieldError]:
    """The legacy checks every updated Event passes."""
    return _legacy(eventversions.convert(obj, eventversions.CORE))


def _legacy(event: Object) -> list[errors.FieldError]:
    errs: list[errors.FieldError] = []
    namespace = str((event.get("metadata") or {}).get("namespace") or "")
    involved = event.get("involvedObject")
    involved_ns = str(involved.get("namespace") or "") if isinstance(involved, dict) else ""
    mismatch = errors.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
    if not event.get("eventTime"):
        # Events without eventTime are the old kind: only the namespaces must agree.
        if (not involved_ns and namespace not in ("", "default")) or (
            involved_ns and namespace != involved_ns
        ):
            errs.append(mismatch)
        return errs
    if not involved_ns and namespace not in ("default", "kube-system"):
        errs.append(mismatch)
    controller = str(event.get("reportingComponent") or "")
    if not controller:
        errs.append(errors.required("reportingController"))
    errs.extend(
        errors.invalid("reportingController", controller, why)
        for why in names.qualified_name_errors(controller)
    )
    for name, limit in _LIMITS:
        value = str(event.get(name) or "")
        if not value:
            errs.append(errors.required(name))
        elif len(value) > limit:
            errs.append(errors.invalid(name, "", f"can have at most {limit} characters"))
    if len(str(event.get("message") or "")) > _NOTE_LIMIT:
        errs.append(errors.invalid("message", "", f"can have at most {_NOTE_LIMIT} characters"))
    return errs
