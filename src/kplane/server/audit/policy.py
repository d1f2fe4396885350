"""The audit policy: upstream's ``audit.k8s.io/v1`` ``Policy`` and its rule matching
(``k8s.io/apiserver/pkg/audit/policy/checker.go``).

Rules are tried in order; the first whose every given criterion matches decides the request's
level (``None``, ``Metadata``, ``Request``, ``RequestResponse``), the stages left out (the policy's
``omitStages`` plus the rule's) and whether ``managedFields`` are dropped from logged objects (the
rule's ``omitManagedFields`` if set, else the policy's). No matching rule: level ``None``.

Criteria: ``users``, ``userGroups`` (any of the user's groups), ``verbs``, ``namespaces`` (``""`` is
cluster scope), ``resources`` (``group`` exact, ``""`` the core group; ``resources`` entries
``pods``, ``pods/log``, ``pods/*``, ``*/scale``, ``*``; optional ``resourceNames``) and
``nonResourceURLs`` (exact, or a prefix ending in ``*``). A rule with resources or namespaces never
matches a non-resource request, one with non-resource URLs never a resource request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")


class InvalidPolicy(ValueError):
    """A policy file that cannot be used; the message says where."""


@dataclass(frozen=True)
class Request:
    """What a rule looks at."""

    user: str
    groups: Sequence[str]
    verb: str
    resource_request: bool
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True)
class Decision:
    level: str
    omit_stages: frozenset[str]
    omit_managed_fields: bool


NONE = Decision("None", frozenset(), False)


@dataclass(frozen=True)
class _Resources:
    group: str
    resources: tuple[str, ...]
    names: tuple[str, ...]

    def matches(self, r: Request) -> bool:
        if self.group != r.group:
            return False
        if self.names and r.name not in self.names:
            return False
        if not self.resources:
            return True
        full = f"{r.resource}/{r.subresource}" if r.subresource else r.resource
        for pattern in self.resources:
            if pattern in ("*", full):
                return True
            if pattern == f"{r.resource}/*" and r.subresource:
                return True
            if pattern == f"*/{r.subresource}" and r.subresource:
                return True
        return False


@dataclass(frozen=True)
class _Rule:
    level: str
    users: frozenset[str]
    groups: frozenset[str]
    verbs: frozenset[str]
    resources: tuple[_Resources, ...]
    namespaces: frozenset[str] | None
    urls: tuple[str, ...]
    omit_stages: frozenset[str]
    omit_managed_fields: bool | None

    def matches(self, r: Request) -> bool:
        if self.users and r.user not in self.users:
            return False
        if self.groups and not self.groups.intersection(r.groups):
            return False
        if self.verbs and r.verb not in self.verbs:
            return False
        if r.resource_request:
            if self.urls:
                return False
            if self.namespaces is not None and r.namespace not in self.namespaces:
                return False
            return not self.resources or any(g.matches(r) for g in self.resources)
        if self.resources or self.namespaces is not None:
            return False
        return not self.urls or any(
            r.path == u or (u.endswith("*") and r.path.startswith(u[:-1])) for u in self.urls
        )


class Policy:
    """A parsed policy; ``decide`` is pure and cheap (a walk over the rules)."""

    def __init__(self, rules: Sequence[_Rule], omit_stages: frozenset[str], omit_managed: bool) -> None:
        self._rules = tuple(rules)
        self._omit = omit_stages
        self._omit_managed = omit_managed

    def decide(self, r: Request) -> Decision:
        for rule in self._rules:
            if rule.matches(r):
                managed = self._omit_managed if rule.omit_managed_fields is None else rule.omit_managed_fields
                return Decision(rule.level, self._omit | rule.omit_stages, managed)
        return NONE


def load(path: Path) -> Policy:
    """The policy in the file at ``path``; raises ``InvalidPolicy`` or ``OSError``."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise InvalidPolicy(f"{path}: not YAML: {e}") from e
    return parse(doc, source=str(path))


def parse(doc: Any, *, source: str = "<audit policy>") -> Policy:
    if not isinstance(doc, dict) or doc.get("kind") != "Policy":
        raise InvalidPolicy(f"{source}: not an audit Policy")
    if doc.get("apiVersion") not in ("audit.k8s.io/v1", "audit.k8s.io/v1beta1"):
        raise InvalidPolicy(f"{source}: unsupported apiVersion {doc.get('apiVersion')!r}")
    rules = []
    for i, raw in enumerate(doc.get("rules") or ()):
        where = f"{source}: rules[{i}]"
        if not isinstance(raw, dict):
            raise InvalidPolicy(f"{where}: must be an object")
        level = raw.get("level")
        if level not in LEVELS:
            raise InvalidPolicy(f'{where}.level: Unsupported value: "{level}": supported values: {LEVELS}')
        groups = []
        for j, g in enumerate(raw.get("resources") or ()):
            if not isinstance(g, dict):
                raise InvalidPolicy(f"{where}.resources[{j}]: must be an object")
            groups.append(
                _Resources(
                    str(g.get("group") or ""),
                    tuple(_strings(g.get("resources"), f"{where}.resources[{j}].resources")),
                    tuple(_strings(g.get("resourceNames"), f"{where}.resources[{j}].resourceNames")),
                )
            )
        urls = tuple(_strings(raw.get("nonResourceURLs"), f"{where}.nonResourceURLs"))
        if urls and (groups or raw.get("namespaces")):
            raise InvalidPolicy(
                f"{where}: rules cannot apply to both regular resources and non-resource URLs"
            )
        namespaces = raw.get("namespaces")
        omit_managed = raw.get("omitManagedFields")
        rules.append(
            _Rule(
                level=level,
                users=frozenset(_strings(raw.get("users"), f"{where}.users")),
                groups=frozenset(_strings(raw.get("userGroups"), f"{where}.userGroups")),
                verbs=frozenset(_strings(raw.get("verbs"), f"{where}.verbs")),
                resources=tuple(groups),
                namespaces=frozenset(_strings(namespaces, f"{where}.namespaces")) if namespaces else None,
                urls=urls,
                omit_stages=_stages(raw.get("omitStages"), f"{where}.omitStages"),
                omit_managed_fields=omit_managed if isinstance(omit_managed, bool) else None,
            )
        )
    return Policy(
        rules, _stages(doc.get("omitStages"), f"{source}: omitStages"), doc.get("omitManagedFields") is True
    )


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidPolicy(f"{where}: must be a list of strings")
    return value


def _stages(value: Any, where: str) -> frozenset[str]:
    stages = _strings(value, where)
    for s in stages:
        if s not in STAGES:
            raise InvalidPolicy(f'{where}: Unsupported value: "{s}"')
    return frozenset(stages)
