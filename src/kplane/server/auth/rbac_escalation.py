"""Escalation prevention on RBAC writes (upstream's ``pkg/registry/rbac/*/policybased`` and
``validation/rule.go``).

A Role or ClusterRole may be written by a ``system:masters`` member, by whoever may ``escalate``
it, or by a user who already holds every permission it grants (in the role's namespace); a
ClusterRole with an ``aggregationRule`` needs cluster-admin's rights. A binding may be written by a
``system:masters`` member, by whoever may ``bind`` the role it references, or by a user who holds
every permission of that role. Writes by the server itself (no requester) are always allowed; an
update that changes only what garbage collection changes (owner references, finalizers) is not
checked. Refusals are upstream's 403s.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from kplane.api import errors, gvk
from kplane.api.catalog import ResourceRecord
from kplane.server.auth import rbac_rules
from kplane.server.auth.authn import UserInfo
from kplane.server.auth.authz import PRIVILEGED_GROUP, Attributes, Authorizer, forbidden_error, go_quote
from kplane.server.auth.rbac import GROUP, RBACIndex

Object = Mapping[str, Any]
_FULL_AUTHORITY = [
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
]
_RESOURCES = {
    "Role": "roles",
    "ClusterRole": "clusterroles",
    "RoleBinding": "rolebindings",
    "ClusterRoleBinding": "clusterrolebindings",
}
_GC_FIELDS = ("ownerReferences", "finalizers", "managedFields", "resourceVersion", "generation")


class RequesterLike(Protocol):
    @property
    def username(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def groups(self) -> tuple[str, ...]: ...
    @property
    def extra(self) -> dict[str, list[str]]: ...


def _user(requester: RequesterLike) -> UserInfo:
    extra = types.MappingProxyType({k: tuple(v) for k, v in requester.extra.items()})
    return UserInfo(requester.username, requester.uid, tuple(requester.groups), extra)


def _gc_only(new: Object, old: Object) -> bool:
    def strip(obj: Object) -> dict[str, Any]:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _GC_FIELDS}
        return {**obj, "metadata": meta}

    return strip(new) == strip(old)


class EscalationCheck:
    """Callable registry write guard: ``check(record, obj, old, requester)`` raises 403 or
    returns None (it decides at once, from the RBAC index)."""

    def __init__(self, index: RBACIndex, authorizer: Authorizer) -> None:
        self._index = index
        self._authorizer = authorizer

    def __call__(
        self, record: ResourceRecord, obj: Object, old: Object | None, requester: RequesterLike | None
    ) -> None:
        kind = record.kind
        resource = _RESOURCES.get(kind)
        if record.group != GROUP or resource is None or requester is None:
            return
        user = _user(requester)
        if PRIVILEGED_GROUP in user.groups or (old is not None and _gc_only(obj, old)):
            return
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        if kind in ("Role", "ClusterRole"):
            self._check_role(user, resource, namespace, name, obj)
        else:
            self._check_binding(user, resource, namespace, name, obj)

    def _allowed(self, user: UserInfo, verb: str, resource: str, namespace: str, name: str) -> bool:
        attrs = Attributes(
            user, verb, group=GROUP, version="v1", resource=resource, namespace=namespace, name=name
        )
        return self._authorizer(attrs).allowed

    def _check_role(self, user: UserInfo, resource: str, namespace: str, name: str, obj: Object) -> None:
        if self._allowed(user, "escalate", resource, namespace, name):
            return
        rules = [r for r in obj.get("rules") or () if isinstance(r, dict)]
        self._confirm(user, namespace, rules, resource, name)
        if resource == "clusterroles" and obj.get("aggregationRule"):
            held, _ = self._index.rules_for(user, namespace)
            if rbac_rules.uncovered(held, _FULL_AUTHORITY):
                raise forbidden_error(
                    GROUP, resource, name, "must have cluster-admin privileges to use the aggregationRule"
                )

    def _check_binding(self, user: UserInfo, resource: str, namespace: str, name: str, obj: Object) -> None:
        ref = obj.get("roleRef") or {}
        role_kind, role_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        role_resource = _RESOURCES.get(role_kind)
        if role_resource is None:
            return  # validation refuses it
        if self._allowed(user, "bind", role_resource, namespace, role_name):
            return
        if role_kind == "ClusterRole":
            rules = self._index.cluster_role_rules(role_name)
        else:
            rules = self._index.roles.get((namespace, role_name))
        if rules is None:
            raise errors.not_found(gvk.GroupResource(GROUP, role_resource), role_name)
        self._confirm(user, namespace, list(rules), resource, name)

    def _confirm(
        self, user: UserInfo, namespace: str, rules: Sequence[Mapping[str, Any]], resource: str, name: str
    ) -> None:
        """Upstream's ``ConfirmNoEscalation``: 403 listing the rules ``user`` does not hold."""
        held, resolution = self._index.rules_for(user, namespace)
        missing = rbac_rules.uncovered(held, rules)
        if not missing:
            return
        lines = sorted({rbac_rules.compact_string(r) for r in rbac_rules.compact(missing)})
        groups = "[" + " ".join(go_quote(g) for g in user.groups) + "]"
        msg = (
            f"user {go_quote(user.name)} (groups={groups}) is attempting to grant RBAC permissions not"
            " currently held:\n" + "\n".join(lines)
        )
        if resolution:
            msg += "; resolution errors: [" + " ".join(resolution) + "]"
        raise forbidden_error(GROUP, resource, name, msg)
