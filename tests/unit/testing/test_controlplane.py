"""The in-process control plane: a real server, reachable by kplane, kubectl and the kubernetes package."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import kplane.testing
from kplane.api import errors
from kplane.client import sync
from kplane.testing import ControlPlane, ThreadedControlPlane

WIDGETS: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                        },
                    }
                },
            }
        ],
    },
}


def _gadgets() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(yaml.safe_dump(WIDGETS))
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
    crd["spec"]["scope"] = "Cluster"
    return crd


async def test_serves_https_with_admin_credentials(kplane: ControlPlane) -> None:
    """The fixture's server answers the admin client over HTTPS on loopback, from a kubeconfig."""
    assert kplane.url.startswith("https://127.0.0.1:")
    assert kplane.kubeconfig.is_file()
    names = [ns["metadata"]["name"] for ns in (await kplane.client.resource("namespaces").list())["items"]]
    assert {"default", "kube-system"} <= set(names)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
async def test_real_kubectl_reaches_it(kplane: ControlPlane, tmp_path: Path) -> None:
    """The real kubectl, given the control plane's kubeconfig, creates and reads objects."""
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        f"--kubeconfig={kplane.kubeconfig}",
        f"--cache-dir={tmp_path}",
        "create",
        "configmap",
        "from-kubectl",
        "--from-literal=a=b",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert out.decode().strip() == "configmap/from-kubectl created"
    cm = await kplane.client.resource("configmaps", namespace="default").get("from-kubectl")
    assert cm["data"] == {"a": "b"}


async def test_installs_crds_from_dicts_and_yaml(tmp_path: Path) -> None:
    """CRDs from a dict and from a multi-document YAML file are served as soon as start returns."""
    path = tmp_path / "crds.yaml"
    path.write_text(yaml.safe_dump_all([_gadgets(), None]))
    async with ControlPlane(crds=[WIDGETS, path]) as cp:
        widgets = cp.client.resource("widgets.example.com", namespace="default")
        created = await widgets.create(
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}}
        )
        assert created["spec"] == {"size": 3}
        gadgets = cp.client.resource("gadgets.example.com")
        await gadgets.create({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}})
        assert [g["metadata"]["name"] for g in (await gadgets.list())["items"]] == ["g"]


async def test_install_refuses_what_is_not_a_crd(kplane: ControlPlane, tmp_path: Path) -> None:
    """A YAML document of another kind is refused before anything is sent."""
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(ValueError, match="expected a CustomResourceDefinition, got 'ConfigMap'"):
        await kplane.install_crds(path)


async def test_reinstalling_a_crd_replaces_it(kplane: ControlPlane) -> None:
    """Installing a CRD that exists updates it instead of failing with AlreadyExists."""
    await kplane.install_crds(WIDGETS)
    changed: dict[str, Any] = yaml.safe_load(yaml.safe_dump(WIDGETS))
    changed["spec"]["names"]["shortNames"] = ["wd"]
    (stored,) = await kplane.install_crds(changed)
    assert stored["spec"]["names"]["shortNames"] == ["wd"]


async def test_stop_releases_everything() -> None:
    """After exit the port refuses connections and the kubeconfig is gone."""
    async with ControlPlane() as cp:
        port = cp.server.port
        kubeconfig = cp.kubeconfig
    assert not kubeconfig.exists()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)
    with pytest.raises(RuntimeError, match="not running"):
        _ = cp.client


def test_threaded_control_plane_serves_blocking_clients() -> None:
    """From a synchronous test, the threaded variant serves the blocking facade and the kubernetes package."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    with ThreadedControlPlane(crds=[WIDGETS]) as cp:
        with sync.Client(cp.config) as c:
            c.resource("configmaps", namespace="default").create({"metadata": {"name": "s"}})
            with pytest.raises(errors.AlreadyExists):
                c.resource("configmaps", namespace="default").create({"metadata": {"name": "s"}})
        api = k8s_client.CoreV1Api(k8s_config.new_client_from_config(str(cp.kubeconfig)))
        try:
            assert api.read_namespaced_config_map("s", "default").metadata.name == "s"
        finally:
            api.api_client.close()


def test_public_surface() -> None:
    """The names kplane.testing promises exist."""
    assert set(kplane.testing.__all__) >= {
        "ControlPlane",
        "ThreadedControlPlane",
        "FaultPlan",
        "eventually",
        "consistently",
    }
    assert all(getattr(kplane.testing, name) is not None for name in kplane.testing.__all__)
