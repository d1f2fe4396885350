"""Reconcile tracing: why each reconcile ran and what it wrote.

Problem: a work queue forgets why a request is in it (many events become one request), and nothing
ties a write to the reconcile that made it, so "why did this object change?" has no answer. Approach:
the queue the sources fill is wrapped (``TriggerQueue``): each ``add`` notes its cause, the event
the source was handling (type, object, resourceVersion, and whether the request is the object's
own, its owner's or a mapping's), beside the request, and the controller notes its own requeues.
When a worker takes the request, the causes noted so far become the reconcile's ``triggers``
(causes noted during it belong to the next one, as the queue's own semantics say). While the
reconciler runs, ``CURRENT`` holds its ``Trace``; the manager's REST client reports every write
(verb, object, the resourceVersion it produced, a conflict) to ``Tracer.observe_write``, which
appends it to the current trace. Finished traces go to a bounded ring (``capacity``), oldest out.

Cost: tracing runs on every event and reconcile, so the hot path only stores strings already at
hand in slots objects (no dicts, no copies, no ids of its own: a reconcile's uuid serves), reads a
dict object's metadata directly, and takes timestamps as the wall time at construction plus the
clock's monotonic time since (one cheap call; a wall-clock step later does not move them). JSON is
built only when queried.

With an OpenTelemetry ``TracerProvider`` (the optional ``kplane[tracing]`` extra), each reconcile is
also a span (``reconcile <controller>``) whose trace id is the trace's, with one span event per
trigger and per write; without one, nothing of OpenTelemetry is imported.

Bounds: at most ``MAX_TRIGGERS`` causes per pending request and ``MAX_WRITES`` writes per reconcile
are kept (the rest are counted); pending causes are held only for requests in the queue.
"""

from __future__ import annotations

import collections
import contextvars
import dataclasses
import time
import uuid
from collections.abc import Mapping
from typing import Any

from kplane._util import clock as clock_mod
from kplane.informers import store as store_mod
from kplane.runtime import handler as handler_mod
from kplane.runtime import reconcile

MAX_TRIGGERS = 16
MAX_WRITES = 64
DEFAULT_CAPACITY = 1000

CURRENT: contextvars.ContextVar[Trace | None] = contextvars.ContextVar("kplane_reconcile_trace", default=None)
"""The trace of the reconcile the current task runs (None outside reconciles)."""


@dataclasses.dataclass(slots=True)
class Trigger:
    """One cause of a reconcile. ``type``: ``Event`` (a watch event), ``InitialList`` (the object
    existed when the source started), ``Resync`` (the informer's periodic resync), ``Requeue``
    (the reconciler asked), ``RequeueAfter`` (after ``after`` seconds), ``Retry`` (after an error).
    For events, ``via`` says how the object led to the request: ``object`` (the request is the
    object), ``owner`` (its owner), ``map`` (a mapping function)."""

    type: str
    at: float
    via: str = ""
    event: str = ""
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    resource_version: str = ""
    after: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "time": self.at}
        if self.event:
            out.update(
                via=self.via,
                event=self.event,
                apiVersion=self.api_version,
                kind=self.kind,
                namespace=self.namespace,
                name=self.name,
                resourceVersion=self.resource_version,
            )
        if self.after:
            out["after"] = self.after
        return out


@dataclasses.dataclass(slots=True)
class Write:
    """One write a reconcile made: ``resource`` is ``<plural>[.<group>]``, ``resource_version``
    what the server answered (empty when it failed), ``conflict`` a 409 Conflict answer."""

    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    resource_version: str
    conflict: bool
    error: str
    at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "verb": self.verb,
            "resource": self.resource,
            "subresource": self.subresource,
            "namespace": self.namespace,
            "name": self.name,
            "resourceVersion": self.resource_version,
            "conflict": self.conflict,
            "error": self.error,
            "time": self.at,
        }


@dataclasses.dataclass(slots=True)
class Trace:
    """One reconcile: what triggered it, what it wrote, how it ended (``result``: ``Success``,
    ``Requeue``, ``RequeueAfter``, ``Error``, ``TerminalError``; ``error`` its text)."""

    trace_id: str
    reconcile_id: str
    controller: str
    namespace: str
    name: str
    start: float
    triggers: list[Trigger]
    dropped_triggers: int = 0
    writes: list[Write] = dataclasses.field(default_factory=list)
    dropped_writes: int = 0
    duration: float = 0.0
    result: str = ""
    error: str = ""
    span: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "traceID": self.trace_id,
            "reconcileID": self.reconcile_id,
            "controller": self.controller,
            "namespace": self.namespace,
            "name": self.name,
            "start": self.start,
            "durationSeconds": self.duration,
            "result": self.result,
            "error": self.error,
            "triggers": [t.to_json() for t in self.triggers],
            "droppedTriggers": self.dropped_triggers,
            "writes": [w.to_json() for w in self.writes],
            "droppedWrites": self.dropped_writes,
        }


