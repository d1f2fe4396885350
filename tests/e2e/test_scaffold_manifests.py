"""A ``kplane init`` project's manifests apply with the real kubectl and give the manager what it needs.

``make manifests`` then ``make deploy``'s ``kubectl apply``, against ``kplane serve``: the CRD is
established, the sample object is accepted, the manager's service account may do what the
controller declared and what leader election needs (``kubectl auth can-i --as``), as kubebuilder's
``config/rbac`` (role.yaml, role_binding.yaml, leader_election_role.yaml, service_account.yaml)
grants it, and the webhook configurations send the kind's writes to the webhook Service.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kplane.cli import main as cli
from tests.e2e import conftest as e2e

pytestmark = e2e.requires_kubectl


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[e2e.Server]:
    srv = e2e.start_server(tmp_path_factory.mktemp("kplane"), storage="memory")
    yield srv
    srv.stop()


def generate(root: Path, *args: str) -> None:
    """One of ``make manifests``' commands, run in the project as the Makefile runs it."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    res = subprocess.run(
        [sys.executable, "-m", "kplane.cli.main", "generate", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


def test_init_manifests_deploy(server: e2e.Server, tmp_path: Path) -> None:
    """The namespace, RBAC, CRD, Deployment and sample all apply; the service account's rights hold."""
    root = tmp_path / "tide-ops"
    assert cli.main(["init", str(root), "--domain", "example.com"]) == 0
    create = ["create", "api", "--project-dir", str(root), "--group", "sea", "--version", "v1"]
    assert cli.main([*create, "--kind", "TideGauge"]) == 0
    hook = ["create", "webhook", "--project-dir", str(root), "--group", "sea", "--version", "v1"]
    assert cli.main([*hook, "--kind", "TideGauge", "--defaulting", "--programmatic-validation"]) == 0
    generate(root, "crds", "--paths", "tide_ops.api", "--output-dir", "config/crd/bases")
    generate(root, "rbac", "--paths", "tide_ops.controllers", "--output-dir", "config/rbac",
             "--role-name", "tide-ops-manager-role")  # fmt: skip
    service = "tide-ops-system/tide-ops-webhook-service"
    generate(root, "webhook", "--paths", "tide_ops.webhooks", "--output-dir", "config/webhook",
             "--service", service, "--name-prefix", "tide-ops-")  # fmt: skip
    makefile = (root / "Makefile").read_text()
    assert "--role-name tide-ops-manager-role" in makefile
    assert "--service tide-ops-system/tide-ops-webhook-service --name-prefix tide-ops-" in makefile

    k = server.kubectl
    # `make deploy`'s apply: the namespace comes first (config/manager), so the namespaced RBAC lands.
    k("apply", "-f", str(root / "config/crd/bases"), "-f", str(root / "config/manager"),
      "-f", str(root / "config/rbac"))  # fmt: skip
    k("wait", "--for=condition=Established", "crd/tidegauges.sea.example.com", "--timeout=20s")
    dep = yaml.safe_load(k("get", "deployment", "-n", "tide-ops-system", "tide-ops-controller-manager",
                           "-o", "yaml").stdout)  # fmt: skip
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "tide-ops-controller-manager"
    k("get", "serviceaccount", "-n", "tide-ops-system", "tide-ops-controller-manager")

    # kubebuilder's sample: config/samples/<group>_<version>_<lowercase kind>.yaml, <kind>-sample
    # (a DNS-1123 subdomain, so the API server accepts it).
    sample = root / "config/samples/sea_v1_tidegauge.yaml"
    k("apply", "-f", str(sample))
    listed = k("get", "tidegauges", "-o", "name").stdout.split()
    assert listed == ["tidegauge.sea.example.com/tidegauge-sample"]
    assert '.named("tidegauge")' in (root / "tide_ops/controllers/tide_gauge.py").read_text()

    sa = "--as=system:serviceaccount:tide-ops-system:tide-ops-controller-manager"

    def can(*args: str) -> str:
        return k("auth", "can-i", sa, *args, check=False).stdout.strip()

    assert can("watch", "tidegauges.sea.example.com", "--all-namespaces") == "yes"
    assert can("update", "tidegauges.sea.example.com/status", "-n", "default") == "yes"
    assert can("update", "leases.coordination.k8s.io", "-n", "tide-ops-system") == "yes"
    assert can("create", "events", "-n", "tide-ops-system") == "yes"
    assert can("create", "leases.coordination.k8s.io", "-n", "default") == "no"  # only its namespace
    assert can("delete", "secrets", "-n", "tide-ops-system") == "no"

    # The webhook Service and configurations (applied last: from now on the kind's writes call the
    # webhooks, which no pod serves here).
    k("apply", "-f", str(root / "config/webhook"))
    k("get", "service", "-n", "tide-ops-system", "tide-ops-webhook-service")
    k("get", "mutatingwebhookconfiguration", "tide-ops-mutating-webhook-configuration")
    k("get", "validatingwebhookconfiguration", "tide-ops-validating-webhook-configuration")
    refused = k("create", "-f", "-", check=False, input=sample.read_text().replace("-sample", "-two"))
    assert refused.returncode != 0
    assert 'failed calling webhook "mtidegauge-v1.kb.io"' in refused.stderr, refused.stderr
