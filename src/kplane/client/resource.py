"""``Resource``: one served resource as a value (group, version, plural, kind, scope).

Its own module so that discovery, the REST mapper and the dynamic client can all use it without
importing each other (discovery produces ``Resource`` values, the mapper resolves names to them,
the dynamic client sends requests to them).
"""

from __future__ import annotations

import dataclasses

from kplane.api.gvk import GroupVersionKind, GroupVersionResource


@dataclasses.dataclass(frozen=True, slots=True)
class Resource:
    """One served resource: where it lives (group/version/plural), its kind and its scope."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def gvr(self) -> GroupVersionResource:
        return GroupVersionResource(self.group, self.version, self.plural)

    @property
    def gvk(self) -> GroupVersionKind:
        return GroupVersionKind(self.group, self.version, self.kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str = "", subresource: str = "") -> str:
        """The URL path of the collection (no ``name``), an object, or one of its subresources."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            prefix += f"/namespaces/{namespace}"
        out = f"{prefix}/{self.plural}"
        if name:
            out += f"/{name}"
            if subresource:
                out += f"/{subresource}"
        return out


ResourceRef = Resource | GroupVersionResource | GroupVersionKind | str
"""What ``resource()`` accepts: a ``Resource`` as is, else something for the REST mapper."""