class Tracer:
    """The traces of one manager (see the module docstring). Use from the manager's event loop."""

    def __init__(
        self,
        *,
        capacity: int = DEFAULT_CAPACITY,
        clock: clock_mod.Clock | None = None,
        provider: Any = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        clock = clock or clock_mod.RealClock()
        self._monotonic = time.monotonic if type(clock) is clock_mod.RealClock else clock.monotonic
        self._wall0 = clock.now().timestamp() - clock.monotonic()
        self._ring: collections.deque[Trace] = collections.deque(maxlen=capacity)
        self._pending: dict[tuple[str, reconcile.Request], list[Trigger]] = {}
        self._dropped: dict[tuple[str, reconcile.Request], int] = {}  # causes past MAX_TRIGGERS
        self._otel = provider.get_tracer("kplane.runtime") if provider is not None else None

    def now(self) -> float:
        """The clock's wall time, in seconds since the epoch (see the module docstring)."""
        return self._wall0 + self._monotonic()

    def note(self, controller: str, req: reconcile.Request, trigger: Trigger) -> None:
        """Record ``trigger`` as a cause of ``req``'s next reconcile by ``controller``."""
        key = (controller, req)
        triggers = self._pending.get(key)
        if triggers is None:
            self._pending[key] = [trigger]
        elif len(triggers) < MAX_TRIGGERS:
            triggers.append(trigger)
        else:
            self._dropped[key] = self._dropped.get(key, 0) + 1

    def begin(self, controller: str, req: reconcile.Request, reconcile_id: str) -> Trace:
        """The trace of a reconcile starting now, holding the causes noted for it so far."""
        key = (controller, req)
        triggers = self._pending.pop(key, None) or []
        dropped = self._dropped.pop(key, 0) if self._dropped else 0
        start = self._wall0 + self._monotonic()
        trace = Trace("", reconcile_id, controller, req.namespace, req.name, start, triggers, dropped)
        if self._otel is not None:
            trace.span = self._otel.start_span(
                f"reconcile {controller}",
                start_time=int(trace.start * 1e9),
                attributes={
                    "kplane.controller": controller,
                    "kplane.namespace": req.namespace,
                    "kplane.name": req.name,
                    "kplane.reconcile_id": reconcile_id,
                },
            )
            trace.trace_id = format(trace.span.get_span_context().trace_id, "032x")
        else:
            # a reconcile id is a fresh uuid4 already: its 32 hex digits serve as the trace id
            trace.trace_id = reconcile_id.replace("-", "") if len(reconcile_id) == 36 else uuid.uuid4().hex
        return trace

    def end(self, trace: Trace, result: str, error: str = "") -> None:
        """Finish ``trace`` and keep it in the ring (the oldest goes when it is full)."""
        end = self._wall0 + self._monotonic()
        trace.duration = max(0.0, end - trace.start)
        trace.result, trace.error = result, error
        self._ring.append(trace)
        span, trace.span = trace.span, None
        if span is not None:
            _export(span, trace, int(end * 1e9))

    def observe_write(
        self, verb: str, resource: str, subresource: str, namespace: str, name: str, result: Any, error: Any
    ) -> None:
        """The REST client's write observer: append the write to the current reconcile's trace."""
        trace = CURRENT.get()
        if trace is None:
            return
        if len(trace.writes) >= MAX_WRITES:
            trace.dropped_writes += 1
            return
        at = self._wall0 + self._monotonic()
        if error is not None:
            conflict = getattr(error, "reason", "") == "Conflict"
            write = Write(verb, resource, subresource, namespace, name, "", conflict, str(error), at)
        elif result is not None:
            _, _, ns, obj_name, rv = identity(result)
            write = Write(verb, resource, subresource, namespace or ns, name or obj_name, rv, False, "", at)
        else:
            write = Write(verb, resource, subresource, namespace, name, "", False, "", at)
        trace.writes.append(write)

    def traces(self) -> list[Trace]:
        """The finished traces, oldest first."""
        return list(self._ring)

    def query(self, params: Mapping[str, str]) -> dict[str, Any]:
        """The ``ReconcileTraceList`` of the traces matching ``params`` (all optional):
        ``controller``, ``namespace``, ``name`` (the reconciled request), ``resourceVersion`` (a write
        produced it), ``writeName``/``writeResource`` (a write touched it), ``traceID``, ``limit``
        (the newest N, default 100). Newest last."""
        found = [t for t in self._ring if _matches(t, params)]
        try:
            limit = max(1, min(int(params.get("limit") or 100), len(self._ring) or 1))
        except ValueError:
            limit = 100
        return {
            "apiVersion": "kplane.dev/v1alpha1",
            "kind": "ReconcileTraceList",
            "items": [t.to_json() for t in found[-limit:]],
        }


def _matches(trace: Trace, params: Mapping[str, str]) -> bool:
    for key, value in (
        ("controller", trace.controller),
        ("namespace", trace.namespace),
        ("name", trace.name),
    ):
        wanted = params.get(key)
        if wanted and wanted != value:
            return False
    if params.get("traceID") and params["traceID"] != trace.trace_id:
        return False
    rv, write_name, write_resource = (
        params.get("resourceVersion"),
        params.get("writeName"),
        params.get("writeResource"),
    )
    if rv or write_name or write_resource:
        return any(
            (not rv or w.resource_version == rv)
            and (not write_name or w.name == write_name)
            and (not write_resource or w.resource == write_resource)
            for w in trace.writes
        )
    return True


def _export(span: Any, trace: Trace, end_ns: int) -> None:
    for t in trace.triggers:
        span.add_event(
            f"trigger {t.type}",
            {k: v for k, v in t.to_json().items() if isinstance(v, str | int | float) and v != ""},
            timestamp=int(t.at * 1e9),
        )
    for w in trace.writes:
        span.add_event(
            f"write {w.verb}",
            {k: v for k, v in w.to_json().items() if isinstance(v, str | int | float | bool)},
            timestamp=int(w.at * 1e9),
        )
    span.set_attribute("kplane.result", trace.result)
    if trace.error:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, trace.error))
    span.end(end_time=end_ns)


