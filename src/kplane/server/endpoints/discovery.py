"""Discovery documents: ``/version``, ``/api``, ``/apis``, ``/apis/<g>``, ``/api/v1``, ``/apis/<g>/<v>``.

Every document is a pure function of the resource catalog. Two dialects exist and clients pick one
through ``Accept`` (see ``negotiate_discovery``):

* legacy discovery (``APIVersions``, ``APIGroupList``, ``APIGroup``, ``APIResourceList``), which every
  client understands and which needs one request per group-version;
* aggregated discovery (``apidiscovery.k8s.io`` ``v2`` or ``v2beta1``, ``APIGroupDiscoveryList``),
  which carries every resource in the answer to ``/api`` and ``/apis``.

Documents are memoized per catalog and rebuilt only when ``Catalog.generation`` changes, so a
request costs one dictionary lookup. ``document_bytes_and_etag`` hands the HTTP layer serialized
bytes and an ETag (the SHA-512 hex digest of those bytes, as kube-apiserver computes it), so it can
answer ``If-None-Match`` with 304. Returned dicts are shared between callers: never mutate them.
"""

from __future__ import annotations

import base64
import hashlib
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Literal, NamedTuple, TypeVar, cast

import orjson

from kplane.api import catalog as catalog_mod
from kplane.api import gvk

DiscoveryVersion = Literal["v2", "v2beta1"]

GIT_VERSION = "v1.32.4"
"""The Kubernetes version kplane reports (kubectl's dispatcher picks its binary from the minor)."""

DEFAULT_SERVER_ADDRESS = "127.0.0.1:6443"

_APIDISCOVERY_GROUP = "apidiscovery.k8s.io"
_AGGREGATED_KIND = "APIGroupDiscoveryList"
_SUBRESOURCE_VERBS = ("get", "patch", "update")
# Resources with no storage behind them (upstream gives them no storageVersionHash).
_NOT_STORED = frozenset(
    {("", "bindings"), ("", "componentstatuses"), ("metrics.k8s.io", "nodes"), ("metrics.k8s.io", "pods")}
)
_PROXY_VERBS = ("create", "delete", "get", "patch", "update")

T = TypeVar("T")


class GenerationCache:
    """Values derived from a catalog, kept until that catalog's ``generation`` changes.

    Keyed by catalog identity (weakly, so a dropped catalog frees its documents). ``get`` calls
    ``build`` at most once per key and generation as long as callers are on one thread; a value
    built while the catalog changed is stored under the generation read before building, so it is
    discarded by the next call.
    """

    def __init__(self) -> None:
        self._entries: weakref.WeakKeyDictionary[catalog_mod.Catalog, tuple[int, dict[Hashable, Any]]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, catalog: catalog_mod.Catalog, key: Hashable, build: Callable[[], T]) -> T:
        """The cached value of ``key`` for the current generation of ``catalog``, built if missing."""
        generation = catalog.generation
        entry = self._entries.get(catalog)
        if entry is None or entry[0] != generation:
            entry = (generation, {})
            self._entries[catalog] = entry
        values = entry[1]
        if key in values:
            return cast(T, values[key])
        value = build()
        values[key] = value
        return value


_cache = GenerationCache()


def etag_of(body: bytes) -> str:
    """The ETag of a serialized document: SHA-512 hex digest, unquoted (quote it in the header)."""
    return hashlib.sha512(body).hexdigest()


def etag_matches(if_none_match: str, etag: str) -> bool:
    """Whether an ``If-None-Match`` header value names ``etag`` (quoted or weak forms, or ``*``)."""
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*":
            return True
        tag = tag.removeprefix("W/").strip('"')
        if tag == etag:
            return True
    return False


# --- /version -------------------------------------------------------------------------------------


def version_info() -> dict[str, str]:
    """The ``/version`` body: a Kubernetes 1.32 server (clients choose behaviour from it)."""
    major, minor, _patch = GIT_VERSION.removeprefix("v").split(".")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": GIT_VERSION,
        "gitCommit": hashlib.sha1(f"kplane {GIT_VERSION}".encode()).hexdigest(),
        "gitTreeState": "clean",
        "buildDate": "2025-04-22T00:00:00Z",
        "goVersion": "go1.23.6",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


