"""Discovery: which groups, versions and resources a server serves, cached in memory and on disk.

The client asks for aggregated discovery first (``apidiscovery.k8s.io/v2``, one request each for
``/api`` and ``/apis``) and falls back to legacy discovery (``/api``, ``/apis``, then one request
per group-version) when the server answers with the legacy documents.

The disk cache is client-go's ``cached/disk`` layout, in legacy formats so that kubectl and kplane
can share a cache directory: ``<dir>/servergroups.json`` (an ``APIGroupList``, core group first)
and ``<dir>/<group>/<version>/serverresources.json`` (an ``APIResourceList``). A file is used while
its mtime is younger than ``ttl`` (kubectl: 6 hours). Files are written to a temporary name and
renamed (0660, directories 0750); empty answers are not cached. ``invalidate()`` drops the memory
copy and ignores disk files this process did not write; ``fresh`` is true when everything in use
came from the server during this process's life, which is how the REST mapper decides that a
miss is worth one refresh.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pathlib
import re
import tempfile
from collections.abc import Iterable
from typing import Any

import orjson

from kplane._util import clock as clock_mod
from kplane.client import config as config_mod
from kplane.client import resource as resource_mod
from kplane.client import rest

DEFAULT_TTL = 6 * 3600.0
"""kubectl's discovery cache TTL (seconds)."""

AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList;q=0.9,"
    "application/json;q=0.8"
)


@dataclasses.dataclass(frozen=True, slots=True)
class APIResource:
    """One resource as discovery describes it (subresources listed by name, e.g. ``status``)."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()

    def to_resource(self) -> resource_mod.Resource:
        return resource_mod.Resource(self.group, self.version, self.plural, self.kind, self.namespaced)


@dataclasses.dataclass(frozen=True, slots=True)
class APIGroup:
    """A group (``""`` is core) and its versions, the preferred one first."""

    name: str
    versions: tuple[str, ...]

    @property
    def preferred_version(self) -> str:
        return self.versions[0] if self.versions else ""


@dataclasses.dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything discovered at one moment: groups in server order, core first."""

    groups: tuple[APIGroup, ...]
    resources: dict[tuple[str, str], tuple[APIResource, ...]]

    def prioritized(self) -> list[APIResource]:
        """All resources in REST-mapper priority order: core first, then groups in discovery order,
        each group's preferred version before its others."""
        out: list[APIResource] = []
        for group in self.groups:
            for version in group.versions:
                out.extend(self.resources.get((group.name, version), ()))
        return out


def default_cache_dir(config: config_mod.Config) -> pathlib.Path:
    """kubectl's discovery cache directory for ``config.host``: ``$KUBECACHEDIR`` or ``~/.kube/cache``,
    then ``discovery/<host with unsafe characters replaced by _>``."""
    root = os.environ.get("KUBECACHEDIR") or os.path.join(os.path.expanduser("~"), ".kube", "cache")
    host = re.sub(r"^https?://", "", config.host)
    return pathlib.Path(root) / "discovery" / re.sub(r"[^(\w/.)]", "_", host)


