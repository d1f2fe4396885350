"""The REST mapper: from what a user types or a kind to the resource that serves it.

``RESTMapper.resolve`` accepts the forms kubectl accepts: a plural (``deployments``), a singular
(``deployment``), a short name (``deploy``), a kind in any case (``Deployment``), each optionally
qualified by group (``deployments.apps``, ``Deployment.apps``, a group prefix such as
``hpa.autoscal``) or by version and group (``deployments.v1.apps``), and also a
``GroupVersionResource`` or ``GroupVersionKind``.

Precedence follows client-go's ``ShortcutExpander`` over a ``PriorityRESTMapper``: exact plural or
singular names win over short names, which win over kinds; among several matches the first in
discovery priority order wins (core first, then groups in discovery order, each group's preferred
version first). On a miss the mapper refreshes discovery once, unless what it used was already
fresh from the server (client-go's ``DeferredDiscoveryRESTMapper``), so a CRD installed after the
cache was written is still found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kplane.api.gvk import GroupVersionKind, GroupVersionResource
from kplane.client import discovery as discovery_mod
from kplane.client import resource as resource_mod


class NoMatchError(LookupError):
    """Nothing the server serves matches the requested resource or kind."""


Match = Callable[[discovery_mod.APIResource], bool]


class RESTMapper:
    """Resolves resource names and kinds against ``discovery`` (refreshing it once per miss)."""

    def __init__(self, discovery: discovery_mod.DiscoveryClient) -> None:
        self.discovery = discovery

    async def resolve(self, ref: str | GroupVersionResource | GroupVersionKind) -> resource_mod.Resource:
        """The ``Resource`` that ``ref`` names; raises ``NoMatchError`` when none does."""
        try:
            return _find(await self.discovery.resources(), ref)
        except NoMatchError:
            if self.discovery.fresh:
                raise
            self.discovery.invalidate()
            return _find(await self.discovery.resources(), ref)

    async def resources_in_category(self, category: str) -> list[resource_mod.Resource]:
        """Resources in discovery category ``category`` (e.g. ``all``), at preferred versions only."""
        snap = await self.discovery.snapshot()
        preferred = {(g.name, g.preferred_version) for g in snap.groups}
        return [
            r.to_resource()
            for r in snap.prioritized()
            if category in r.categories and (r.group, r.version) in preferred
        ]


def _find(
    resources: list[discovery_mod.APIResource], ref: str | GroupVersionResource | GroupVersionKind
) -> resource_mod.Resource:
    if isinstance(ref, GroupVersionResource):
        found = _first(
            resources,
            lambda r: (
                r.group == ref.group
                and r.plural == ref.resource.lower()
                and (not ref.version or r.version == ref.version)
            ),
        )
        if found is None:
            raise NoMatchError(f"no matches for {ref.resource}.{ref.group} in version {ref.api_version!r}")
        return found.to_resource()
    if isinstance(ref, GroupVersionKind):
        found = _first(
            resources,
            lambda r: (
                r.group == ref.group and r.kind == ref.kind and (not ref.version or r.version == ref.version)
            ),
        )
        if found is None:
            raise NoMatchError(f'no matches for kind "{ref.kind}" in version "{ref.api_version}"')
        return found.to_resource()
    found = _find_name(resources, ref)
    if found is None:
        raise NoMatchError(f'the server doesn\'t have a resource type "{ref}"')
    return found.to_resource()


def _find_name(resources: list[discovery_mod.APIResource], arg: str) -> discovery_mod.APIResource | None:
    name, _, rest = arg.lower().partition(".")
    if not name:
        return None
    # resource.version.group: only when the middle part is a version that exists in that group.
    version, _, group = rest.partition(".")
    if group:
        found = _by_name(r for r in resources if r.group == group and r.version == version)(name)
        if found is not None:
            return found
    if not rest:
        return _by_name(resources)(name)
    found = _by_name(r for r in resources if r.group == rest)(name)
    if found is not None:
        return found
    return _by_name(r for r in resources if r.group.startswith(rest))(name)


def _by_name(
    candidates: Iterable[discovery_mod.APIResource],
) -> Callable[[str], discovery_mod.APIResource | None]:
    pool = list(candidates)

    def match(name: str) -> discovery_mod.APIResource | None:
        return (
            _first(pool, lambda r: name in (r.plural, r.singular))
            or _first(pool, lambda r: name in r.short_names)
            or _first(pool, lambda r: r.kind.lower() == name)
        )

    return match


def _first(resources: Iterable[discovery_mod.APIResource], pred: Match) -> discovery_mod.APIResource | None:
    return next((r for r in resources if pred(r)), None)
