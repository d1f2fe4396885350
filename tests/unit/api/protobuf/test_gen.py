"""The table generator reproduces the committed tables from a real kubectl binary."""

from __future__ import annotations

import pathlib

import pytest

from kplane.api.protobuf import _gen

KUBECTL = pathlib.Path("/usr/lib/google-cloud-sdk/bin/kubectl.1.32")
TABLES = pathlib.Path(_gen.__file__).with_name("_tables.py")


@pytest.mark.kubectl
@pytest.mark.skipif(not KUBECTL.exists(), reason="needs the kubectl 1.32 binary")
def test_generator_matches_committed_tables() -> None:
    """Regenerating from kubectl 1.32 gives the same rows as _tables.py (modulo formatting)."""
    text = _gen.generate(KUBECTL.read_bytes(), "the kubectl v1.32 binary (k8s.io/api v0.32)")
    fresh: dict[str, object] = {}
    committed: dict[str, object] = {}
    exec(compile(text, "fresh", "exec"), fresh)
    exec(compile(TABLES.read_text(), "committed", "exec"), committed)
    for name in ("MESSAGES", "SPECIAL", "KINDS"):
        assert fresh[name] == committed[name]
