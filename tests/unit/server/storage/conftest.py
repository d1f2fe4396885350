"""A real etcd for the storage tests: one member on loopback, started once per session."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from kplane.server.storage.testing import etcd_process

SKIP = "etcd is not installed (Debian: apt-get install etcd-server; .ci/run installs it)"


@pytest.fixture(scope="session")
def etcd_endpoints(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Client endpoints of a one-member etcd; the tests that use it skip where etcd is absent."""
    if not etcd_process.available():
        pytest.skip(SKIP)
    root: pathlib.Path = tmp_path_factory.mktemp("etcd")
    with etcd_process.EtcdCluster(1, root) as cluster:
        yield cluster.endpoints
