"""FlowSchema matching, as upstream's ``apf_filter``/``rule.go`` (``k8s.io/apiserver/pkg/util/flowcontrol``).

A request matches a FlowSchema when one of its rules matches: one subject names the user (User by
name, Group among the user's groups, ServiceAccount by namespace and name, ``*`` for any) and, for a
resource request, one resource rule covers the verb, API group, resource (``resource/subresource``
for a subresource) and namespace (``*`` any namespace; a cluster-scoped request needs
``clusterScope: true``); for a non-resource request, one non-resource rule covers the verb and the
path (``*``, the exact path, or a ``/prefix/*`` pattern). Schemas are tried in ascending
``matchingPrecedence``, ties broken by name. The flow is the schema's name plus the distinguisher:
the user name (``ByUser``), the namespace (``ByNamespace``) or nothing.

A schema is compiled once, when it is written, into sets, so matching costs set lookups.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kplane.server.auth import authn

Object = dict[str, Any]
Request = tuple[str, bool, str, str, str, str]
"""What matching reads of a request: (verb, is_resource, API group, resource[/subresource],
namespace, non-resource path); built by ``request_of``."""
_SA_PREFIX = "system:serviceaccount:"


def _strings(value: Any) -> frozenset[str]:
    return frozenset(v for v in value if isinstance(v, str)) if isinstance(value, list) else frozenset()


def _dict(value: Any) -> Object:
    return value if isinstance(value, dict) else {}


@dataclasses.dataclass(frozen=True)
class _Rule:
    users: frozenset[str]
    groups: frozenset[str]
    service_accounts: frozenset[tuple[str, str]]  # (namespace, name or "*")
    resource_rules: tuple[tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str], bool], ...]
    non_resource_rules: tuple[tuple[frozenset[str], tuple[str, ...]], ...]

    def subject_matches(self, user: authn.UserInfo) -> bool:
        if "*" in self.users or user.name in self.users:
            return True
        if "*" in self.groups or not self.groups.isdisjoint(user.groups):
            return True
        if self.service_accounts and user.name.startswith(_SA_PREFIX):
            namespace, _, name = user.name[len(_SA_PREFIX) :].partition(":")
            return (namespace, name) in self.service_accounts or (namespace, "*") in self.service_accounts
        return False

    def resource_matches(self, verb: str, group: str, resource: str, namespace: str) -> bool:
        for verbs, groups, resources, namespaces, cluster_scope in self.resource_rules:
            if not ("*" in verbs or verb in verbs):
                continue
            if not ("*" in groups or group in groups):
                continue
            if not ("*" in resources or resource in resources):
                continue
            if namespace == "":
                if cluster_scope:
                    return True
            elif "*" in namespaces or namespace in namespaces:
                return True
        return False

    def non_resource_matches(self, verb: str, path: str) -> bool:
        for verbs, urls in self.non_resource_rules:
            if not ("*" in verbs or verb in verbs):
                continue
            for url in urls:
                if url == "*" or url == path or (url.endswith("/*") and path.startswith(url[:-1])):
                    return True
        return False


def _compile_rule(raw: Object) -> _Rule:
    users: set[str] = set()
    groups: set[str] = set()
    accounts: set[tuple[str, str]] = set()
    for subject in raw.get("subjects") or []:
        subject = _dict(subject)
        kind = subject.get("kind")
        if kind == "User":
            users.add(str(_dict(subject.get("user")).get("name", "")))
        elif kind == "Group":
            groups.add(str(_dict(subject.get("group")).get("name", "")))
        elif kind == "ServiceAccount":
            sa = _dict(subject.get("serviceAccount"))
            accounts.add((str(sa.get("namespace", "")), str(sa.get("name", ""))))
    resource_rules = tuple(
        (
            _strings(r.get("verbs")),
            _strings(r.get("apiGroups")),
            _strings(r.get("resources")),
            _strings(r.get("namespaces")),
            r.get("clusterScope") is True,
        )
        for r in map(_dict, raw.get("resourceRules") or [])
    )
    non_resource_rules = tuple(
        (_strings(r.get("verbs")), tuple(sorted(_strings(r.get("nonResourceURLs")))))
        for r in map(_dict, raw.get("nonResourceRules") or [])
    )
    return _Rule(frozenset(users), frozenset(groups), frozenset(accounts), resource_rules, non_resource_rules)


@dataclasses.dataclass(frozen=True)
class Schema:
    """A compiled FlowSchema."""

    name: str
    uid: str
    precedence: int
    level: str
    distinguisher: str  # "ByUser", "ByNamespace" or ""
    rules: tuple[_Rule, ...]

    @classmethod
    def compile(cls, obj: Object) -> Schema:
        meta, spec = _dict(obj.get("metadata")), _dict(obj.get("spec"))
        precedence = spec.get("matchingPrecedence")
        return cls(
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            precedence=precedence if isinstance(precedence, int) else 1000,  # upstream's default
            level=str(_dict(spec.get("priorityLevelConfiguration")).get("name", "")),
            distinguisher=str(_dict(spec.get("distinguisherMethod")).get("type", "")),
            rules=tuple(_compile_rule(_dict(r)) for r in spec.get("rules") or []),
        )

    def matches(self, user: authn.UserInfo, request: Request) -> bool:
        verb, is_resource, group, resource, namespace, path = request
        for rule in self.rules:
            if not rule.subject_matches(user):
                continue
            if is_resource:
                if rule.resource_matches(verb, group, resource, namespace):
                    return True
            elif rule.non_resource_matches(verb, path):
                return True
        return False

    def flow(self, user: authn.UserInfo, request: Request) -> str:
        """The flow distinguisher of ``request`` under this schema."""
        if self.distinguisher == "ByUser":
            return user.name
        if self.distinguisher == "ByNamespace":
            return request[4]
        return ""


def request_of(
    verb: str, is_resource: bool, group: str, resource: str, sub: str, namespace: str, path: str
) -> Request:
    """The ``Request`` tuple matching reads (also the classification cache's key, with the user)."""
    if is_resource:
        return (verb, True, group, f"{resource}/{sub}" if sub else resource, namespace, "")
    return (verb, False, "", "", "", path)


def first_match(schemas: Sequence[Schema], user: authn.UserInfo, request: Request) -> Schema | None:
    """The first schema (in ``schemas``' order: precedence, then name) that ``request`` matches."""
    for schema in schemas:
        if schema.matches(user, request):
            return schema
    return None
