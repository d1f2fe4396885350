"""RBAC state the server keeps itself: the bootstrap policy and ClusterRole aggregation.

``reconcile_bootstrap`` runs at every start, as upstream's RBAC post-start hook: each bootstrap
ClusterRole and ClusterRoleBinding is created when missing; an existing one gets the rules,
subjects, labels, annotations and aggregation selectors it lacks (extras are never removed) unless
it is annotated ``rbac.authorization.kubernetes.io/autoupdate: "false"``.

``Aggregator`` is upstream's clusterrole-aggregation controller as a small in-server loop: after any
ClusterRole changes, every ClusterRole with an ``aggregationRule`` gets as ``rules`` the union (in
order, without duplicates) of the rules of the ClusterRoles its selectors match, taken in name order.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Mapping
from typing import Any

from kplane.api import errors, labels
from kplane.api.catalog import Catalog
from kplane.server.auth import rbac_policy, rbac_rules
from kplane.server.registry.apibootstrap import get_or_create
from kplane.server.registry.store import Registry

log = logging.getLogger("kplane.server.rbac")
Object = dict[str, Any]
_GROUP = "rbac.authorization.k8s.io"


def _covered(held: list[Any], rule: Mapping[str, Any]) -> bool:
    return not rbac_rules.uncovered([h for h in held if isinstance(h, dict)], [rule])


def _merge_role(current: Object, wanted: Object) -> Object:
    new = copy.deepcopy(current)
    meta = new.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        merged = dict(wanted["metadata"].get(key) or {})
        merged.update(meta.get(key) or {})
        meta[key] = merged
    if wanted.get("rules") is not None and not wanted.get("aggregationRule"):
        rules = list(new.get("rules") or [])
        rules.extend(r for r in wanted["rules"] if not _covered(rules, r))
        new["rules"] = rules
    if wanted.get("aggregationRule"):
        agg = new.setdefault("aggregationRule", {})
        selectors = list(agg.get("clusterRoleSelectors") or [])
        selectors.extend(s for s in wanted["aggregationRule"]["clusterRoleSelectors"] if s not in selectors)
        agg["clusterRoleSelectors"] = selectors
    return new


def _merge_binding(current: Object, wanted: Object) -> Object:
    new = copy.deepcopy(current)
    meta = new.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        merged = dict(wanted["metadata"].get(key) or {})
        merged.update(meta.get(key) or {})
        meta[key] = merged
    subjects = list(new.get("subjects") or [])
    subjects.extend(s for s in wanted.get("subjects") or () if s not in subjects)
    if subjects:
        new["subjects"] = subjects
    return new


async def reconcile_bootstrap(registry: Registry, catalog: Catalog) -> None:
    """Create or top up every bootstrap ClusterRole and ClusterRoleBinding (see the module docstring)."""
    for resource, objs, merge in (
        ("clusterroles", rbac_policy.cluster_roles(), _merge_role),
        ("clusterrolebindings", rbac_policy.cluster_role_bindings(), _merge_binding),
    ):
        record = catalog.lookup(_GROUP, "v1", resource)
        assert record is not None
        for wanted in objs:
            name = wanted["metadata"]["name"]
            current = await get_or_create(registry, record, wanted)
            if current is None:
                continue
            annotations = current.get("metadata", {}).get("annotations") or {}
            if annotations.get(rbac_policy.AUTOUPDATE) == "false":
                log.warning("%s %s is not reconciled: %s is false", resource, name, rbac_policy.AUTOUPDATE)
                continue
            new = merge(current, wanted)
            if new != current:

                def replace(_current: Object, new: Object = new) -> Object:
                    return new

                await registry.update(record, "", name, replace)


def aggregate(role: Mapping[str, Any], roles: Mapping[str, Mapping[str, Any]]) -> list[Any] | None:
    """The rules ``role`` aggregates from ``roles`` (by name), or None without an aggregationRule."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, dict):
        return None
    selectors = rule.get("clusterRoleSelectors")
    name = role.get("metadata", {}).get("name")
    out: list[Any] = []
    for sel in selectors if isinstance(selectors, list) else ():
        try:
            selector = labels.from_label_selector(sel if isinstance(sel, dict) else None)
        except ValueError:
            continue
        for other_name in sorted(roles):
            other = roles[other_name]
            if other_name == name or not selector.matches(other.get("metadata", {}).get("labels") or {}):
                continue
            for r in other.get("rules") or ():
                if r not in out:
                    out.append(r)
    return out


class Aggregator:
    """Keeps aggregated ClusterRoles' rules current; ``poke`` after any ClusterRole change."""

    def __init__(self, registry: Registry, catalog: Catalog, roles: Mapping[str, Mapping[str, Any]]) -> None:
        self._registry = registry
        record = catalog.lookup(_GROUP, "v1", "clusterroles")
        assert record is not None
        self._record = record
        self._roles = roles
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="kplane-rbac-aggregation")
        self._wake.set()

    def poke(self) -> None:
        self._wake.set()

    async def sync(self) -> None:
        """Bring every aggregated ClusterRole up to date now."""
        for name, role in sorted(self._roles.items()):
            rules = aggregate(role, self._roles)
            if rules is None or rules == (role.get("rules") or []):
                continue

            def set_rules(current: Object, rules: list[Any] = rules) -> Object:
                return {**current, "rules": copy.deepcopy(rules)}

            try:
                await self._registry.update(self._record, "", name, set_rules)
            except errors.APIError as e:
                log.warning("aggregating clusterrole %s: %s", name, e)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.sync()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
