"""The RBAC authorizer (upstream's ``plugin/pkg/auth/authorizer/rbac``).

``RBACIndex`` holds every Role, ClusterRole, RoleBinding and ClusterRoleBinding in memory, fed
synchronously from the server's watch cache (``apply`` is called with each stored object as the
cache applies it, so a write is visible to the next request; no storage read ever happens per
request). Bindings are indexed by subject (user name, group name; ServiceAccount subjects by their
user name), so a request looks only at the bindings naming its user or one of its groups.

Evaluation is upstream's: allow-only, union of the rules of every matching binding, ClusterRoleBindings
first, then RoleBindings of the request namespace; a binding whose role is missing contributes an
error that becomes the deny reason (``RBAC: ...``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from kplane.server.auth import rbac_rules
from kplane.server.auth.authn import UserInfo
from kplane.server.auth.authz import Attributes, Decision, Verdict, go_quote

GROUP = "rbac.authorization.k8s.io"
PREFIX = f"/registry/{GROUP}/"
SA_PREFIX = "system:serviceaccount:"

Object = Mapping[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class _Binding:
    kind: str  # RoleBinding | ClusterRoleBinding
    namespace: str  # "" for ClusterRoleBindings
    name: str
    role_kind: str  # Role | ClusterRole
    role_name: str
    subjects: tuple[tuple[str, str], ...]  # (kind, name-as-user) as written, for reasons

    def describe(self, subject: tuple[str, str]) -> str:
        where = f"{self.name}/{self.namespace}" if self.namespace else self.name
        kind, shown = subject
        return (
            f"RBAC: allowed by {self.kind} {go_quote(where)} of {self.role_kind}"
            f" {go_quote(self.role_name)} to {kind} {go_quote(shown)}"
        )


def _meta(obj: Object) -> tuple[str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return "", ""
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _rules(obj: Object) -> tuple[Mapping[str, Any], ...]:
    rules = obj.get("rules")
    return tuple(r for r in rules if isinstance(r, dict)) if isinstance(rules, list) else ()


def _subject_keys(obj: Object, namespace: str) -> tuple[tuple[str, str, tuple[str, str]], ...]:
    """(index kind, index name, (shown kind, shown name)) per subject; SAs become user names."""
    out = []
    subjects = obj.get("subjects")
    for s in subjects if isinstance(subjects, list) else ():
        if not isinstance(s, dict):
            continue
        kind, name = s.get("kind"), s.get("name")
        if not isinstance(name, str):
            continue
        if kind == "User":
            out.append(("User", name, ("User", name)))
        elif kind == "Group":
            out.append(("Group", name, ("Group", name)))
        elif kind == "ServiceAccount":
            ns = s.get("namespace") or namespace
            if isinstance(ns, str) and ns:
                out.append(("User", f"{SA_PREFIX}{ns}:{name}", ("ServiceAccount", f"{name}/{ns}")))
    return tuple(out)


class RBACIndex:
    """In-memory RBAC state with a subject index. Not thread-safe: use from the server's loop."""

    def __init__(self) -> None:
        self.roles: dict[tuple[str, str], tuple[Mapping[str, Any], ...]] = {}
        self.cluster_roles: dict[str, Object] = {}
        self._bindings: dict[tuple[str, str, str], _Binding] = {}
        # (subject kind, subject name) -> binding keys, kept per scope ("" = cluster).
        self._by_subject: dict[tuple[str, str, str], dict[tuple[str, str, str], tuple[str, str]]] = {}
        self._subjects_of: dict[tuple[str, str, str], list[tuple[str, str, str]]] = {}
        self.generation = 0
        """Bumped on every change (for callers that memoise derived results)."""

    # -- feeding ---------------------------------------------------------------------------------

    def apply(self, key: str, obj: Object | None) -> None:
        """Record the stored state of ``key`` (None: deleted). Keys outside RBAC are ignored."""
        if not key.startswith(PREFIX):
            return
        resource = key[len(PREFIX) :].split("/", 1)[0]
        rest = key[len(PREFIX) + len(resource) + 1 :]
        namespace, _, name = rest.rpartition("/")
        self.generation += 1
        if resource == "roles":
            if obj is None:
                self.roles.pop((namespace, name), None)
            else:
                self.roles[(namespace, name)] = _rules(obj)
        elif resource == "clusterroles":
            if obj is None:
                self.cluster_roles.pop(name, None)
            else:
                self.cluster_roles[name] = obj
        elif resource in ("rolebindings", "clusterrolebindings"):
            bkey = (resource, namespace, name)
            self._unindex(bkey)
            if obj is not None:
                self._index(bkey, obj, "RoleBinding" if resource == "rolebindings" else "ClusterRoleBinding")

    def _unindex(self, bkey: tuple[str, str, str]) -> None:
        self._bindings.pop(bkey, None)
        for skey in self._subjects_of.pop(bkey, ()):
            entries = self._by_subject.get(skey)
            if entries is not None:
                entries.pop(bkey, None)
                if not entries:
                    del self._by_subject[skey]

    def _index(self, bkey: tuple[str, str, str], obj: Object, kind: str) -> None:
        namespace = bkey[1]
        ref = obj.get("roleRef")
        if not isinstance(ref, dict):
            return
        binding = _Binding(
            kind,
            namespace,
            bkey[2],
            str(ref.get("kind") or ""),
            str(ref.get("name") or ""),
            (),
        )
        self._bindings[bkey] = binding
        keys = []
        for skind, sname, shown in _subject_keys(obj, namespace):
            skey = (namespace, skind, sname)
            self._by_subject.setdefault(skey, {})[bkey] = shown
            keys.append(skey)
        self._subjects_of[bkey] = keys

    # -- reading ---------------------------------------------------------------------------------

    def cluster_role_rules(self, name: str) -> tuple[Mapping[str, Any], ...] | None:
        obj = self.cluster_roles.get(name)
        return None if obj is None else _rules(obj)

    def _role_rules(self, binding: _Binding) -> tuple[tuple[Mapping[str, Any], ...] | None, str]:
        if binding.role_kind == "ClusterRole":
            rules = self.cluster_role_rules(binding.role_name)
            missing = f'clusterrole.{GROUP} "{binding.role_name}" not found'
        elif binding.role_kind == "Role" and binding.namespace:
            rules = self.roles.get((binding.namespace, binding.role_name))
            missing = f'role.{GROUP} "{binding.role_name}" not found'
        else:
            return None, f'unknown roleRef kind "{binding.role_kind}"'
        return rules, missing

    def _matching(self, user: UserInfo, namespace: str) -> Iterator[tuple[_Binding, tuple[str, str]]]:
        """Bindings that apply to ``user``: cluster ones, then those of ``namespace``."""
        scopes = ("", namespace) if namespace else ("",)
        subjects = [("User", user.name), *(("Group", g) for g in user.groups)]
        for scope in scopes:
            seen: set[tuple[str, str, str]] = set()
            for skind, sname in subjects:
                for bkey, shown in self._by_subject.get((scope, skind, sname), {}).items():
                    if bkey not in seen:
                        seen.add(bkey)
                        yield self._bindings[bkey], shown

    def visit(
        self, user: UserInfo, namespace: str
    ) -> Iterator[tuple[_Binding, tuple[str, str], tuple[Mapping[str, Any], ...]]]:
        """(binding, subject, rules) for every binding of ``user``; errors are yielded as
        bindings with empty rules and recorded by ``errors_for``."""
        for binding, shown in self._matching(user, namespace):
            rules, _ = self._role_rules(binding)
            if rules is not None:
                yield binding, shown, rules

    def errors_for(self, user: UserInfo, namespace: str) -> list[str]:
        """Role-resolution errors of ``user``'s bindings (missing roles), in visit order."""
        out = []
        for binding, _ in self._matching(user, namespace):
            rules, missing = self._role_rules(binding)
            if rules is None:
                out.append(missing)
        return out

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Mapping[str, Any]], list[str]]:
        """Every rule granted to ``user`` in ``namespace`` (cluster-wide rules included) and the
        resolution errors (upstream's ``RulesFor``)."""
        rules: list[Mapping[str, Any]] = []
        for _, _, granted in self.visit(user, namespace):
            rules.extend(granted)
        return rules, self.errors_for(user, namespace)


class RBACAuthorizer:
    """``Authorizer`` over an ``RBACIndex``: ALLOW with upstream's reason, otherwise NO_OPINION."""

    def __init__(self, index: RBACIndex) -> None:
        self.index = index

    def __call__(self, attributes: Attributes) -> Decision:
        for binding, shown, rules in self.index.visit(attributes.user, attributes.namespace):
            for rule in rules:
                if rbac_rules.rule_allows(attributes, rule):
                    return Decision(Verdict.ALLOW, binding.describe(shown))
        errs = self.index.errors_for(attributes.user, attributes.namespace)
        if not errs:
            return Decision(Verdict.NO_OPINION)
        text = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
        return Decision(Verdict.NO_OPINION, f"RBAC: {text}")
