"""Events in two groups: ``events.k8s.io/v1`` Event is a second view of the core ``v1`` Event.

Upstream stores one object and converts field by field (kubernetes ``pkg/apis/events/v1/
conversion.go``): ``note`` is ``message``, ``regarding`` is ``involvedObject``,
``reportingController`` is ``reportingComponent``, the ``deprecated*`` fields are ``source``,
``firstTimestamp``, ``lastTimestamp`` and ``count``; every other field has the same name and shape
in both. Events are stored in the core form, under the core key space, so lists and watches
through either group see every Event. Field selectors of ``events.k8s.io/v1`` name the new fields
and are mapped to the core ones (``FIELD_LABELS``), as upstream's field label conversion does.

Functions are pure: they never mutate their argument and return a new object.
"""

from __future__ import annotations

from typing import Any

Object = dict[str, Any]

CORE, EVENTS = "v1", "events.k8s.io/v1"

# core/v1 field -> events.k8s.io/v1 field, in the order the events.k8s.io/v1 Go struct declares them.
_TO_EVENTS = {
    "eventTime": "eventTime",
    "series": "series",
    "reportingComponent": "reportingController",
    "reportingInstance": "reportingInstance",
    "action": "action",
    "reason": "reason",
    "involvedObject": "regarding",
    "related": "related",
    "message": "note",
    "type": "type",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
# events.k8s.io/v1 field -> core/v1 field, in the order of the core/v1 Go struct.
_CORE_FIELDS = [
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
]
_TO_CORE = {_TO_EVENTS[core]: core for core in _CORE_FIELDS}

FIELD_LABELS: dict[str, str] = {
    "reason": "reason",
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "source": "source",
    "type": "type",
    "metadata.namespace": "metadata.namespace",
    "metadata.name": "metadata.name",
}
"""events.k8s.io/v1 field selector label -> the core Event field it selects on."""


def convert(obj: Object, to_api_version: str) -> Object:
    """The Event ``obj`` (either form) in the form of ``to_api_version`` (``v1`` or
    ``events.k8s.io/v1``); ``obj`` itself when it is already there. Fields other than the Event's
    own (``metadata``, unknown keys) are carried over unchanged."""
    if obj.get("apiVersion") == to_api_version:
        return obj
    to_events = to_api_version == EVENTS
    out: Object = {"apiVersion": to_api_version, "kind": obj.get("kind", "Event")}
    if "metadata" in obj:
        out["metadata"] = obj["metadata"]
    mapping = _TO_EVENTS if to_events else _TO_CORE
    for source, target in mapping.items():
        if source in obj:
            out[target] = obj[source]
    for key, value in obj.items():
        if key not in mapping and key not in out:
            out[key] = value
    return out
