"""A real ``kplane serve`` on loopback for informer, watch, leader-election and event tests.

``live_server`` starts one (``tests/e2e/conftest.start_server``) with any extra flags;
``clients`` opens a ``DynamicClient`` on its admin kubeconfig with client-side rate limiting off,
so tests can write thousands of objects quickly.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from kplane.client import config as config_mod
from kplane.client import dynamic, rest
from tests.e2e import conftest as e2e

CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
LEASES = dynamic.Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
EVENTS = dynamic.Resource("", "v1", "events", "Event", namespaced=True)
NAMESPACES = dynamic.Resource("", "v1", "namespaces", "Namespace", namespaced=False)


@contextlib.contextmanager
def live_server(data_dir: Path, *extra: str) -> Iterator[e2e.Server]:
    """A running server (in-memory storage, for speed) that is stopped on exit."""
    srv = e2e.start_server(data_dir, *extra, storage="memory")
    try:
        yield srv
    finally:
        srv.stop()


def client_config(srv: e2e.Server) -> config_mod.Config:
    """The server's admin config without client-side rate limiting."""
    return dataclasses.replace(config_mod.Config.from_kubeconfig(srv.kubeconfig), qps=0.0)


@contextlib.asynccontextmanager
async def clients(srv: e2e.Server) -> AsyncIterator[dynamic.DynamicClient]:
    """A ``DynamicClient`` on ``srv``; its connections are closed on exit."""
    async with rest.RESTClient(client_config(srv)) as rc:
        yield dynamic.DynamicClient(rc)


async def make_namespace(dc: dynamic.DynamicClient, name: str) -> None:
    """Create namespace ``name``."""
    await dc.resource(NAMESPACES).create({"metadata": {"name": name}})


def module_server(tmp_path_factory: Any, *extra: str) -> Iterator[e2e.Server]:
    """Body of a module-scoped server fixture: ``yield from _live.module_server(factory)``."""
    with live_server(tmp_path_factory.mktemp("kplane"), *extra) as srv:
        yield srv
