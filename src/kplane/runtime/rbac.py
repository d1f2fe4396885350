"""Permissions declared on controllers, and the RBAC roles ``kplane generate rbac`` writes from them.

``@permission(groups=..., resources=..., verbs=...)`` on a reconciler class or function records
what it needs, as controller-tools' ``+kubebuilder:rbac`` markers do; decorators stack. ``roles``
merges the rules as controller-tools does (reference/controllers.md §7.2):

1. each rule is split into one rule per resource;
2. rules with the same groups, resource, resource names and URLs get the union of their verbs;
3. rules equal but for their resources are merged, then rules equal but for their groups;
4. any ``*`` verb makes the verbs ``["*"]``; group ``core`` is ``""``; lists and rules are sorted.

Rules without a namespace go to one ClusterRole (``manager-role`` by default, kubebuilder's name);
rules with ``namespace=`` go to a Role in that namespace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

ATTRIBUTE = "__kplane_rbac__"


@dataclasses.dataclass(frozen=True)
class Rule:
    """One permission: verbs on resources of groups (or on non-resource URLs)."""

    groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    namespace: str = ""

    def key(self) -> tuple[tuple[str, ...], ...]:
        return (self.groups, self.resources, self.resource_names, self.urls)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.groups or self.resources:
            out["apiGroups"] = list(self.groups)
        if self.urls:
            out["nonResourceURLs"] = list(self.urls)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.resources:
            out["resources"] = list(self.resources)
        out["verbs"] = list(self.verbs)
        return out


def permission(
    *,
    groups: Sequence[str] = (),
    resources: Sequence[str] = (),
    verbs: Sequence[str],
    resource_names: Sequence[str] = (),
    urls: Sequence[str] = (),
    namespace: str = "",
) -> Callable[[T], T]:
    """Declare that the decorated controller needs ``verbs`` on ``resources`` (see module docstring)."""
    if not verbs:
        raise ValueError("a permission needs at least one verb")
    if not resources and not urls:
        raise ValueError("a permission needs resources or urls")
    rule = Rule(
        groups=tuple("" if g == "core" else g for g in groups),
        resources=tuple(resources),
        verbs=tuple(verbs),
        resource_names=tuple(resource_names),
        urls=tuple(urls),
        namespace=namespace,
    )

    def decorate(target: T) -> T:
        existing = getattr(target, ATTRIBUTE, ())
        setattr(target, ATTRIBUTE, (*existing, rule))
        return target

    return decorate


def declared(candidates: Iterable[Any]) -> list[Rule]:
    """The rules declared on ``candidates`` (classes or functions), in order."""
    out: list[Rule] = []
    for obj in candidates:
        out.extend(getattr(obj, ATTRIBUTE, ()) if callable(obj) else ())
    return out


def normalize(rules: Iterable[Rule]) -> list[Rule]:
    """Merge ``rules`` as controller-tools does (module docstring); namespace is ignored here."""
    verbs_by_key: dict[tuple[tuple[str, ...], ...], set[str]] = {}
    for rule in rules:
        groups = tuple(sorted(set(rule.groups)))
        names = tuple(sorted(set(rule.resource_names)))
        urls = tuple(sorted(set(rule.urls)))
        for resource in sorted(set(rule.resources)) or [""]:
            key = (groups, (resource,) if resource else (), names, urls)
            verbs_by_key.setdefault(key, set()).update(rule.verbs)
    split = [
        Rule(groups=k[0], resources=k[1], resource_names=k[2], urls=k[3], verbs=_verbs(v))
        for k, v in verbs_by_key.items()
    ]
    merged = _merge(split, "resources")
    merged = _merge(merged, "groups")
    return sorted(merged, key=lambda r: r.key())


def _verbs(verbs: set[str]) -> tuple[str, ...]:
    return ("*",) if "*" in verbs else tuple(sorted(verbs))


def _merge(rules: list[Rule], field: str) -> list[Rule]:
    """Merge rules equal in everything but ``field`` into one with the union of that field."""
    groups: dict[tuple[Any, ...], set[str]] = {}
    for rule in rules:
        rest = tuple(getattr(rule, f.name) for f in dataclasses.fields(rule) if f.name != field)
        groups.setdefault(rest, set()).update(getattr(rule, field))
    names = [f.name for f in dataclasses.fields(Rule) if f.name != field]
    out = []
    for rest, values in groups.items():
        kwargs: dict[str, Any] = dict(zip(names, rest, strict=True))
        kwargs[field] = tuple(sorted(values))
        out.append(Rule(**kwargs))
    return out


def roles(rules: Iterable[Rule], role_name: str = "manager-role") -> list[dict[str, Any]]:
    """The ClusterRole of the cluster-wide rules, then one Role per namespace (sorted), if any."""
    by_namespace: dict[str, list[Rule]] = {"": []}  # the ClusterRole is written even when empty
    for rule in rules:
        by_namespace.setdefault(rule.namespace, []).append(rule)
    out: list[dict[str, Any]] = []
    for namespace in sorted(by_namespace):
        role: dict[str, Any] = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role" if namespace else "ClusterRole",
            "metadata": {"name": role_name, **({"namespace": namespace} if namespace else {})},
            "rules": [r.to_dict() for r in normalize(by_namespace[namespace])],
        }
        out.append(role)
    return out
