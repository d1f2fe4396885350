"""Group/version/kind and group/version/resource identifiers."""

from __future__ import annotations

from typing import NamedTuple


class GroupVersion(NamedTuple):
    group: str
    version: str

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string: ``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @classmethod
    def parse(cls, api_version: str) -> GroupVersion:
        """Split an ``apiVersion`` string; ``"v1"`` is the core group."""
        group, sep, version = api_version.rpartition("/")
        return cls(group if sep else "", version)


class GroupVersionKind(NamedTuple):
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return GroupVersion(self.group, self.version).api_version


class GroupVersionResource(NamedTuple):
    group: str
    version: str
    resource: str

    @property
    def api_version(self) -> str:
        return GroupVersion(self.group, self.version).api_version


class GroupResource(NamedTuple):
    group: str
    resource: str

    def __str__(self) -> str:
        """The qualified resource as upstream prints it: ``pods``, ``deployments.apps``."""
        return f"{self.resource}.{self.group}" if self.group else self.resource
