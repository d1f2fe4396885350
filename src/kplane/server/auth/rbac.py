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
        self._compiled_roles: dict[tuple[str, str], tuple[rbac_rules.CompiledRule, ...]] = {}
        self._compiled_cluster_roles: dict[str, tuple[rbac_rules.CompiledRule, ...]] = {}
        self._bindings: dict[tuple[str, str, str], _Binding] = {}
        # (scope, subject kind, subject name) -> {binding key: the allow reason naming that subject};
        # scope "" holds ClusterRoleBindings, a namespace that namespace's RoleBindings.
        self._by_subject: dict[tuple[str, str, str], dict[tuple[str, str, str], str]] = {}
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
                self._compiled_roles.pop((namespace, name), None)
            else:
                self.roles[(namespace, name)] = _rules(obj)
                self._compiled_roles[(namespace, name)] = _compile(obj)
        elif resource == "clusterroles":
            if obj is None:
                self.cluster_roles.pop(name, None)
                self._compiled_cluster_roles.pop(name, None)
            else:
                self.cluster_roles[name] = obj
                self._compiled_cluster_roles[name] = _compile(obj)
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
        binding = _Binding(kind, namespace, bkey[2], str(ref.get("kind") or ""), str(ref.get("name") or ""))
        self._bindings[bkey] = binding
        keys = []
        for skind, sname, shown in _subject_keys(obj, namespace):
            skey = (namespace, skind, sname)
            self._by_subject.setdefault(skey, {})[bkey] = binding.describe(shown)
            keys.append(skey)
        self._subjects_of[bkey] = keys

    # -- reading ---------------------------------------------------------------------------------

    def cluster_role_rules(self, name: str) -> tuple[Mapping[str, Any], ...] | None:
        obj = self.cluster_roles.get(name)
        return None if obj is None else _rules(obj)

    def _role_rules(self, binding: _Binding) -> tuple[tuple[Mapping[str, Any], ...] | None, str]:
        if binding.role_kind == "ClusterRole":
            return self.cluster_role_rules(
                binding.role_name
            ), f'clusterrole.{GROUP} "{binding.role_name}" not found'
        if binding.role_kind == "Role" and binding.namespace:
            rules = self.roles.get((binding.namespace, binding.role_name))
            return rules, f'role.{GROUP} "{binding.role_name}" not found'
        return None, f'unknown roleRef kind "{binding.role_kind}"'

    def _compiled(self, binding: _Binding) -> tuple[rbac_rules.CompiledRule, ...] | None:
        if binding.role_kind == "ClusterRole":
            return self._compiled_cluster_roles.get(binding.role_name)
        if binding.role_kind == "Role" and binding.namespace:
            return self._compiled_roles.get((binding.namespace, binding.role_name))
        return None

    def _matching(self, user: UserInfo, namespace: str) -> Iterator[tuple[_Binding, str]]:
        """(binding, allow reason) for the bindings that apply to ``user``: cluster ones, then
        those of ``namespace``; each once."""
        scopes = ("", namespace) if namespace else ("",)
        subjects = [("User", user.name), *(("Group", g) for g in user.groups)]
        by_subject = self._by_subject
        for scope in scopes:
            seen: set[tuple[str, str, str]] = set()
            for skind, sname in subjects:
                entries = by_subject.get((scope, skind, sname))
                if not entries:
                    continue
                for bkey, reason in entries.items():
                    if bkey not in seen:
                        seen.add(bkey)
                        yield self._bindings[bkey], reason

    def allow_reason(self, attributes: Attributes) -> str | None:
        """The reason of the first binding whose role grants ``attributes``, or None."""
        for binding, reason in self._matching(attributes.user, attributes.namespace):
            for rule in self._compiled(binding) or ():
                if rule.allows(attributes):
                    return reason
        return None

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
        errs: list[str] = []
        for binding, _ in self._matching(user, namespace):
            granted, missing = self._role_rules(binding)
            if granted is None:
                errs.append(missing)
            else:
                rules.extend(granted)
        return rules, errs


def _compile(obj: Object) -> tuple[rbac_rules.CompiledRule, ...]:
    return tuple(rbac_rules.CompiledRule(r) for r in _rules(obj))


_MEMO_SIZE = 4096


class RBACAuthorizer:
    """``Authorizer`` over an ``RBACIndex``: ALLOW with upstream's reason, otherwise NO_OPINION.

    Decisions are memoised per attributes (at most ``_MEMO_SIZE``, all dropped whenever the index
    changes), so a client repeating a request (creates carry no name) is answered by one lookup.
    """

    def __init__(self, index: RBACIndex) -> None:
        self.index = index
        self._memo: dict[Attributes, Decision] = {}
        self._memo_generation = -1

    def __call__(self, attributes: Attributes) -> Decision:
        if self._memo_generation != self.index.generation:
            self._memo.clear()
            self._memo_generation = self.index.generation
        decision = self._memo.get(attributes)
        if decision is None:
            decision = self._decide(attributes)
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[attributes] = decision
        return decision

    def _decide(self, attributes: Attributes) -> Decision:
        reason = self.index.allow_reason(attributes)
        if reason is not None:
            return Decision(Verdict.ALLOW, reason)
        errs = self.index.errors_for(attributes.user, attributes.namespace)
        if not errs:
            return Decision(Verdict.NO_OPINION)
        text = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
        return Decision(Verdict.NO_OPINION, f"RBAC: {text}")
