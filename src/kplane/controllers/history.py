"""ControllerRevisions: the template history of StatefulSets and DaemonSets, as upstream's
``pkg/controller/history`` and the two controllers' revision code (reference/cluster.md §6.3).

A revision holds ``data`` = ``{"spec": {"template": <template> + {"$patch": "replace"}}}`` (what
``kubectl rollout undo`` applies as a strategic-merge patch), a ``revision`` number, the owner's
template labels plus ``controller.kubernetes.io/hash`` (FNV-32 of the data's canonical JSON and the
collision count), the owner's annotations and a controller reference. ``sync`` finds the revision
equal to the owner's template (re-numbering it to max + 1 when it is an older one, so an undo shows
as the newest revision), or creates ``<owner>-<hash>`` (the name hash is the caller's: the
StatefulSet uses the revision hash, the DaemonSet its pod-template hash). A name taken by a
revision with other data is a hash collision: the caller bumps ``status.collisionCount`` and syncs
again. ``truncate`` deletes the oldest revisions beyond ``revisionHistoryLimit`` that are neither
the current nor the update revision nor used by a live pod.

Departure: the hash is of kplane's canonical JSON (sorted keys, compact), not Go's
``encoding/json`` output, so names have upstream's shape but not kube-controller-manager's values.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

import orjson

from kplane.api import errors
from kplane.client import dynamic
from kplane.controllers import workload
from kplane.controllers.workload import Object, meta
from kplane.runtime import ownership

CONTROLLERREVISIONS = dynamic.Resource(
    "apps", "v1", "controllerrevisions", "ControllerRevision", namespaced=True
)
HASH_LABEL = "controller.kubernetes.io/hash"
_MAX_PREFIX = 223  # upstream's ControllerRevisionName: a name leaves room for the hash

_FNV32_OFFSET, _FNV32_PRIME = 0x811C9DC5, 0x01000193


class Collision(Exception):
    """``<owner>-<hash>`` is taken by a revision with other data: bump ``collisionCount``."""


def fnv32(data: bytes) -> int:
    """FNV-1 (not 1a) 32-bit, as Go's ``hash/fnv.New32``."""
    h = _FNV32_OFFSET
    for byte in data:
        h = ((h * _FNV32_PRIME) & 0xFFFFFFFF) ^ byte
    return h


def revision_data(owner: Object) -> Object:
    """The revision data of ``owner``: its template, marked to replace the whole template on undo."""
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def template_of(revision: Object) -> Object:
    """The pod template a revision records (``$patch`` removed)."""
    template = dict(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def revision_hash(data: Object, collision_count: int | None) -> str:
    """upstream's ``HashControllerRevision``: FNV-32 of the data, then of the collision count's
    decimal digits, safe-encoded."""
    raw = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        raw += str(collision_count).encode()
    return workload.safe_encode(str(fnv32(raw)))


def revision_name(prefix: str, suffix: str) -> str:
    return f"{prefix[:_MAX_PREFIX]}-{suffix}"


def number(revision: Object) -> int:
    value = revision.get("revision")
    return value if isinstance(value, int) else 0


def owned(revisions: Iterable[Object], owner: Object) -> list[Object]:
    """``revisions`` controlled by ``owner``, oldest (lowest number) first."""
    uid = meta(owner).get("uid")
    mine = [r for r in revisions if (ownership.controller_of(r) or {}).get("uid") == uid]
    return sorted(
        mine, key=lambda r: (number(r), meta(r).get("creationTimestamp") or "", meta(r).get("name"))
    )


def _equal(a: Object, b: Object) -> bool:
    return (a.get("data") or {}) == (b.get("data") or {})


class History:
    """Revision writes for one kind of owner, through ``api``."""

    def __init__(self, api: dynamic.DynamicClient, owner_resource: dynamic.Resource) -> None:
        self.api = api
        self.owner_resource = owner_resource
        self.client = api.resource(CONTROLLERREVISIONS)

    async def claim(self, owner: Object, candidates: Iterable[Object]) -> list[Object]:
        """The revisions ``owner`` controls (adopting matching orphans), oldest first."""
        claimed = await workload.claim_with(
            self.api, self.owner_resource, owner, candidates, CONTROLLERREVISIONS
        )
        return owned(claimed, owner)

    async def sync(
        self,
        owner: Object,
        revisions: list[Object],
        *,
        name_hash: Callable[[int | None], str],
        extra_labels: Callable[[str], dict[str, str]] = lambda _h: {},
    ) -> tuple[Object, list[Object]]:
        """The update revision of ``owner`` and the revisions after it is written (oldest first).

        ``name_hash(collision_count)`` gives the name's suffix; ``extra_labels(suffix)`` labels added
        beside the template's and the hash. Raises ``Collision`` (see the module docstring).
        """
        ns = meta(owner)["namespace"]
        collisions = (owner.get("status") or {}).get("collisionCount")
        data = revision_data(owner)
        candidate: Object = {"data": data}
        top = max((number(r) for r in revisions), default=0)
        equal = [r for r in revisions if _equal(r, candidate)]
        if equal:
            found = equal[-1]
            if number(found) == top:
                return found, revisions
            try:  # an older template came back (undo): it becomes the newest revision
                updated = await self.client.patch(
                    meta(found)["name"], {"revision": top + 1}, patch_type="merge", namespace=ns
                )
            except errors.NotFound:
                updated = None
            if updated is not None:
                rest = [r for r in revisions if meta(r).get("uid") != meta(found).get("uid")]
                return updated, [*rest, updated]
        suffix = name_hash(collisions)
        tmeta = ((owner.get("spec") or {}).get("template") or {}).get("metadata") or {}
        labels = {
            **(tmeta.get("labels") or {}),
            HASH_LABEL: revision_hash(data, collisions),
            **extra_labels(suffix),
        }
        body: Object = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": revision_name(meta(owner)["name"], suffix),
                "namespace": ns,
                "labels": labels,
                "ownerReferences": [
                    ownership.owner_reference(_with_kind(owner, self.owner_resource), controller=True)
                ],
            },
            "data": data,
            "revision": top + 1,
        }
        annotations = meta(owner).get("annotations")
        if annotations:
            body["metadata"]["annotations"] = dict(annotations)
        try:
            made = await self.client.create(body, namespace=ns)
        except errors.AlreadyExists:
            existing = await self.client.get(body["metadata"]["name"], namespace=ns)
            same_owner = (ownership.controller_of(existing) or {}).get("uid") == meta(owner).get("uid")
            if not (same_owner and _equal(existing, candidate)):
                raise Collision(body["metadata"]["name"]) from None
            made = existing
            revisions = [r for r in revisions if meta(r).get("uid") != meta(made).get("uid")]
        return made, [*revisions, made]

    async def truncate(self, owner: Object, revisions: list[Object], keep: set[str]) -> None:
        """Delete the oldest revisions beyond ``revisionHistoryLimit`` (default 10) not named in ``keep``."""
        limit = (owner.get("spec") or {}).get("revisionHistoryLimit")
        limit = 10 if not isinstance(limit, int) else limit
        spare = [r for r in revisions if meta(r).get("name") not in keep]
        for revision in spare[: max(0, len(spare) - limit)]:
            try:
                await self.client.delete(meta(revision)["name"], namespace=meta(revision)["namespace"])
            except errors.NotFound:
                pass


def _with_kind(owner: Object, resource: dynamic.Resource) -> Object:
    return {
        **owner,
        "apiVersion": owner.get("apiVersion") or "apps/v1",
        "kind": owner.get("kind") or resource.kind,
    }
