"""What the workload controllers (ReplicaSet, Deployment) share, as upstream's ``controller_utils``:
pod states, controller-ref claiming (adopt/release), expectations, slow-start batches, names.

Conventions (reference/cluster.md §1): a pod is *active* when not Succeeded/Failed and not being
deleted; *ready* when its ``Ready`` condition is True; *available* when ready for at least
``minReadySeconds`` since that condition's ``lastTransitionTime``.
"""

from __future__ import annotations

import dataclasses
import datetime
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import orjson

from kplane.api import errors
from kplane.api import labels as labels_mod
from kplane.client import dynamic
from kplane.runtime import ownership
from kplane.runtime import reconcile as reconcile_mod

Object = dict[str, Any]

PODS = dynamic.Resource("", "v1", "pods", "Pod", namespaced=True)
REPLICASETS = dynamic.Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)
DEPLOYMENTS = dynamic.Resource("apps", "v1", "deployments", "Deployment", namespaced=True)

EXPECTATIONS_TIMEOUT = 300.0
"""Seconds after which unobserved creates/deletes no longer hold a controller back (upstream's 5 min)."""

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_PREFIX = 58  # 63 minus the 5 random characters


def random_suffix(n: int = 5) -> str:
    """``n`` characters from the API server's name-generation alphabet."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


def safe_encode(text: str) -> str:
    """apimachinery's ``rand.SafeEncodeString``: each character mapped through the alphabet."""
    return "".join(_ALPHABET[ord(c) % len(_ALPHABET)] for c in text)


def generate_name(prefix: str) -> str:
    """A name as the API server generates it from ``generateName`` (prefix cut to 58 characters)."""
    return prefix[:_MAX_PREFIX] + random_suffix()


def deep_copy(obj: Object) -> Object:
    out: Object = orjson.loads(orjson.dumps(obj))
    return out


def meta(obj: Object) -> Object:
    m: Object = obj.get("metadata") or {}
    return m


def parse_time(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def format_time(when: datetime.datetime) -> str:
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_active(pod: Object) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def ready_condition(pod: Object) -> Object | None:
    """The pod's Ready condition (the pod's own dict: read-only), or None."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return cond  # type: ignore[no-any-return]
    return None


def is_ready(pod: Object) -> bool:
    cond = ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def available_in(pod: Object, min_ready: int, now: datetime.datetime) -> float | None:
    """0 when ``pod`` is available at ``now``; the seconds until it will be when it is ready but
    not yet long enough; None when it is not ready."""
    cond = ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    if min_ready <= 0:
        return 0.0
    since = parse_time(cond.get("lastTransitionTime"))
    if since is None:
        return 0.0
    left = min_ready - (now - since).total_seconds()
    return max(0.0, left)


def selector_of(obj: Object) -> labels_mod.Selector:
    """The workload's label selector; an empty selector selects nothing (as upstream's controllers)."""
    sel = (obj.get("spec") or {}).get("selector")
    if not sel or (not sel.get("matchLabels") and not sel.get("matchExpressions")):
        return labels_mod.Selector.nothing()
    return labels_mod.from_label_selector(sel)


def owners_of(
    child: Object, kind: str, owner_lister: Any, *, group_prefix: str = "apps/"
) -> list[reconcile_mod.Request]:
    """The owners of kind ``kind`` to sync for ``child``: its controller when that is one, else (an
    orphan not being deleted) every owner in its namespace whose selector matches its labels."""
    ns = meta(child).get("namespace") or ""
    ref = ownership.controller_of(child)
    if ref is not None:
        if ref.get("kind") == kind and str(ref.get("apiVersion", "")).startswith(group_prefix):
            return [reconcile_mod.Request(ns, str(ref.get("name", "")))]
        return []
    if owner_lister is None or meta(child).get("deletionTimestamp"):
        return []
    labels = meta(child).get("labels") or {}
    return [
        reconcile_mod.Request(ns, meta(owner).get("name", ""))
        for owner in owner_lister.namespaced(ns).list()
        if selector_of(owner).matches(labels)
    ]


def namespace_terminating(err: errors.APIError) -> bool:
    """A create refused because the namespace is being deleted (cause ``NamespaceTerminating``):
    controllers ignore it, as upstream's."""
    return any(c.reason == "NamespaceTerminating" for c in err.causes)


# Claiming.

CONTROLLER_UID_INDEX = "controllerUID"
"""An informer index of objects by their controller's UID; orphans by ``_ORPHANS`` + namespace
(upstream's ``PodControllerUIDIndex``), so a sync reads its own children and the orphans it may
adopt rather than every object of the namespace."""
_ORPHANS = "\x00orphans/"  # never a UID


