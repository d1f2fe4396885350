"""Generated CRDs served by a real kplane server: installed from types through ``kplane.testing``,
applied with the real kubectl from ``kplane generate crds`` output, defaults and limits enforced."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from kplane import testing
from kplane.api import errors
from kplane.cli import main as cli
from tests.unit.runtime.crdtypes import widgets

GROUP = widgets.GROUP


@pytest.fixture
def kplane_crds() -> Sequence[testing.CrdSource]:
    return [widgets.Widget, widgets.WidgetV1beta1]


async def test_types_installed_and_enforced(kplane: testing.ControlPlane) -> None:
    api = kplane.client.resource(f"widgets.{GROUP}", namespace="default")
    created = await api.create(
        {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"image": "nginx"}}
    )
    # Defaults come from the schema (the Python defaults): replicas 1, note "none".
    assert created["spec"] == {"image": "nginx", "replicas": 1, "note": "none"}
    with pytest.raises(errors.Invalid) as refused:
        await api.create(
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "Widget",
                "metadata": {"name": "big"},
                "spec": {"image": "nginx", "replicas": 11},
            }
        )
    # Upstream (apiextensions-apiserver, kube-openapi validate): "<path> in body should be less than
    # or equal to <max>".
    assert "spec.replicas in body should be less than or equal to 10" in str(refused.value)
    with pytest.raises(errors.Invalid) as no_image:
        await api.create(
            {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "x"}, "spec": {}}
        )
    assert "spec.image: Required value" in str(no_image.value)
    with pytest.raises(errors.Invalid) as odd:
        await api.create(
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "Widget",
                "metadata": {"name": "odd"},
                "spec": {"image": "nginx", "budget": 3},
            }
        )
    # A CEL rule's failure names the field, the value's type and the rule's message (upstream
    # apiextensions-apiserver pkg/apiserver/schema/cel/validation.go).
    assert 'spec.budget: Invalid value: "integer": budget must be even' in str(odd.value)
    older = await kplane.client.resource(f"widgets.v1beta1.{GROUP}", namespace="default").get("w")
    assert older["apiVersion"] == f"{GROUP}/v1beta1"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
async def test_generated_yaml_applied_with_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).parents[3])
    out = tmp_path / "crds"
    assert (
        cli.main(["generate", "crds", "--paths", "tests.unit.runtime.crdtypes", "--output-dir", str(out)])
        == 0
    )
    async with testing.ControlPlane() as cp:

        async def kubectl(*args: str) -> str:
            proc = await asyncio.create_subprocess_exec(
                "kubectl",
                f"--kubeconfig={cp.kubeconfig}",
                f"--cache-dir={tmp_path}/cache",
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            stdout, stderr = await proc.communicate()
            assert proc.returncode == 0, stderr.decode()
            return stdout.decode()

        applied = await kubectl("apply", "-f", str(out))
        assert applied.strip() == f"customresourcedefinition.apiextensions.k8s.io/widgets.{GROUP} created"
        await testing.eventually(lambda: kubectl("get", "crd", f"widgets.{GROUP}"), timeout=5)
        manifest = tmp_path / "w.yaml"
        manifest.write_text(
            f"apiVersion: {GROUP}/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  image: nginx\n"
        )
        await testing.eventually(lambda: kubectl("apply", "-f", str(manifest)), timeout=5)
        # The printer columns and the short name come from the type's declarations.
        table = await kubectl("get", "wdg", "-n", "default")
        assert table.split() == ["NAME", "IMAGE", "REPLICAS", "w", "nginx", "1"]
