"""PolicyRule matching and coverage, as upstream's ``rbac/v1/evaluation_helpers.go`` and
``validation/policy_comparator.go``.

A rule is the wire dict of a ``PolicyRule`` (``verbs``, ``apiGroups``, ``resources``,
``resourceNames``, ``nonResourceURLs``); absent lists are empty. Nothing here mutates a rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kplane.server.auth.authz import Attributes, go_quote

Rule = Mapping[str, Any]
_ALL = "*"


def _list(rule: Rule, key: str) -> Sequence[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else ()


class CompiledRule:
    """A rule prepared for matching: sets instead of lists, ``*`` noted once (built at index time,
    so evaluating a request allocates nothing)."""

    __slots__ = ("all_groups", "all_resources", "all_verbs", "groups", "names", "resources", "urls", "verbs")

    def __init__(self, rule: Rule) -> None:
        verbs = frozenset(_list(rule, "verbs"))
        groups = frozenset(_list(rule, "apiGroups"))
        resources = frozenset(_list(rule, "resources"))
        self.verbs, self.all_verbs = verbs, _ALL in verbs
        self.groups, self.all_groups = groups, _ALL in groups
        self.resources, self.all_resources = resources, _ALL in resources
        self.names = frozenset(_list(rule, "resourceNames"))
        self.urls = tuple(_list(rule, "nonResourceURLs"))

    def allows(self, attributes: Attributes) -> bool:
        """Whether the rule grants ``attributes`` (upstream's ``RuleAllows``): verb, then group,
        resource (``*``, ``resource[/sub]`` or ``*/sub``) and name, or the non-resource URL
        (exact, ``*``, or a ``prefix*``)."""
        if not (self.all_verbs or attributes.verb in self.verbs):
            return False
        if not attributes.resource_request:
            path = attributes.path
            return any(u in (_ALL, path) or (u.endswith(_ALL) and path.startswith(u[:-1])) for u in self.urls)
        if not (self.all_groups or attributes.group in self.groups):
            return False
        if not self.all_resources:
            sub = attributes.subresource
            if sub:
                if f"{attributes.resource}/{sub}" not in self.resources and "*/" + sub not in self.resources:
                    return False
            elif attributes.resource not in self.resources:
                return False
        return not self.names or attributes.name in self.names


def rule_allows(attributes: Attributes, rule: Rule) -> bool:
    """Whether ``rule`` grants ``attributes`` (upstream's ``RuleAllows``)."""
    return CompiledRule(rule).allows(attributes)


# -- coverage (escalation checks) -------------------------------------------------------------


def _breakdown(rule: Rule) -> list[dict[str, list[str]]]:
    """One rule per (group, resource, verb[, name]) or (url, verb): upstream's ``BreakdownRule``."""
    out: list[dict[str, list[str]]] = []
    verbs = _list(rule, "verbs")
    names = _list(rule, "resourceNames")
    for group in _list(rule, "apiGroups"):
        for resource in _list(rule, "resources"):
            for verb in verbs:
                if names:
                    out.extend(
                        {"apiGroups": [group], "resources": [resource], "verbs": [verb], "resourceNames": [n]}
                        for n in names
                    )
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in _list(rule, "nonResourceURLs"):
        out.extend({"nonResourceURLs": [url], "verbs": [v]} for v in verbs)
    return out


def _has_all(held: Sequence[str], wanted: Sequence[str]) -> bool:
    return _ALL in held or all(w in held for w in wanted)


def _resource_covers(held: Sequence[str], wanted: Sequence[str]) -> bool:
    if _ALL in held:
        return True
    for w in wanted:
        if w in held:
            continue
        _, slash, sub = w.partition("/")
        if slash and "*/" + sub in held:
            continue
        return False
    return True


def _url_covers(held: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(any(h == w or (h.endswith(_ALL) and w.startswith(h[:-1])) for h in held) for w in wanted)


def rule_covers(owner: Rule, wanted: Rule) -> bool:
    """Whether ``owner`` grants everything the single-valued rule ``wanted`` grants."""
    if not _has_all(_list(owner, "verbs"), _list(wanted, "verbs")):
        return False
    if _list(wanted, "nonResourceURLs"):
        return _url_covers(_list(owner, "nonResourceURLs"), _list(wanted, "nonResourceURLs"))
    owner_names = _list(owner, "resourceNames")
    return (
        _has_all(_list(owner, "apiGroups"), _list(wanted, "apiGroups"))
        and _resource_covers(_list(owner, "resources"), _list(wanted, "resources"))
        and (not owner_names or all(n in owner_names for n in _list(wanted, "resourceNames")))
    )


def uncovered(owner: Iterable[Rule], wanted: Iterable[Rule]) -> list[dict[str, list[str]]]:
    """The broken-down rules of ``wanted`` that no rule of ``owner`` covers (upstream's ``Covers``)."""
    held = list(owner)
    missing: list[dict[str, list[str]]] = []
    for rule in wanted:
        for part in _breakdown(rule):
            if not any(rule_covers(h, part) for h in held):
                missing.append(part)
    return missing


def compact(rules: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """Merge simple rules (one group, one resource, at most one name) that differ only in verbs,
    as upstream's ``CompactRules``; other rules are kept as they are."""
    out: list[dict[str, list[str]]] = []
    simple: dict[tuple[str, str, tuple[str, ...]], dict[str, list[str]]] = {}
    for r in rules:
        groups, resources = r.get("apiGroups", []), r.get("resources", [])
        names = r.get("resourceNames", [])
        if len(groups) == 1 and len(resources) == 1 and len(names) <= 1 and not r.get("nonResourceURLs"):
            key = (groups[0], resources[0], tuple(names))
            if key in simple:
                simple[key]["verbs"].extend(r.get("verbs", []))
                continue
            simple[key] = {k: list(v) for k, v in r.items()}
            out.append(simple[key])
        else:
            out.append({k: list(v) for k, v in r.items()})
    return out


def _go_list(values: Sequence[str]) -> str:
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: Mapping[str, Sequence[str]]) -> str:
    """``{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}``: upstream's
    ``CompactString`` (only non-empty fields, in this order)."""
    parts = []
    for label, key in (
        ("APIGroups", "apiGroups"),
        ("Resources", "resources"),
        ("NonResourceURLs", "nonResourceURLs"),
        ("ResourceNames", "resourceNames"),
        ("Verbs", "verbs"),
    ):
        values = rule.get(key) or ()
        if values:
            parts.append(f"{label}:{_go_list(values)}")
    return "{" + ", ".join(parts) + "}"