def _controller_uid(obj: Any) -> list[str]:
    ref = ownership.controller_of(obj)
    if ref is not None and ref.get("uid"):
        return [str(ref["uid"])]
    return [_ORPHANS + str(meta(obj).get("namespace") or "")]


def index_by_controller(informer: Any) -> None:
    """Give a shared informer the ``CONTROLLER_UID_INDEX`` index, unless it has it."""
    if CONTROLLER_UID_INDEX not in informer.store.indexers():
        informer.add_indexers({CONTROLLER_UID_INDEX: _controller_uid})


def claim_candidates(informer: Any, owner: Object) -> list[Object]:
    """The cached objects ``claim`` may keep or adopt for ``owner``: those it controls and the
    orphans of its namespace (others are skipped by ``claim`` anyway). The cache's own objects:
    read-only. The informer needs ``index_by_controller``."""
    ns = meta(owner).get("namespace") or ""
    store = informer.store
    mine = [
        o
        for o in store.by_index(CONTROLLER_UID_INDEX, str(meta(owner).get("uid")))
        if meta(o).get("namespace") == ns
    ]
    orphans: list[Object] = store.by_index(CONTROLLER_UID_INDEX, _ORPHANS + ns)
    return mine + orphans


Patcher = Callable[[Object, Object], Awaitable[Any]]


async def claim(
    owner: Object,
    candidates: Iterable[Object],
    selector: labels_mod.Selector,
    patch: Patcher,
    can_adopt: Callable[[], Awaitable[bool]],
) -> list[Object]:
    """upstream's ``ClaimObjects``: the candidates ``owner`` controls after adopting matching orphans
    and releasing its children that no longer match (strategic-merge patches through ``patch``).

    ``can_adopt`` is the uncached re-read of the owner (called at most once, before the first
    adoption). Children that vanish meanwhile (404) are skipped.
    """
    uid = meta(owner).get("uid")
    owner_deleting = bool(meta(owner).get("deletionTimestamp"))
    ns = meta(owner).get("namespace")
    claimed: list[Object] = []
    adopt_ok: bool | None = None
    for child in candidates:
        m = meta(child)
        ref = ownership.controller_of(child)
        matches = selector.matches(m.get("labels") or {})
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches:
                claimed.append(child)
            elif not owner_deleting:
                body = {
                    "metadata": {"uid": m.get("uid"), "ownerReferences": [{"$patch": "delete", "uid": uid}]}
                }
                await _ignore_gone(patch(child, body))
            continue
        if not matches or owner_deleting or m.get("deletionTimestamp") or m.get("namespace") != ns:
            continue
        if adopt_ok is None:
            adopt_ok = await can_adopt()
        if not adopt_ok:
            continue
        ref_body = ownership.owner_reference(owner, controller=True)
        body = {"metadata": {"uid": m.get("uid"), "ownerReferences": [ref_body]}}
        adopted = await _ignore_gone(patch(child, body))
        if adopted is not None:
            claimed.append(adopted)
    return claimed


async def claim_with(
    api: dynamic.DynamicClient,
    owner_resource: dynamic.Resource,
    owner: Object,
    candidates: Iterable[Object],
    child_resource: dynamic.Resource,
) -> list[Object]:
    """``claim`` with the owner's selector, strategic-merge patches of ``child_resource`` and an
    uncached re-read of ``owner`` (same uid, not being deleted) before adopting."""
    ns = meta(owner).get("namespace")

    async def patch(child: Object, body: Object) -> Any:
        return await api.resource(child_resource).patch(
            meta(child)["name"], body, patch_type="strategic", namespace=ns
        )

    async def can_adopt() -> bool:
        try:
            fresh = await api.resource(owner_resource).get(meta(owner)["name"], namespace=ns)
        except errors.NotFound:
            return False
        return meta(fresh).get("uid") == meta(owner).get("uid") and not meta(fresh).get("deletionTimestamp")

    return await claim(owner, candidates, selector_of(owner), patch, can_adopt)


async def _ignore_gone(call: Awaitable[Any]) -> Any:
    try:
        return await call
    except (errors.NotFound, errors.Invalid, errors.Conflict):
        return None


async def update_status(resource: Any, obj: Object, status: Object, *, retries: int = 1) -> Object | None:
    """Upstream's status write (``updateReplicaSetStatus``, ``storeDaemonSetStatus``...): PUT ``obj``
    with ``status`` to its ``status`` subresource through ``resource`` (a dynamic resource client);
    the object's resourceVersion is the precondition, and on a conflict the latest object is read
    and ``status`` put on it, up to ``retries`` more times. The controllers' roles grant ``update``
    on ``<resource>/status``, not ``patch``. Returns the written object, None when it is gone; a
    conflict past the retries raises (the reconcile is retried)."""
    name, namespace = meta(obj)["name"], meta(obj).get("namespace") or None
    current = obj
    for attempt in range(retries + 1):
        try:
            written: Object = await resource.update(
                {**current, "status": status}, namespace=namespace, subresource="status"
            )
            return written
        except errors.NotFound:
            return None
        except errors.Conflict:
            if attempt == retries:
                raise
        try:
            current = await resource.get(name, namespace=namespace)
        except errors.NotFound:
            return None
    return None