# --- legacy discovery -----------------------------------------------------------------------------


def api_versions(server_address: str = DEFAULT_SERVER_ADDRESS) -> dict[str, Any]:
    """The ``/api`` body (``APIVersions``); ``server_address`` is ``host:port`` clients should use."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_entry(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(catalog: catalog_mod.Catalog) -> dict[str, Any]:
    """The ``/apis`` body (``APIGroupList``): every named group, versions in preference order."""

    def build() -> dict[str, Any]:
        groups = [_group_entry(g, vs) for g, vs in catalog.groups().items() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    return _cache.get(catalog, "APIGroupList", build)


def api_group(catalog: catalog_mod.Catalog, group: str) -> dict[str, Any] | None:
    """The ``/apis/<group>`` body (``APIGroup``), or None when the group is not served."""

    def build() -> dict[str, Any] | None:
        versions = catalog.groups().get(group)
        if not group or not versions:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}

    return _cache.get(catalog, ("APIGroup", group), build)


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """kube-apiserver's ``storageVersionHash``: base64 of the first 8 bytes of sha256("g/v/Kind")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


class Subresource(NamedTuple):
    """One subresource as discovery describes it: name, response group/version/kind and verbs."""

    name: str
    group: str
    version: str
    kind: str
    verbs: tuple[str, ...]


def subresources(record: catalog_mod.ResourceRecord) -> list[Subresource]:
    """The subresources of ``record``, sorted by name (as kube-apiserver lists them)."""
    g, v = record.group, record.version
    subs: list[Subresource] = []
    if record.has_status:
        subs.append(Subresource("status", g, v, record.kind, _SUBRESOURCE_VERBS))
    if record.scale is not None:
        subs.append(Subresource("scale", "autoscaling", "v1", "Scale", _SUBRESOURCE_VERBS))
    for name in record.extra_subresources:
        match name:
            case "log":
                subs.append(Subresource(name, g, v, record.kind, ("get",)))
            case "binding":
                subs.append(Subresource(name, g, v, "Binding", ("create",)))
            case "eviction":
                subs.append(Subresource(name, "policy", "v1", "Eviction", ("create",)))
            case "token":
                subs.append(Subresource(name, "authentication.k8s.io", "v1", "TokenRequest", ("create",)))
            case "finalize":
                subs.append(Subresource(name, g, v, record.kind, ("update",)))
            case "approval" | "ephemeralcontainers":
                subs.append(Subresource(name, g, v, record.kind, _SUBRESOURCE_VERBS))
            case "attach" | "exec" | "portforward":
                kind = {"attach": "Attach", "exec": "Exec", "portforward": "PortForward"}[name]
                subs.append(Subresource(name, g, v, f"{record.kind}{kind}Options", ("create", "get")))
            case "proxy":
                subs.append(Subresource(name, g, v, f"{record.kind}ProxyOptions", _PROXY_VERBS))
            case _:
                subs.append(Subresource(name, g, v, record.kind, ("get",)))
    return sorted(subs, key=lambda s: s.name)


def _legacy_resources(record: catalog_mod.ResourceRecord) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": record.plural,
        "singularName": record.singular,
        "namespaced": record.namespaced,
        "kind": record.kind,
        "verbs": list(record.verbs),
    }
    if record.short_names:
        main["shortNames"] = list(record.short_names)
    if record.categories:
        main["categories"] = list(record.categories)
    if (record.group, record.plural) not in _NOT_STORED:
        # Of the form objects are stored in: events.k8s.io Events share core Events' hash.
        main["storageVersionHash"] = storage_version_hash(
            record.group if record.storage_group is None else record.storage_group,
            record.storage_version or record.version,
            record.kind,
        )
    out = [main]
    for sub in subresources(record):
        entry: dict[str, Any] = {
            "name": f"{record.plural}/{sub.name}",
            "singularName": "",
            "namespaced": record.namespaced,
        }
        if (sub.group, sub.version) != (record.group, record.version):
            entry["group"] = sub.group
            entry["version"] = sub.version
        entry["kind"] = sub.kind
        entry["verbs"] = list(sub.verbs)
        out.append(entry)
    return out