class TriggerQueue:
    """The queue a controller's sources add to when tracing: notes each add's cause (``current``,
    set by the source before it calls its handler), then adds to the controller's queue."""

    __slots__ = ("controller", "current", "queue", "tracer")

    def __init__(self, queue: handler_mod.RequestQueue, tracer: Tracer, controller: str) -> None:
        self.queue = queue
        self.tracer = tracer
        self.controller = controller
        self.current: Trigger | None = None

    def add(self, item: reconcile.Request) -> None:
        if self.current is not None:
            self.tracer.note(self.controller, item, self.current)
        self.queue.add(item)

    def event(self, event: str, obj: Any, handler: handler_mod.EventHandler, *, kind: str = "Event") -> None:
        """Make the next adds' cause ``event`` on ``obj`` seen by ``handler``."""
        via = (
            "object"
            if isinstance(handler, handler_mod.EnqueueRequestForObject)
            else "owner"
            if isinstance(handler, handler_mod.EnqueueRequestForOwner)
            else "map"
        )
        api_version, kind_, namespace, name, rv = identity(obj)
        self.current = Trigger(kind, self.tracer.now(), via, event, api_version, kind_, namespace, name, rv)


def identity(obj: Any) -> tuple[str, str, str, str, str]:
    """``(apiVersion, kind, namespace, name, resourceVersion)`` of a dict or a typed object, each
    "" when absent. Dicts (what the dynamic client and informers hold) are read directly."""
    if type(obj) is dict:
        meta = obj.get("metadata")
        if type(meta) is dict:  # an API object: its strings are strings
            get = meta.get
            return (
                obj.get("apiVersion") or "",
                obj.get("kind") or "",
                get("namespace") or "",
                get("name") or "",
                get("resourceVersion") or "",
            )
    api_version = obj.get("apiVersion", "") if isinstance(obj, dict) else getattr(obj, "api_version", "")
    kind = obj.get("kind", "") if isinstance(obj, dict) else getattr(obj, "kind", "")
    meta_of = store_mod.object_meta
    return (
        str(api_version or ""),
        str(kind or ""),
        str(meta_of(obj, "namespace") or ""),
        str(meta_of(obj, "name") or ""),
        str(_meta(obj, "resourceVersion")),
    )


def _meta(obj: Any, field: str) -> Any:
    """``metadata.<field>`` of a dict or a typed model ("" if absent)."""
    return store_mod.object_meta(obj, field) or ""


def same_version(old: Any, new: Any) -> bool:
    """True when ``old`` and ``new`` are one state (an informer resync), not a change."""
    return old is new or (old is not None and _meta(old, "resourceVersion") == _meta(new, "resourceVersion"))