# Expectations.


@dataclasses.dataclass
class _Expect:
    add: int = 0
    delete: int = 0
    at: float = 0.0


class Expectations:
    """upstream's ``ControllerExpectations``: how many creates/deletes a key still waits to observe.

    ``satisfied`` is True when nothing is pending or the expectation is older than 5 minutes.
    Deletions are tracked by pod key (``UIDTrackingControllerExpectations``) so a pod deleted by us
    and then seen deleted counts once.
    """

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._items: dict[str, _Expect] = {}
        self._deleting: dict[str, set[str]] = {}
        self._monotonic = monotonic

    def satisfied(self, key: str) -> bool:
        e = self._items.get(key)
        if e is None:
            return True
        if e.add <= 0 and e.delete <= 0:
            return True
        return self._monotonic() - e.at > EXPECTATIONS_TIMEOUT

    def expect(self, key: str, *, adds: int = 0, deletes: Iterable[str] = ()) -> None:
        gone = set(deletes)
        self._items[key] = _Expect(adds, len(gone), self._monotonic())
        self._deleting[key] = gone

    def created(self, key: str) -> None:
        e = self._items.get(key)
        if e is not None:
            e.add -= 1

    def deleted(self, key: str, pod_key: str) -> None:
        pending = self._deleting.get(key)
        if pending is not None and pod_key in pending:
            pending.discard(pod_key)
            e = self._items.get(key)
            if e is not None:
                e.delete -= 1

    def forget(self, key: str) -> None:
        self._items.pop(key, None)
        self._deleting.pop(key, None)


def slow_start_batches(count: int, initial: int = 1) -> Iterable[int]:
    """Batch sizes 1, 2, 4, … adding up to ``count`` (upstream's ``slowStartBatch``)."""
    remaining, size = count, min(count, initial)
    while remaining > 0:
        yield size
        remaining -= size
        size = min(2 * size, remaining)


def pod_key(pod: Object) -> str:
    m = meta(pod)
    return f"{m.get('namespace', '')}/{m.get('name', '')}"


def int_or_percent(value: Any, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int, or ``"N%"`` of ``total`` rounded as told."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        try:
            pct = int(text[:-1])
        except ValueError:
            return 0
        scaled = pct * total
        return -(-scaled // 100) if round_up else scaled // 100
    try:
        return int(text)
    except ValueError:
        return 0


class PodOwner(Protocol):
    """A controller whose pods ``PodHandler`` follows: who owns a pod, and what it expects."""

    expectations: Expectations

    def owners_of(self, pod: Object) -> list[reconcile_mod.Request]: ...


class PodHandler:
    """Pod events: lower the owner's expectations (creates seen, deletes seen) and enqueue the
    owners concerned (ReplicaSets, DaemonSets)."""

    def __init__(self, ctrl: PodOwner) -> None:
        self.ctrl = ctrl

    def create(self, obj: Any, queue: Any) -> None:
        for req in self.ctrl.owners_of(obj):
            if meta(obj).get("deletionTimestamp"):
                self.ctrl.expectations.deleted(str(req), pod_key(obj))
            elif ownership.controller_of(obj) is not None:
                self.ctrl.expectations.created(str(req))
            queue.add(req)

    def update(self, old: Any, new: Any, queue: Any) -> None:
        if meta(old).get("resourceVersion") == meta(new).get("resourceVersion"):
            return
        reqs = set(self.ctrl.owners_of(new))
        if meta(new).get("deletionTimestamp") and not meta(old).get("deletionTimestamp"):
            for req in reqs:
                self.ctrl.expectations.deleted(str(req), pod_key(new))
        old_ref, new_ref = ownership.controller_of(old), ownership.controller_of(new)
        if old_ref != new_ref or meta(old).get("labels") != meta(new).get("labels"):
            reqs.update(self.ctrl.owners_of(old))
        for req in reqs:
            queue.add(req)

    def delete(self, obj: Any, queue: Any) -> None:
        obj = getattr(obj, "obj", obj)  # a tombstone carries the last known state
        if not isinstance(obj, dict) or ownership.controller_of(obj) is None:
            return
        for req in self.ctrl.owners_of(obj):
            self.ctrl.expectations.deleted(str(req), pod_key(obj))
            queue.add(req)

    def generic(self, obj: Any, queue: Any) -> None:
        for req in self.ctrl.owners_of(obj):
            queue.add(req)