def api_resource_list(catalog: catalog_mod.Catalog, group: str, version: str) -> dict[str, Any] | None:
    """The ``/api/v1`` or ``/apis/<g>/<v>`` body (``APIResourceList``), or None if not served.

    Resources and their subresources are sorted by name; the core list has no ``apiVersion``, as
    kube-apiserver serves it.
    """

    def build() -> dict[str, Any] | None:
        records = sorted(catalog.resources(gvk.GroupVersion(group, version)), key=lambda r: r.plural)
        if not records:
            return None
        resources = [entry for r in records for entry in _legacy_resources(r)]
        doc: dict[str, Any] = {"kind": "APIResourceList"}
        if group:
            doc["apiVersion"] = "v1"
        doc["groupVersion"] = f"{group}/{version}" if group else version
        doc["resources"] = resources
        return doc

    return _cache.get(catalog, ("APIResourceList", group, version), build)


# --- aggregated discovery -------------------------------------------------------------------------


def _aggregated_resource(record: catalog_mod.ResourceRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource": record.plural,
        "responseKind": {"group": record.group, "version": record.version, "kind": record.kind},
        "scope": record.scope,
        "singularResource": record.singular,
        "verbs": list(record.verbs),
    }
    if record.short_names:
        out["shortNames"] = list(record.short_names)
    if record.categories:
        out["categories"] = list(record.categories)
    subs = [
        {
            "subresource": s.name,
            "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
            "verbs": list(s.verbs),
        }
        for s in subresources(record)
    ]
    if subs:
        out["subresources"] = subs
    return out


