"""The RBAC authorizer's evaluation, index upkeep and messages, against upstream's rules
(pkg/apis/rbac/v1/evaluation_helpers.go, plugin/pkg/auth/authorizer/rbac/rbac.go,
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.server.auth import authz, rbac, rbac_rules
from kplane.server.auth.authn import UserInfo
from kplane.server.registry import rbacpolicy

ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))
P = rbac.PREFIX


def binding(
    kind: str, name: str, role_kind: str, role: str, subjects: list[dict[str, Any]], ns: str = ""
) -> Any:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {
        "kind": kind,
        "metadata": meta,
        "roleRef": {"kind": role_kind, "name": role},
        "subjects": subjects,
    }


def attrs(
    verb: str, resource: str, *, ns: str = "", name: str = "", sub: str = "", group: str = ""
) -> authz.Attributes:
    return authz.Attributes(
        ALICE, verb, group=group, resource=resource, namespace=ns, name=name, subresource=sub
    )


@pytest.fixture
def index() -> rbac.RBACIndex:
    idx = rbac.RBACIndex()
    idx.apply(
        P + "roles/dev/pod-reader",
        {"rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]},
    )
    idx.apply(
        P + "rolebindings/dev/rb",
        binding("RoleBinding", "rb", "Role", "pod-reader", [{"kind": "Group", "name": "devs"}], "dev"),
    )
    return idx


def test_role_binding_allows_in_its_namespace_only(index: rbac.RBACIndex) -> None:
    authorize = rbac.RBACAuthorizer(index)
    d = authorize(attrs("list", "pods", ns="dev"))
    assert d.allowed
    assert d.reason == 'RBAC: allowed by RoleBinding "rb/dev" of Role "pod-reader" to Group "devs"'
    assert authorize(attrs("get", "pods", ns="dev", sub="log", name="p")).allowed
    assert not authorize(attrs("list", "pods", ns="other")).allowed
    assert not authorize(attrs("delete", "pods", ns="dev", name="p")).allowed
    assert not authorize(attrs("get", "pods", ns="dev", sub="exec", name="p")).allowed


def test_index_follows_deletes_and_role_changes(index: rbac.RBACIndex) -> None:
    authorize = rbac.RBACAuthorizer(index)
    index.apply(
        P + "roles/dev/pod-reader", {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}]}
    )
    assert authorize(attrs("delete", "pods", ns="dev", name="p")).allowed
    index.apply(P + "rolebindings/dev/rb", None)
    assert authorize(attrs("list", "pods", ns="dev")).verdict is authz.Verdict.NO_OPINION


def test_missing_role_is_the_deny_reason() -> None:
    idx = rbac.RBACIndex()
    idx.apply(
        P + "clusterrolebindings/b",
        binding("ClusterRoleBinding", "b", "ClusterRole", "gone", [{"kind": "User", "name": "alice"}]),
    )
    d = rbac.RBACAuthorizer(idx)(attrs("get", "pods", ns="x"))
    assert d.reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'


def test_service_account_subject_defaults_to_binding_namespace() -> None:
    idx = rbac.RBACIndex()
    idx.apply(P + "clusterroles/r", {"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get"]}]})
    idx.apply(
        P + "rolebindings/ns1/b",
        binding("RoleBinding", "b", "ClusterRole", "r", [{"kind": "ServiceAccount", "name": "sa"}], "ns1"),
    )
    sa = UserInfo("system:serviceaccount:ns1:sa")
    d = rbac.RBACAuthorizer(idx)(authz.Attributes(sa, "get", resource="pods", namespace="ns1", name="p"))
    assert d.reason == 'RBAC: allowed by RoleBinding "b/ns1" of ClusterRole "r" to ServiceAccount "sa/ns1"'


@pytest.mark.parametrize(
    ("rule", "path", "ok"),
    [
        (["/healthz"], "/healthz", True),
        (["/healthz"], "/healthz/etcd", False),
        (["/healthz/*"], "/healthz/etcd", True),
        (["/api/*"], "/api/v1", True),
        (["*"], "/anything", True),
    ],
)
def test_non_resource_urls(rule: list[str], path: str, ok: bool) -> None:
    a = authz.Attributes(ALICE, "get", resource_request=False, path=path)
    assert rbac_rules.rule_allows(a, {"nonResourceURLs": rule, "verbs": ["get"]}) is ok


def test_resource_names_and_star_subresource() -> None:
    rule = {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"], "resourceNames": ["web"]}
    assert rbac_rules.rule_allows(attrs("update", "deployments", group="apps", sub="scale", name="web"), rule)
    assert not rbac_rules.rule_allows(
        attrs("update", "deployments", group="apps", sub="scale", name="x"), rule
    )
    assert not rbac_rules.rule_allows(attrs("update", "deployments", group="apps", name="web"), rule)


def test_forbidden_messages() -> None:
    e = authz.forbidden(attrs("list", "pods", ns="default"), "")
    assert e.message == (
        'pods is forbidden: User "alice" cannot list resource "pods" in API group ""'
        ' in the namespace "default"'
    )
    assert e.details == {"kind": "pods"}
    e = authz.forbidden(attrs("get", "deployments", group="apps", name="web", ns="default"), "")
    assert e.message == (
        'deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments"'
        ' in API group "apps" in the namespace "default"'
    )
    e = authz.forbidden(attrs("list", "nodes"), "")
    assert e.message.endswith('cannot list resource "nodes" in API group "" at the cluster scope')
    e = authz.forbidden(authz.Attributes(ALICE, "get", resource_request=False, path="/apis"), "")
    assert e.message == 'forbidden: User "alice" cannot get path "/apis"'


def test_coverage_and_compact_string() -> None:
    held = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    wanted = [{"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get", "list"]}]
    missing = rbac_rules.compact(rbac_rules.uncovered(held, wanted))
    assert sorted(rbac_rules.compact_string(r) for r in missing) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["list"]}',
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
    ]
    assert not rbac_rules.uncovered([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], wanted)


def test_aggregation_unions_matching_roles_in_name_order() -> None:
    sel = {"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]}
    roles = {
        "agg": {"metadata": {"name": "agg"}, "aggregationRule": sel},
        "b": {"metadata": {"name": "b", "labels": {"agg": "yes"}}, "rules": [{"verbs": ["get"]}]},
        "a": {
            "metadata": {"name": "a", "labels": {"agg": "yes"}},
            "rules": [{"verbs": ["list"]}, {"verbs": ["get"]}],
        },
        "c": {"metadata": {"name": "c"}, "rules": [{"verbs": ["delete"]}]},
    }
    assert rbacpolicy.aggregate(roles["agg"], roles) == [{"verbs": ["list"]}, {"verbs": ["get"]}]
    assert rbacpolicy.aggregate(roles["c"], roles) is None
