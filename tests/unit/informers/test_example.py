"""The README example (examples/informer_workqueue.py) runs against a real server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from kplane.testing import ControlPlane
from tests.unit.informers import _live

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "informer_workqueue.py"


async def test_example_prints_every_configmap(tmp_path: Path) -> None:
    """With --once the example handles each ConfigMap of the namespace once and exits 0."""
    async with ControlPlane() as srv:
        async with _live.clients(srv) as dc:
            await _live.make_namespace(dc, "ex")
            cms = dc.resource(_live.CONFIGMAPS, "ex")
            for i in range(3):
                await cms.create({"metadata": {"name": f"cm-{i}"}})
        res = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, str(EXAMPLE), str(srv.kubeconfig), "ex", "--once"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert res.returncode == 0, res.stderr
    keys = sorted(line.split()[0] for line in res.stdout.splitlines())
    assert keys == ["ex/cm-0", "ex/cm-1", "ex/cm-2"]
