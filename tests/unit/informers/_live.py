"""A real kplane server (``kplane.testing``) for informer, watch, leader-election and event tests.

``module_server`` runs one in a background thread (a module-scoped server outlives each test's
event loop; a test of its own uses ``ControlPlane`` in its loop); ``clients`` opens a
``DynamicClient`` on its admin config (no client-side rate limit), so tests can write thousands of
objects quickly.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

from kplane.client import dynamic, rest
from kplane.testing import ControlPlane, ThreadedControlPlane

CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
LEASES = dynamic.Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
EVENTS = dynamic.Resource("", "v1", "events", "Event", namespaced=True)
NAMESPACES = dynamic.Resource("", "v1", "namespaces", "Namespace", namespaced=False)

Server = ThreadedControlPlane


@contextlib.asynccontextmanager
async def clients(srv: Server | ControlPlane) -> AsyncIterator[dynamic.DynamicClient]:
    """A ``DynamicClient`` on ``srv``; its connections are closed on exit."""
    async with rest.RESTClient(srv.config) as rc:
        yield dynamic.DynamicClient(rc)


async def make_namespace(dc: dynamic.DynamicClient, name: str) -> None:
    """Create namespace ``name``."""
    await dc.resource(NAMESPACES).create({"metadata": {"name": name}})


def module_server(**options: Any) -> Iterator[Server]:
    """Body of a module-scoped server fixture: ``yield from _live.module_server()``.

    ``options`` are ``ControlPlane``'s (e.g. ``history_window``).
    """
    with ThreadedControlPlane(**options) as srv:
        yield srv
