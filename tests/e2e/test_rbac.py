"""RBAC end to end with the real kubectl: a certificate identity from ``kplane kubeconfig`` plus a
RoleBinding can do exactly what its Role grants; escalation, impersonation and the review APIs
answer as kube-apiserver 1.32 does.

Expected texts are upstream's: Forbidden messages from
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go (forbiddenMessage),
escalation from pkg/registry/rbac/validation/rule.go (ConfirmNoEscalation), impersonation from
staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go; kubectl's table layouts from
staging/src/k8s.io/kubectl/pkg/cmd/auth/{cani.go,whoami.go}.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import poll, unique

pytestmark = requires_kubectl


def user_kubeconfig(server: Server, user: str, *groups: str) -> Path:
    out = server.data_dir / f"{user}.kubeconfig"
    cmd = [
        sys.executable,
        "-m",
        "kplane.cli.main",
        "kubeconfig",
        "--user",
        user,
        "--data-dir",
        str(server.data_dir),
    ]
    for g in groups:
        cmd += ["--group", g]
    subprocess.run([*cmd, "-o", str(out)], check=True, capture_output=True, text=True, timeout=60)
    return out


def as_user(
    server: Server, kubeconfig: Path, *args: str, check: bool = False
) -> subprocess.CompletedProcess[str]:
    return server.kubectl(*args, check=check, env={"KUBECONFIG": str(kubeconfig)})


def apply(server: Server, manifest: dict[str, object]) -> None:
    server.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifest))


def role_and_binding(server: Server, ns: str, user: str, rules: list[dict[str, object]]) -> None:
    server.kubectl("create", "namespace", ns)
    apply(
        server,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "worker", "namespace": ns},
            "rules": rules,
        },
    )
    server.kubectl("create", "rolebinding", "worker", "--role=worker", f"--user={user}", "-n", ns)


def test_kubeconfig_command_writes_0600_cert_identity(server: Server) -> None:
    path = user_kubeconfig(server, "carol", "team-a", "team-b")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    res = as_user(server, path, "auth", "whoami", check=True)
    # kubectl auth whoami's table (whoami.go): ATTRIBUTE / VALUE rows
    assert res.stdout.split("\n")[:3] == [
        "ATTRIBUTE   VALUE",
        "Username    carol",
        "Groups      [team-a team-b system:authenticated]",
    ]


def test_get_clusterroles_lists_upstream_defaults(server: Server) -> None:
    names = set(server.kubectl("get", "clusterroles", "-o", "name").stdout.split())
    for name in (
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:aggregate-to-view",
        "system:controller:namespace-controller",
    ):
        assert f"clusterrole.rbac.authorization.k8s.io/{name}" in names
    bindings = set(server.kubectl("get", "clusterrolebindings", "-o", "name").stdout.split())
    assert "clusterrolebinding.rbac.authorization.k8s.io/cluster-admin" in bindings
    # aggregation filled view from system:aggregate-to-view (view has no rules of its own)
    view = yaml.safe_load(server.kubectl("get", "clusterrole", "view", "-o", "yaml").stdout)
    assert {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]} in view[
        "rules"
    ]


def test_namespaced_identity_can_do_exactly_what_its_role_grants(server: Server) -> None:
    ns, user = unique("rbac"), unique("dev")
    role_and_binding(
        server,
        ns,
        user,
        [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create"]}],
    )
    kc = user_kubeconfig(server, user)
    assert as_user(server, kc, "create", "configmap", "c1", "-n", ns).returncode == 0
    assert "c1" in as_user(server, kc, "get", "configmaps", "-n", ns, check=True).stdout
    res = as_user(server, kc, "get", "secrets", "-n", ns)
    assert res.returncode == 1
    assert res.stderr.strip() == (
        f'Error from server (Forbidden): secrets is forbidden: User "{user}" cannot list resource'
        f' "secrets" in API group "" in the namespace "{ns}"'
    )
    res = as_user(server, kc, "delete", "configmap", "c1", "-n", ns)
    assert res.stderr.strip() == (
        f'Error from server (Forbidden): configmaps "c1" is forbidden: User "{user}" cannot delete resource'
        f' "configmaps" in API group "" in the namespace "{ns}"'
    )
    res = as_user(server, kc, "get", "configmaps", "-n", "default")
    assert 'in the namespace "default"' in res.stderr and res.returncode == 1
    res = as_user(server, kc, "get", "namespaces")
    assert res.stderr.strip() == (
        f'Error from server (Forbidden): namespaces is forbidden: User "{user}" cannot list resource'
        ' "namespaces" in API group "" at the cluster scope'
    )
    res = as_user(server, kc, "get", "--raw", "/metrics")
    assert f'forbidden: User \\"{user}\\" cannot get path \\"/metrics\\"' in res.stderr or (
        f'forbidden: User "{user}" cannot get path "/metrics"' in res.stderr
    )
    # system:discovery: every authenticated user may read /version and discovery
    assert as_user(server, kc, "version", "-o", "json").returncode == 0


def test_binding_to_cluster_admin_without_holding_it_is_escalation(server: Server) -> None:
    ns, user = unique("esc"), unique("binder")
    role_and_binding(
        server,
        ns,
        user,
        [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["rolebindings", "roles"],
                "verbs": ["create"],
            }
        ],
    )
    kc = user_kubeconfig(server, user)
    res = as_user(
        server, kc, "create", "rolebinding", "grab", "--clusterrole=cluster-admin", f"--user={user}", "-n", ns
    )
    assert res.returncode == 1
    assert res.stderr.strip() == (
        "error: failed to create rolebinding: "
        f'rolebindings.rbac.authorization.k8s.io "grab" is forbidden: user "{user}"'
        ' (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
        '{NonResourceURLs:["*"], Verbs:["*"]}'
    )
    res = as_user(server, kc, "create", "role", "reader", "--verb=get,list", "--resource=secrets", "-n", ns)
    assert res.returncode == 1
    assert res.stderr.strip() == (
        'Error from server (Forbidden): roles.rbac.authorization.k8s.io "reader" is forbidden:'
        f' user "{user}" (groups=["system:authenticated"])'
        " is attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}'
    )
    # with `bind` on the ClusterRole the same binding is allowed
    apply(
        server,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "binder", "namespace": ns},
            "rules": [
                {
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterroles"],
                    "verbs": ["bind"],
                    "resourceNames": ["view"],
                }
            ],
        },
    )
    server.kubectl("create", "rolebinding", "binder", "--role=binder", f"--user={user}", "-n", ns)
    res = as_user(
        server, kc, "create", "rolebinding", "viewers", "--clusterrole=view", "--group=devs", "-n", ns
    )
    assert res.returncode == 0, res.stderr


def test_impersonation_needs_the_impersonate_verb(server: Server) -> None:
    user = unique("imp")
    kc = user_kubeconfig(server, user)
    res = as_user(server, kc, "get", "pods", "--as", "bob")
    assert res.stderr.strip() == (
        f'Error from server (Forbidden): users "bob" is forbidden: User "{user}" cannot impersonate resource'
        ' "users" in API group "" at the cluster scope'
    )
    apply(
        server,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{user}-imp"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["users"],
                    "verbs": ["impersonate"],
                    "resourceNames": ["bob"],
                }
            ],
        },
    )
    server.kubectl(
        "create", "clusterrolebinding", f"{user}-imp", f"--clusterrole={user}-imp", f"--user={user}"
    )
    res = as_user(server, kc, "auth", "whoami", "--as", "bob", check=True)
    assert "Username    bob" in res.stdout
    res = as_user(server, kc, "get", "pods", "--as", "bob", "--as-group", "admins")
    assert res.stderr.strip() == (
        'Error from server (Forbidden): groups "admins" is forbidden:'
        f' User "{user}" cannot impersonate resource'
        ' "groups" in API group "" at the cluster scope'
    )
    # the admin (system:masters) may impersonate anyone, and then is that user
    res = server.kubectl("get", "pods", "--as", "nobody", "--as-group", "nogroup", check=False)
    assert res.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "nobody" cannot list resource "pods"'
        ' in API group ""'
        ' in the namespace "default"'
    )


def test_auth_can_i(server: Server) -> None:
    ns, user = unique("cani"), unique("asker")
    role_and_binding(
        server,
        ns,
        user,
        [
            {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"], "resourceNames": ["web"]},
        ],
    )
    kc = user_kubeconfig(server, user)

    def can(*args: str) -> tuple[str, int]:
        res = as_user(server, kc, "auth", "can-i", *args, "-n", ns)
        return res.stdout.strip(), res.returncode

    assert can("list", "pods") == ("yes", 0)
    assert can("get", "pods", "--subresource=log") == ("yes", 0)
    assert can("delete", "pods") == ("no", 1)
    assert can("update", "deployments.apps/web") == ("yes", 0)
    assert can("update", "deployments.apps/other") == ("no", 1)
    assert can("get", "/version") == ("yes", 0)
    assert can("get", "/metrics") == ("no", 1)
    # admin asking on the user's behalf
    res = server.kubectl("auth", "can-i", "list", "pods", "-n", ns, "--as", user, check=False)
    assert (res.stdout.strip(), res.returncode) == ("yes", 0)
    res = server.kubectl("auth", "can-i", "list", "pods", "-n", "default", "--as", user, check=False)
    assert (res.stdout.strip(), res.returncode) == ("no", 1)
    listing = as_user(server, kc, "auth", "can-i", "--list", "-n", ns, check=True).stdout.splitlines()
    # cani.go's printer: four tab-aligned columns
    assert listing[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    rows = [line.split() for line in listing[1:]]
    assert ["pods", "[]", "[]", "[get", "list]"] in rows
    assert ["pods/log", "[]", "[]", "[get", "list]"] in rows
    assert ["deployments.apps", "[]", "[web]", "[*]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows
    assert ["[/version]", "[]", "[get]"] in rows


def test_anonymous_reaches_public_info_only(server: Server) -> None:
    from tests.e2e import helpers

    api = helpers.Kube.from_kubeconfig(server.kubeconfig, server.data_dir / "e2e-pki")
    assert api.get("/healthz", auth="none").status == 200
    assert api.get("/version", auth="none").status == 200
    assert api.get("/api", auth="none").status == 401


@pytest.mark.parametrize("mode", ["AlwaysAllow"])
def test_always_allow_mode_warns_and_allows(tmp_path: Path, mode: str) -> None:
    from tests.e2e.conftest import start_server

    srv = start_server(tmp_path / "d", "--authorization-mode", mode)
    try:
        kc = user_kubeconfig(srv, "anyone")
        assert as_user(srv, kc, "get", "secrets", "-n", "kube-system").returncode == 0
        assert "--authorization-mode AlwaysAllow" in srv.log.read_text()
    finally:
        srv.stop()


def test_subject_access_reviews(server: Server) -> None:
    from tests.e2e import helpers

    api = helpers.Kube.from_kubeconfig(server.kubeconfig, server.data_dir / "e2e-pki")
    ns, user = unique("sar"), unique("subj")
    role_and_binding(server, ns, user, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    sar = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "resourceAttributes": {"namespace": ns, "verb": "get", "resource": "pods"}},
    }
    res = api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", sar)
    assert res.status == 201
    # pkg/registry/authorization/subjectaccessreview/rest.go: the request echoed with status
    assert res.json()["status"] == {
        "allowed": True,
        "reason": f'RBAC: allowed by RoleBinding "worker/{ns}" of Role "worker" to User "{user}"',
    }
    sar["spec"]["resourceAttributes"]["verb"] = "delete"  # type: ignore[index]
    assert api.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", sar).json()["status"] == {
        "allowed": False
    }
    lsar = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "LocalSubjectAccessReview",
        "spec": {"user": user, "resourceAttributes": {"verb": "get", "resource": "pods"}},
    }
    res = api.post(f"/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews", lsar)
    assert res.status == 201 and res.json()["status"]["allowed"] is True
    assert res.json()["spec"]["resourceAttributes"]["namespace"] == ns
    # validation.go ValidateSubjectAccessReviewSpec
    res = api.post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {}},
    )
    assert res.status == 422
    assert res.json()["message"] == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: [spec.resourceAttributes:'
        ' Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be'
        ' specified, spec.user: Invalid value: "": at least one of user or group must be specified]'
    )
    # a body that does not decode into the Go type is the decoder's 400, never a 500
    res = api.post(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": 7},
        },
    )
    assert res.status == 400
    res = api.post(
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {}},
    )
    assert res.status == 400 and res.json()["message"] == "no namespace on request"


def test_service_account_token_with_role_binding(server: Server) -> None:
    ns = unique("satok")
    role_and_binding(
        server, ns, "nobody", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
    )
    server.kubectl("create", "serviceaccount", "bot", "-n", ns)
    apply(
        server,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "bot", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "worker"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": ns}],
        },
    )
    token = server.kubectl("create", "token", "bot", "-n", ns).stdout.strip()
    cfg = yaml.safe_load(server.kubeconfig.read_text())
    cfg["users"][0]["user"] = {"token": token}
    kc = server.data_dir / f"{ns}.kubeconfig"
    kc.write_text(yaml.safe_dump(cfg))
    assert as_user(server, kc, "get", "configmaps", "-n", ns).returncode == 0
    res = as_user(server, kc, "get", "secrets", "-n", ns)
    assert res.stderr.strip() == (
        "Error from server (Forbidden): secrets is forbidden:"
        f' User "system:serviceaccount:{ns}:bot" cannot list'
        f' resource "secrets" in API group "" in the namespace "{ns}"'
    )


def test_aggregation_follows_labels(server: Server) -> None:
    name = unique("agg")
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}],
    }
    apply(server, role)
    wanted = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}

    def rules_of(role_name: str) -> list[object]:
        obj = yaml.safe_load(server.kubectl("get", "clusterrole", role_name, "-o", "yaml").stdout)
        return list(obj.get("rules") or [])

    poll(lambda: wanted in rules_of("view") and wanted in rules_of("admin"), timeout=20)
    server.kubectl("label", "clusterrole", name, "rbac.authorization.k8s.io/aggregate-to-view-")
    poll(lambda: wanted not in rules_of("view") and wanted not in rules_of("edit"), timeout=20)
