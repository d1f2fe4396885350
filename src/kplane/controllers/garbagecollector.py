"""The garbage collector: deletes dependents whose owners are gone, and carries out Foreground and
Orphan deletions, as upstream's ``pkg/controller/garbagecollector`` (reference/cluster.md §3).

At start it discovers every resource that can be listed, watched and deleted (``events`` aside),
opens an informer on each (shared with the other controllers through the manager's cache) and
builds the owner graph from their full lists, so dependents orphaned while no collector ran (a
server restart) are collected too; the discovery is redone every 30 s for new resources (CRDs).
Work items go through one deduplicating queue:

* ``attempt(uid)``, upstream's ``attemptToDeleteItem`` on a live re-read: owner references are
  *solid* (the owner exists and is not foreground-deleting), *dangling* (404, or another uid) or
  *waiting* (the owner is being deleted with ``foregroundDeletion``). Some solid → keep it, patching
  away dangling and waiting references; none solid, some waiting and it has dependents → delete
  it with Foreground; otherwise delete it with the policy its own finalizers say (``orphan`` →
  Orphan, ``foregroundDeletion`` → Foreground, else Background). An object being deleted with
  ``foregroundDeletion`` loses that finalizer once no dependent with ``blockOwnerDeletion`` remains.
* ``orphan(uid)``: remove the owner's reference from every dependent, then its ``orphan`` finalizer.

Failed items come back after 0.5 s (doubling to 30 s). Owners are looked up in the graph first and
then with a live GET; 404s are remembered in a bounded absent-owner cache.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
from typing import Any

from kplane import runtime
from kplane.api import errors
from kplane.api.gvk import GroupVersionKind
from kplane.client import dynamic
from kplane.client.discovery import APIResource
from kplane.controllers.workload import Object, meta

log = logging.getLogger(__name__)

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
RESYNC_DISCOVERY = 30.0
WORKERS = 4
ABSENT_CACHE = 10_000
_IGNORED = {("", "events"), ("events.k8s.io", "events")}


@dataclasses.dataclass
class _Node:
    uid: str
    api_version: str = ""
    kind: str = ""
    name: str = ""
    namespace: str = ""
    owners: list[Object] = dataclasses.field(default_factory=list)
    dependents: set[str] = dataclasses.field(default_factory=set)
    deleting: bool = False
    finalizers: tuple[str, ...] = ()
    virtual: bool = True

    def foreground_deleting(self) -> bool:
        return self.deleting and FOREGROUND in self.finalizers


class GarbageCollector:
    """A manager runnable (leader only): see the module docstring."""

    def __init__(self, manager: runtime.Manager) -> None:
        self.manager = manager
        self.api = manager.api
        self.clock = manager.clock
        self.nodes: dict[str, _Node] = {}
        self.watched: set[tuple[str, str]] = set()
        self._absent: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._queued: set[tuple[str, str]] = set()
        self._failures: dict[tuple[str, str], int] = {}
        self.synced = asyncio.Event()

    async def start(self) -> None:
        workers = [asyncio.create_task(self._work()) for _ in range(WORKERS)]
        try:
            while True:
                try:
                    await self._discover()
                except (errors.APIError, OSError) as err:
                    log.warning("garbage collector discovery failed: %s", err)
                self.synced.set()
                await self.clock.sleep(RESYNC_DISCOVERY)
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    # The graph.

    async def _discover(self) -> None:
        self.api.discovery.invalidate()
        snap = await self.api.discovery.snapshot()
        fresh: list[APIResource] = []
        seen_kinds: set[tuple[str, str]] = set()
        for res in snap.prioritized():
            verbs = set(res.verbs)
            key = (res.group, res.plural)
            if "/" in res.plural or key in _IGNORED or not {"list", "watch", "delete"} <= verbs:
                continue
            if (res.group, res.kind) in seen_kinds:
                continue  # one version per kind is enough
            seen_kinds.add((res.group, res.kind))
            if key not in self.watched:
                self.watched.add(key)
                fresh.append(res)
        informers = []
        for res in fresh:
            inf = await self.manager.cache.informer(res.to_resource())
            inf.add_event_handler(_Handler(self, res))
            informers.append(inf)
        for inf in informers:
            try:
                async with asyncio.timeout(30):
                    await inf.wait_for_sync()
            except TimeoutError:
                log.warning("garbage collector: an informer did not sync in 30 s")
        if fresh:  # a full scan: every dependent is checked once
            for node in list(self.nodes.values()):
                if node.virtual:
                    continue
                if node.owners:
                    self.enqueue("attempt", node.uid)
                if node.deleting and ORPHAN in node.finalizers:
                    self.enqueue("orphan", node.uid)
                if node.foreground_deleting():
                    self.enqueue("attempt", node.uid)

    def observe(self, obj: Object) -> None:
        m = meta(obj)
        uid = m.get("uid")
        if not uid:
            return
        node = self.nodes.get(uid)
        if node is None:
            node = self.nodes[uid] = _Node(uid)
        was_deleting = node.deleting
        old_owners = {str(r.get("uid") or "") for r in node.owners}
        node.api_version, node.kind = obj.get("apiVersion", ""), obj.get("kind", "")
        node.name, node.namespace = m.get("name", ""), m.get("namespace", "") or ""
        node.owners = [dict(r) for r in m.get("ownerReferences") or ()]
        node.deleting = bool(m.get("deletionTimestamp"))
        node.finalizers = tuple(m.get("finalizers") or ())
        node.virtual = False
        new_owners = {str(r.get("uid") or "") for r in node.owners}
        for gone in old_owners - new_owners:
            owner = self.nodes.get(gone)
            if owner is not None:
                owner.dependents.discard(uid)
                if owner.foreground_deleting():
                    self.enqueue("attempt", gone)
        for ref in node.owners:
            owner_uid = ref.get("uid") or ""
            owner = self.nodes.get(owner_uid)
            if owner is None:
                owner = self.nodes[owner_uid] = _Node(owner_uid)
            owner.dependents.add(uid)
            if owner.virtual or owner_uid in self._absent or owner.foreground_deleting():
                self.enqueue("attempt", uid)
        if node.deleting:
            if ORPHAN in node.finalizers:
                self.enqueue("orphan", uid)
            if FOREGROUND in node.finalizers:
                self.enqueue("attempt", uid)
                for dep in node.dependents:
                    self.enqueue("attempt", dep)
            if not was_deleting:
                for ref in node.owners:
                    owner = self.nodes.get(ref.get("uid") or "")
                    if owner is not None and owner.foreground_deleting():
                        self.enqueue("attempt", owner.uid)

    def forget(self, obj: Object) -> None:
        uid = meta(obj).get("uid")
        node = self.nodes.pop(uid, None) if uid else None
        if node is None:
            return
        self._remember_absent(node.uid)
        for ref in node.owners:
            owner = self.nodes.get(ref.get("uid") or "")
            if owner is not None:
                owner.dependents.discard(node.uid)
                if owner.foreground_deleting():
                    self.enqueue("attempt", owner.uid)
                elif owner.virtual and not owner.dependents:
                    self.nodes.pop(owner.uid, None)
        if node.dependents:
            placeholder = self.nodes[node.uid] = _Node(node.uid, dependents=set(node.dependents))
            del placeholder  # stays virtual: dependents still point at it until collected
            for dep in node.dependents:
                self.enqueue("attempt", dep)

    def _remember_absent(self, uid: str) -> None:
        self._absent[uid] = None
        self._absent.move_to_end(uid)
        while len(self._absent) > ABSENT_CACHE:
            self._absent.popitem(last=False)

    # The queue.

    def enqueue(self, action: str, uid: str) -> None:
        item = (action, uid)
        if item not in self._queued:
            self._queued.add(item)
            self._queue.put_nowait(item)

    async def _work(self) -> None:
        while True:
            item = await self._queue.get()
            self._queued.discard(item)
            action, uid = item
            try:
                if action == "orphan":
                    await self._orphan(uid)
                else:
                    await self._attempt(uid)
                self._failures.pop(item, None)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # retried with backoff: the API or the graph may catch up
                n = self._failures[item] = self._failures.get(item, 0) + 1
                log.info("garbage collector: %s %s failed (%s); retrying", action, uid, err)
                asyncio.get_running_loop().call_later(
                    min(30.0, 0.5 * 2 ** (n - 1)), self.enqueue, action, uid
                )

    # Work.

    def _client(self, api_version: str, kind: str) -> dynamic.DynamicResourceClient:
        group, _, version = api_version.rpartition("/")
        return self.api.dynamic.resource(GroupVersionKind(group, version, kind))

    async def _live(self, node: _Node) -> Object | None:
        try:
            obj = await self._client(node.api_version, node.kind).get(
                node.name, namespace=node.namespace or None
            )
        except errors.NotFound:
            return None
        return obj if meta(obj).get("uid") == node.uid else None

    async def _attempt(self, uid: str) -> None:
        node = self.nodes.get(uid)
        if node is None or node.virtual:
            return
        obj = await self._live(node)
        if obj is None:
            return
        m = meta(obj)
        if m.get("deletionTimestamp"):
            if FOREGROUND in (m.get("finalizers") or ()):
                await self._finish_foreground(node, obj)
            return
        solid: list[Object] = []
        dangling: list[Object] = []
        waiting: list[Object] = []
        for ref in m.get("ownerReferences") or ():
            state = await self._owner_state(ref, node)
            {"solid": solid, "dangling": dangling, "waiting": waiting}[state].append(ref)
        if solid:
            if dangling or waiting:
                await self._drop_refs(node, {r.get("uid") for r in dangling + waiting})
            return
        if not dangling and not waiting:
            return
        policy: dynamic.PropagationPolicy
        if waiting and node.dependents:
            policy = "Foreground"
        elif ORPHAN in (m.get("finalizers") or ()):
            policy = "Orphan"
        elif FOREGROUND in (m.get("finalizers") or ()):
            policy = "Foreground"
        else:
            policy = "Background"
        try:
            await self._client(node.api_version, node.kind).delete(
                node.name,
                namespace=node.namespace or None,
                propagation_policy=policy,
                preconditions={"uid": uid},
            )
        except (errors.NotFound, errors.Conflict):
            pass

    async def _owner_state(self, ref: Object, dependent: _Node) -> str:
        owner_uid = ref.get("uid") or ""
        owner = self.nodes.get(owner_uid)
        if owner is not None and not owner.virtual:
            if owner.namespace and owner.namespace != dependent.namespace:
                return "dangling"
            return "waiting" if owner.foreground_deleting() else "solid"
        if owner_uid in self._absent:
            return "dangling"
        probe = _Node(
            owner_uid, str(ref.get("apiVersion", "")), str(ref.get("kind", "")), str(ref.get("name", ""))
        )
        try:
            resource = await self._client(probe.api_version, probe.kind).resource()
        except errors.NotFound:
            return "solid"  # an unknown kind: never collect through it (upstream retries)
        if resource.namespaced:
            if not dependent.namespace:
                return "solid"  # a cluster-scoped dependent of a namespaced owner is never collected
            probe.namespace = dependent.namespace
        live = await self._live(probe)
        if live is None:
            self._remember_absent(owner_uid)
            return "dangling"
        m = meta(live)
        return (
            "waiting" if m.get("deletionTimestamp") and FOREGROUND in (m.get("finalizers") or ()) else "solid"
        )

    async def _drop_refs(self, node: _Node, uids: set[Any]) -> None:
        """Remove the owner references to ``uids`` (a JSON patch guarded by a test of the current list)."""
        obj = await self._live(node)
        if obj is None:
            return
        refs = meta(obj).get("ownerReferences") or []
        kept = [r for r in refs if r.get("uid") not in uids]
        if len(kept) == len(refs):
            return
        patch = [
            {"op": "test", "path": "/metadata/ownerReferences", "value": refs},
            {"op": "replace", "path": "/metadata/ownerReferences", "value": kept},
        ]
        try:
            await self._client(node.api_version, node.kind).patch(
                node.name, patch, patch_type="json", namespace=node.namespace or None
            )
        except errors.NotFound:
            pass

    async def _finish_foreground(self, node: _Node, obj: Object) -> None:
        blocking = []
        for dep_uid in list(node.dependents):
            dep = self.nodes.get(dep_uid)
            if dep is None or dep.virtual:
                continue
            if any(r.get("uid") == node.uid and r.get("blockOwnerDeletion") for r in dep.owners):
                blocking.append(dep)
        if blocking:
            for dep in blocking:
                if not dep.deleting:
                    self.enqueue("attempt", dep.uid)
            return
        await self._remove_finalizer(node, FOREGROUND)

    async def _orphan(self, uid: str) -> None:
        node = self.nodes.get(uid)
        if node is None or node.virtual:
            return
        for dep_uid in list(node.dependents):
            dep = self.nodes.get(dep_uid)
            if dep is not None and not dep.virtual:
                await self._drop_refs(dep, {uid})
        await self._remove_finalizer(node, ORPHAN)

    async def _remove_finalizer(self, node: _Node, finalizer: str) -> None:
        for _ in range(5):
            obj = await self._live(node)
            if obj is None or finalizer not in (meta(obj).get("finalizers") or ()):
                return
            meta(obj)["finalizers"] = [f for f in meta(obj)["finalizers"] if f != finalizer]
            try:
                await self._client(node.api_version, node.kind).update(obj, namespace=node.namespace or None)
                return
            except errors.NotFound:
                return
            except errors.Conflict:
                continue
        raise errors.Conflict(f"could not remove finalizer {finalizer} from {node.kind} {node.name}")


class _Handler:
    """Informer events into the graph."""

    def __init__(self, gc: GarbageCollector, resource: APIResource) -> None:
        self.gc = gc
        self.api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
        self.kind = resource.kind

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.gc.observe(self._typed(obj))

    def on_update(self, old: Any, new: Any) -> None:
        self.gc.observe(self._typed(new))

    def on_delete(self, obj: Any) -> None:
        self.gc.forget(getattr(obj, "obj", obj))

    def _typed(self, obj: Object) -> Object:
        """Objects from a list may lack apiVersion and kind; the graph needs them for live reads."""
        if obj.get("apiVersion") and obj.get("kind"):
            return obj
        return {**obj, "apiVersion": self.api_version, "kind": self.kind}