class DiscoveryClient:
    """Discovery for one server, cached in memory and (when ``cache_dir`` is given) on disk.

    Concurrent callers share one fetch. Results are immutable snapshots; ``invalidate()`` makes
    the next call fetch again.
    """

    def __init__(
        self,
        rest_client: rest.RESTClient,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        ttl: float = DEFAULT_TTL,
        clock: clock_mod.Clock | None = None,
    ) -> None:
        self.rest = rest_client
        self.cache_dir = pathlib.Path(cache_dir) if cache_dir is not None else None
        self.ttl = ttl
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._snapshot: Snapshot | None = None
        self._lock = asyncio.Lock()
        self._written: set[pathlib.Path] = set()
        self._ignore_foreign = False
        self._from_disk = False

    @property
    def fresh(self) -> bool:
        """True when the snapshot in use came from the server during this process's life."""
        return self._snapshot is not None and not self._from_disk

    def invalidate(self) -> None:
        """Forget the snapshot; the next call refetches anything this process did not write."""
        self._snapshot = None
        self._ignore_foreign = True

    async def snapshot(self) -> Snapshot:
        """The current discovery snapshot, from memory, disk (if fresh enough) or the server."""
        if self._snapshot is not None:
            return self._snapshot
        async with self._lock:
            if self._snapshot is None:
                snap = self._read_disk()
                self._from_disk = snap is not None
                if snap is None:
                    snap = await self._fetch()
                    self._write_disk(snap)
                self._snapshot = snap
            return self._snapshot

    async def groups(self) -> list[APIGroup]:
        return list((await self.snapshot()).groups)

    async def resources(self) -> list[APIResource]:
        """Every resource (subresources excluded) in REST-mapper priority order."""
        return (await self.snapshot()).prioritized()

    async def server_version(self) -> dict[str, Any]:
        """The server's ``/version`` document (never cached)."""
        out: dict[str, Any] = await self.rest.request("GET", "/version")
        return out

    # Fetching.

    async def _fetch(self) -> Snapshot:
        headers = {"Accept": AGGREGATED_ACCEPT}
        core, apis = await asyncio.gather(
            self.rest.request("GET", "/api", headers=headers),
            self.rest.request("GET", "/apis", headers=headers),
        )
        groups: list[APIGroup] = []
        resources: dict[tuple[str, str], tuple[APIResource, ...]] = {}
        legacy: list[tuple[str, str]] = []
        for doc, is_core in ((core, True), (apis, False)):
            if isinstance(doc, dict) and doc.get("kind") == "APIGroupDiscoveryList":
                for group, by_version in _parse_aggregated(doc):
                    groups.append(group)
                    resources.update(by_version)
            elif is_core:
                versions = tuple((doc or {}).get("versions") or ())
                if versions:
                    groups.append(APIGroup("", versions))
                    legacy.extend(("", v) for v in versions)
            else:
                for g in (doc or {}).get("groups") or ():
                    group = _parse_group(g)
                    groups.append(group)
                    legacy.extend((group.name, v) for v in group.versions)
        lists = await asyncio.gather(*(self._fetch_legacy(g, v) for g, v in legacy))
        for (g, v), found in zip(legacy, lists, strict=True):
            resources[(g, v)] = found
        return Snapshot(tuple(groups), resources)

    async def _fetch_legacy(self, group: str, version: str) -> tuple[APIResource, ...]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        return _parse_resource_list(await self.rest.request("GET", path))

    # Disk cache.

    def _usable(self, path: pathlib.Path) -> bool:
        if self._ignore_foreign and path not in self._written:
            return False
        try:
            age = self._clock.now().timestamp() - path.stat().st_mtime
        except OSError:
            return False
        return age < self.ttl

    def _read_disk(self) -> Snapshot | None:
        if self.cache_dir is None:
            return None
        groups_file = self.cache_dir / "servergroups.json"
        if not self._usable(groups_file):
            return None
        try:
            groups = [_parse_group(g) for g in orjson.loads(groups_file.read_bytes()).get("groups") or ()]
            resources: dict[tuple[str, str], tuple[APIResource, ...]] = {}
            for group in groups:
                for version in group.versions:
                    file = self.cache_dir / group.name / version / "serverresources.json"
                    if not self._usable(file):
                        return None
                    resources[(group.name, version)] = _parse_resource_list(orjson.loads(file.read_bytes()))
        except (OSError, orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
            return None
        return Snapshot(tuple(groups), resources)

    def _write_disk(self, snap: Snapshot) -> None:
        if self.cache_dir is None or not snap.groups:
            return
        group_list = {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group_doc(g) for g in snap.groups],
        }
        for (group, version), found in snap.resources.items():
            if found:
                doc = _resource_list_doc(group, version, found)
                self._atomic_write(self.cache_dir / group / version / "serverresources.json", doc)
        self._atomic_write(self.cache_dir / "servergroups.json", group_list)

    def _atomic_write(self, path: pathlib.Path, doc: dict[str, Any]) -> None:
        try:
            path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
            with os.fdopen(fd, "wb") as f:
                f.write(orjson.dumps(doc))
            os.chmod(tmp, 0o660)
            os.replace(tmp, path)
        except OSError:
            return  # A cache that cannot be written is only a slower cache.
        self._written.add(path)


