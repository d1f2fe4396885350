"""The pytest plugin, as a user's project sees it: loaded by its entry point, fixtures, seed replay."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

USER_TESTS = textwrap.dedent(
    """
    import pytest
    from kplane.testing import ControlPlane, FaultPlan, Conflicts

    @pytest.fixture
    def kplane_faults(kplane_seed):
        return FaultPlan(Conflicts(probability=1.0), seed=kplane_seed)

    async def test_fixture_serves(kplane: ControlPlane, kplane_client) -> None:
        assert kplane_client is kplane.client
        assert (await kplane_client.resource("namespaces").get("default"))["metadata"]["name"] == "default"
        assert kplane.faults is not None

    def test_fails_with_its_seed(kplane_seed: int) -> None:
        assert kplane_seed == 4242
        raise AssertionError("boom")
    """
)


def test_entry_point_fixtures_and_seed_report(tmp_path: Path) -> None:
    """In a project with no conftest, the fixtures exist and a failure names the seed to replay."""
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    args = ["-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "--kplane-seed=4242", "test_user.py"]
    res = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = res.stdout + res.stderr
    assert "1 failed, 1 passed" in out, out
    assert "fault seed 4242: replay with --kplane-seed=4242" in out, out