def _aggregated_group(catalog: catalog_mod.Catalog, group: str, versions: list[str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": group} if group else {}
    metadata["creationTimestamp"] = None
    out_versions = []
    for version in versions:
        records = sorted(catalog.resources(gvk.GroupVersion(group, version)), key=lambda r: r.plural)
        out_versions.append(
            {
                "version": version,
                "resources": [_aggregated_resource(r) for r in records],
                "freshness": "Current",
            }
        )
    return {"metadata": metadata, "versions": out_versions}


def aggregated(
    catalog: catalog_mod.Catalog, *, legacy_core: bool, version: DiscoveryVersion
) -> dict[str, Any]:
    """An ``APIGroupDiscoveryList``: for ``/api`` (``legacy_core``: the core group only, as one
    item without a name) or for ``/apis`` (every named group). Versions are in preference order."""

    def build() -> dict[str, Any]:
        groups = catalog.groups()
        if legacy_core:
            items = [_aggregated_group(catalog, "", groups.get("", ["v1"]))]
        else:
            items = [_aggregated_group(catalog, g, vs) for g, vs in groups.items() if g]
        return {
            "kind": _AGGREGATED_KIND,
            "apiVersion": f"{_APIDISCOVERY_GROUP}/{version}",
            "metadata": {},
            "items": items,
        }

    return _cache.get(catalog, ("aggregated", legacy_core, version), build)


def discovery_content_type(version: DiscoveryVersion) -> str:
    """The ``Content-Type`` of an aggregated discovery answer in ``version``."""
    return f"application/json;g={_APIDISCOVERY_GROUP};v={version};as={_AGGREGATED_KIND}"


def _media_ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    """Split an ``Accept`` value into (media type, parameters), lower-casing names."""
    out = []
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        if not media:
            continue
        params: dict[str, str] = {}
        for field in fields[1:]:
            name, sep, value = field.partition("=")
            if sep:
                params[name.strip().lower()] = value.strip().strip('"')
        out.append((media, params))
    return out


def negotiate_discovery(accept_header: str) -> DiscoveryVersion | None:
    """Which aggregated discovery version to answer with, or None for legacy JSON.

    Media ranges are ranked by ``q`` (default 1; ``q=0`` or unparsable means not acceptable), ties
    by their order in the header. The first acceptable range we can serve decides: an
    ``application/json`` range naming ``g=apidiscovery.k8s.io;as=APIGroupDiscoveryList`` and
    ``v=v2`` or ``v=v2beta1`` selects that version; plain ``application/json``, ``application/*``
    or ``*/*`` selects legacy. Ranges we cannot serve (protobuf, unknown versions) are skipped;
    when nothing is left the answer is legacy, the format every client accepts.
    """
    ranked: list[tuple[float, int, DiscoveryVersion | None]] = []
    for index, (media, params) in enumerate(_media_ranges(accept_header)):
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            continue
        if not q > 0:
            continue
        choice: DiscoveryVersion | None
        if media not in ("application/json", "application/*", "*/*"):
            continue
        if not params or set(params) <= {"charset"}:
            choice = None
        elif (
            media == "application/json"
            and params.get("g") == _APIDISCOVERY_GROUP
            and params.get("as") == _AGGREGATED_KIND
            and params.get("v") in ("v2", "v2beta1")
        ):
            choice = cast(DiscoveryVersion, params["v"])
        else:
            continue
        ranked.append((-q, index, choice))
    if not ranked:
        return None
    return min(ranked, key=lambda t: (t[0], t[1]))[2]


# --- serialized documents -------------------------------------------------------------------------


def document_bytes_and_etag(
    catalog: catalog_mod.Catalog,
    path: str,
    *,
    discovery_version: DiscoveryVersion | None = None,
    server_address: str = DEFAULT_SERVER_ADDRESS,
) -> tuple[bytes, str] | None:
    """The serialized discovery document at URL ``path`` and its ETag, or None if there is none.

    ``path`` is one of ``/version``, ``/api``, ``/apis``, ``/apis/<g>``, ``/api/v1``,
    ``/apis/<g>/<v>`` (a trailing slash is ignored). ``discovery_version`` (from
    ``negotiate_discovery``) selects aggregated discovery for ``/api`` and ``/apis`` and is ignored
    elsewhere; the caller sets ``Content-Type`` to ``discovery_content_type`` in that case and to
    ``application/json`` otherwise. Bytes are cached with the documents.
    """
    parts = [p for p in path.split("/") if p]
    key: tuple[Any, ...]
    build: Callable[[], dict[str, Any] | None]
    match parts:
        case ["version"]:
            key, build = ("version",), version_info
        case ["api"] if discovery_version is not None:
            key = ("aggregated", True, discovery_version)
            build = lambda: aggregated(catalog, legacy_core=True, version=discovery_version)  # noqa: E731
        case ["api"]:
            key, build = ("api", server_address), lambda: api_versions(server_address)
        case ["apis"] if discovery_version is not None:
            key = ("aggregated", False, discovery_version)
            build = lambda: aggregated(catalog, legacy_core=False, version=discovery_version)  # noqa: E731
        case ["apis"]:
            key, build = ("apis",), lambda: api_group_list(catalog)
        case ["apis", group]:
            key, build = ("apis", group), lambda: api_group(catalog, group)
        case ["api", "v1"]:
            key, build = ("resources", "", "v1"), lambda: api_resource_list(catalog, "", "v1")
        case ["apis", group, version]:
            key = ("resources", group, version)
            build = lambda: api_resource_list(catalog, group, version)  # noqa: E731
        case _:
            return None

    def serialize() -> tuple[bytes, str] | None:
        doc = build()
        if doc is None:
            return None
        if key == ("version",):
            # upstream writes /version with json.MarshalIndent (WriteRawJSON): indented, no newline
            body = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
            return body, etag_of(body)
        # Ends with the newline of Go's json.Encoder, as every API object upstream writes does.
        body = orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)
        return body, etag_of(body)

    return _cache.get(catalog, ("bytes", *key), serialize)
