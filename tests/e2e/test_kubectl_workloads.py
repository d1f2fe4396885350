"""The real kubectl with Deployments: apply twice, YAML/wide output, scale, get all."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Server, requires_kubectl
from tests.e2e.helpers import Kube, deployment, unique

pytestmark = requires_kubectl


@pytest.fixture
def ns(api: Kube) -> str:
    name = unique("kw")
    api.ok(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    return name


def _rows(out: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in out.strip().splitlines()]


def _write(path: Path, doc: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _dep_path(ns: str, name: str = "") -> str:
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    return f"{base}/{name}" if name else base


def test_apply_twice(server: Server, api: Kube, ns: str, tmp_path: Path) -> None:
    """apply -f creates, then configures; the replica change is stored and visible in get."""
    manifest = deployment("web", ns, replicas=2)
    path = _write(tmp_path / "web.yaml", manifest)
    assert server.kubectl("apply", "-f", path).stdout.strip() == "deployment.apps/web created"
    manifest["spec"]["replicas"] = 3
    _write(tmp_path / "web.yaml", manifest)
    assert server.kubectl("apply", "-f", path).stdout.strip() == "deployment.apps/web configured"
    assert server.kubectl("apply", "-f", path).stdout.strip() == "deployment.apps/web unchanged"
    obj = api.ok("GET", _dep_path(ns, "web"))
    assert obj["spec"]["replicas"] == 3
    last = json.loads(obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["spec"]["replicas"] == 3
    jp = server.kubectl("get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}").stdout
    assert jp == "3"


def test_get_deploy_yaml(server: Server, api: Kube, ns: str) -> None:
    """get deploy -o yaml prints the stored object with kind, apiVersion and server fields."""
    api.ok("POST", _dep_path(ns), deployment("yml", ns, replicas=2))
    doc = yaml.safe_load(server.kubectl("get", "deploy", "yml", "-n", ns, "-o", "yaml").stdout)
    assert doc["kind"] == "Deployment" and doc["apiVersion"] == "apps/v1"
    assert doc["metadata"]["name"] == "yml" and doc["metadata"]["uid"] and doc["metadata"]["generation"] == 1
    assert doc["spec"]["replicas"] == 2
    assert doc["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    # Defaults are applied, as upstream does.
    assert doc["spec"]["strategy"]["type"] == "RollingUpdate"
    assert doc["spec"]["revisionHistoryLimit"] == 10


def test_get_deploy_wide(server: Server, api: Kube, ns: str) -> None:
    """get deploy -o wide prints READY, UP-TO-DATE, AVAILABLE, AGE, CONTAINERS, IMAGES, SELECTOR."""
    api.ok("POST", _dep_path(ns), deployment("wide", ns, replicas=2, image="nginx:1.27"))
    rows = _rows(server.kubectl("get", "deploy", "-n", ns, "-o", "wide").stdout)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    row = rows[1]
    assert row[0] == "wide" and re.fullmatch(r"\d+/2", row[1])
    assert row[5:] == ["main", "nginx:1.27", "app=wide"]
    plain = _rows(server.kubectl("get", "deploy", "-n", ns).stdout)
    assert plain[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]


def test_scale(server: Server, api: Kube, ns: str) -> None:
    """scale deploy changes .spec.replicas and the scale subresource agrees (get --raw)."""
    api.ok("POST", _dep_path(ns), deployment("sc", ns, replicas=1))
    assert server.kubectl("scale", "deploy", "sc", "-n", ns, "--replicas=4").stdout.strip() == (
        "deployment.apps/sc scaled"
    )
    assert api.ok("GET", _dep_path(ns, "sc"))["spec"]["replicas"] == 4
    raw = json.loads(server.kubectl("get", "--raw", f"{_dep_path(ns, 'sc')}/scale").stdout)
    assert raw["kind"] == "Scale" and raw["apiVersion"] == "autoscaling/v1"
    assert raw["spec"]["replicas"] == 4 and raw["status"]["selector"] == "app=sc"
    assert raw["metadata"]["name"] == "sc" and raw["metadata"]["namespace"] == ns


def test_get_all(server: Server, api: Kube, ns: str) -> None:
    """get all lists deployments (and the other 'all' category kinds) with kind/ prefixes."""
    api.ok("POST", _dep_path(ns), deployment("every", ns))
    api.ok(
        "POST",
        f"/api/v1/namespaces/{ns}/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "every"},
            "spec": {"ports": [{"port": 80}]},
        },
    )
    out = server.kubectl("get", "all", "-n", ns).stdout
    assert "deployment.apps/every" in out
    assert "service/every" in out


def test_label_selector_on_deployments(server: Server, api: Kube, ns: str) -> None:
    """-l with set-based selectors picks deployments by label."""
    api.ok("POST", _dep_path(ns), deployment("fe", ns, labels={"tier": "fe"}))
    api.ok("POST", _dep_path(ns), deployment("be", ns, labels={"tier": "be"}))
    out = server.kubectl("get", "deploy", "-n", ns, "-l", "tier notin (be)", "-o", "name").stdout.split()
    assert out == ["deployment.apps/fe"]


def test_delete_deployment(server: Server, api: Kube, ns: str) -> None:
    """delete deploy removes it and reports the upstream message."""
    api.ok("POST", _dep_path(ns), deployment("gone", ns))
    assert 'deployment.apps "gone" deleted' in server.kubectl("delete", "deploy", "gone", "-n", ns).stdout
    assert api.get(_dep_path(ns, "gone")).status == 404


def test_set_image(server: Server, api: Kube, ns: str) -> None:
    """set image changes the container image through a patch and bumps generation."""
    api.ok("POST", _dep_path(ns), deployment("img", ns))
    server.kubectl("set", "image", "deploy/img", "main=nginx:1.28", "-n", ns)
    obj = api.ok("GET", _dep_path(ns, "img"))
    assert obj["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert obj["metadata"]["generation"] == 2
