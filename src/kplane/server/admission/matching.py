"""Which admission requests a webhook (or an admission policy) applies to.

Upstream's predicates (apiserver ``pkg/admission/plugin/webhook/predicates``, 1.32), shared by the
webhook plugins and ValidatingAdmissionPolicy:

- ``Rule``: one ``RuleWithOperations`` compiled once: operations, API groups, versions,
  ``resource/subresource`` patterns (``*``, ``*/*``, ``pods/*``, ``*/status``) and scope
  (``Namespaced`` never matches a Namespace object, ``Cluster`` always does);
- ``namespace_labels`` and ``selects_namespace``: the namespace selector sees the labels of the
  request's namespace (a Namespace's own create/update: the object's labels);
- ``selects_object``: the object selector matches when either the new or the old object matches;
- ``equivalents``: for ``matchPolicy: Equivalent``, the other (group, version, resource) records
  that store the same objects (same storage prefix), as upstream's equivalent resource mapper;
- ``exempt``: webhooks and policies never see their own configuration kinds.

All functions are pure but ``namespace_labels``, which reads the namespace through the given
lookup (a dict read from the cache: no I/O on the request path).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kplane.api import labels
from kplane.api.catalog import Catalog, ResourceRecord

Object = dict[str, Any]

ADMISSION_GROUP = "admissionregistration.k8s.io"
_EXEMPT_KINDS = frozenset(
    {
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
    }
)


def exempt(record: ResourceRecord) -> bool:
    """Upstream's ``IsExemptAdmissionConfigurationResource``: admission configuration kinds are
    never sent to webhooks or policies (so a broken webhook cannot lock itself in)."""
    return record.group == ADMISSION_GROUP and record.kind in _EXEMPT_KINDS


@dataclass(frozen=True, slots=True)
class Request:
    """What the rules look at: the operation and the resource as addressed (or an equivalent)."""

    operation: str
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled ``RuleWithOperations`` (``scope`` defaults to ``*``)."""

    operations: frozenset[str]
    groups: frozenset[str]
    versions: frozenset[str]
    resources: tuple[tuple[str, str], ...]
    scope: str = "*"

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Rule:
        resources = []
        for text in _strings(raw.get("resources")):
            res, _, sub = text.partition("/")
            resources.append((res, sub))
        scope = raw.get("scope")
        return cls(
            operations=frozenset(_strings(raw.get("operations"))),
            groups=frozenset(_strings(raw.get("apiGroups"))),
            versions=frozenset(_strings(raw.get("apiVersions"))),
            resources=tuple(resources),
            scope=scope if isinstance(scope, str) and scope else "*",
        )

    def matches(self, req: Request) -> bool:
        """Upstream's ``rules.Matcher.Matches``: scope, operation, group, version, resource."""
        is_namespace = req.group == "" and req.version == "v1" and req.resource == "namespaces"
        if self.scope == "Namespaced":
            if is_namespace or not req.namespace:
                return False
        elif self.scope == "Cluster":
            if not (is_namespace or not req.namespace):
                return False
        elif self.scope != "*":
            return False
        if "*" not in self.operations and req.operation not in self.operations:
            return False
        if "*" not in self.groups and req.group not in self.groups:
            return False
        if "*" not in self.versions and req.version not in self.versions:
            return False
        for res, sub in self.resources:
            if (res == "*" or res == req.resource) and (sub == "*" or sub == req.subresource):
                return True
        return False


def parse_rules(raw: Any) -> tuple[Rule, ...]:
    return tuple(Rule.parse(r) for r in raw if isinstance(r, dict)) if isinstance(raw, list) else ()


def any_rule(rules: Iterable[Rule], req: Request) -> bool:
    return any(rule.matches(req) for rule in rules)


def selector(raw: Any) -> labels.Selector:
    """A webhook's ``namespaceSelector``/``objectSelector``; absent or ``{}`` selects everything.
    Raises ``ValueError`` for a selector that does not parse (validation refuses those)."""
    if not isinstance(raw, dict):
        return labels.Selector.everything()
    return labels.from_label_selector(raw)


def _labels_of(obj: Object | None) -> dict[str, str] | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    found = meta.get("labels") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else None


class NamespaceNotFound(LookupError):
    """The request's namespace does not exist (upstream answers the lister's NotFound)."""


NamespaceLookup = Callable[[str], "Object | None"]
"""The Namespace object of a name, or None when there is none (a cache read)."""


def namespace_labels(
    lookup: NamespaceLookup, *, resource: str, group: str, subresource: str, operation: str,
    namespace: str, obj: Object | None,
) -> dict[str, str] | None:  # fmt: skip
    """The labels the namespace selector is matched against. For a Namespace's own create or
    update, the object's; otherwise the namespace's (``NamespaceNotFound`` when it does not exist)."""
    if group == "" and resource == "namespaces" and not subresource and operation in ("CREATE", "UPDATE"):
        return _labels_of(obj)
    found = lookup(namespace)
    if found is None:
        raise NamespaceNotFound(namespace)
    return _labels_of(found)


def namespace_applies(resource: str, group: str, namespace: str) -> bool:
    """Whether the namespace selector is consulted at all: cluster-scoped requests (other than
    Namespaces themselves) always pass it."""
    return bool(namespace) or (group == "" and resource == "namespaces")


def selects_object(sel: labels.Selector, obj: Object | None, old: Object | None) -> bool:
    """Upstream's object matcher: the new or the old object's labels match."""
    if sel.empty:
        return True
    return (obj is not None and sel.matches(_labels_of(obj))) or (
        old is not None and sel.matches(_labels_of(old))
    )


class Equivalents:
    """Records storing the same objects as a given one (same storage prefix, so the same objects
    in another group or version), recomputed when the catalog changes."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._generation = -1
        self._by_prefix: dict[str, tuple[ResourceRecord, ...]] = {}

    def of(self, record: ResourceRecord) -> tuple[ResourceRecord, ...]:
        """The other records of ``record``'s objects, in catalog order (``record`` excluded)."""
        if self._generation != self._catalog.generation:
            grouped: dict[str, list[ResourceRecord]] = {}
            for r in self._catalog:
                grouped.setdefault(r.key_prefix, []).append(r)
            self._by_prefix = {k: tuple(v) for k, v in grouped.items()}
            self._generation = self._catalog.generation
        return tuple(r for r in self._by_prefix.get(record.key_prefix, ()) if r is not record)