# Parsing both discovery formats.


def _parse_aggregated(
    doc: dict[str, Any],
) -> Iterable[tuple[APIGroup, dict[tuple[str, str], tuple[APIResource, ...]]]]:
    for item in doc.get("items") or ():
        name = str((item.get("metadata") or {}).get("name") or "")
        versions: list[str] = []
        found: dict[tuple[str, str], tuple[APIResource, ...]] = {}
        for ver in item.get("versions") or ():
            version = str(ver.get("version") or "")
            versions.append(version)
            found[(name, version)] = tuple(
                _aggregated_resource(name, version, r) for r in ver.get("resources") or ()
            )
        yield APIGroup(name, tuple(versions)), found


def _aggregated_resource(group: str, version: str, r: dict[str, Any]) -> APIResource:
    kind = (r.get("responseKind") or {}).get("kind") or ""
    return APIResource(
        group=group,
        version=version,
        plural=r["resource"],
        singular=r.get("singularResource") or "",
        kind=kind,
        namespaced=r.get("scope") == "Namespaced",
        verbs=tuple(r.get("verbs") or ()),
        short_names=tuple(r.get("shortNames") or ()),
        categories=tuple(r.get("categories") or ()),
        subresources=tuple(s.get("subresource", "") for s in r.get("subresources") or ()),
    )


def _parse_group(g: dict[str, Any]) -> APIGroup:
    versions = [str(v.get("version") or "") for v in g.get("versions") or ()]
    preferred = str((g.get("preferredVersion") or {}).get("version") or "")
    if preferred in versions:
        versions.remove(preferred)
        versions.insert(0, preferred)
    return APIGroup(str(g.get("name") or ""), tuple(versions))


def _parse_resource_list(doc: dict[str, Any]) -> tuple[APIResource, ...]:
    group, _, version = str(doc.get("groupVersion") or "").rpartition("/")
    entries = doc.get("resources") or ()
    subs: dict[str, list[str]] = {}
    for r in entries:
        parent, slash, sub = str(r.get("name", "")).partition("/")
        if slash:
            subs.setdefault(parent, []).append(sub)
    return tuple(
        APIResource(
            group=r.get("group") or group,
            version=r.get("version") or version,
            plural=r["name"],
            singular=r.get("singularName") or "",
            kind=r.get("kind") or "",
            namespaced=bool(r.get("namespaced")),
            verbs=tuple(r.get("verbs") or ()),
            short_names=tuple(r.get("shortNames") or ()),
            categories=tuple(r.get("categories") or ()),
            subresources=tuple(subs.get(r["name"], ())),
        )
        for r in entries
        if "/" not in str(r.get("name", ""))
    )


def _group_doc(g: APIGroup) -> dict[str, Any]:
    def gv(v: str) -> dict[str, str]:
        return {"groupVersion": f"{g.name}/{v}" if g.name else v, "version": v}

    return {
        "name": g.name,
        "versions": [gv(v) for v in g.versions],
        "preferredVersion": gv(g.preferred_version),
    }


def _resource_list_doc(group: str, version: str, found: Iterable[APIResource]) -> dict[str, Any]:
    entries: list[dict[str, Any]] = []
    for r in found:
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        entries.append(entry)
        entries.extend(
            {
                "name": f"{r.plural}/{s}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": [],
            }
            for s in r.subresources
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }
