"""The example WebApp operator against a real ``kplane serve``: create, spec change, drift, deletion."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from examples.webapp import operator
from kplane.client import dynamic, typed
from tests.e2e import conftest as e2e
from tests.e2e import runtime_support as rs
from tests.examples import webapp_scenario


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[e2e.Server]:
    srv = e2e.start_server(tmp_path_factory.mktemp("kplane"), storage="memory")
    yield srv
    srv.stop()


@contextlib.asynccontextmanager
async def dynamic_client(server: e2e.Server) -> AsyncIterator[dynamic.DynamicClient]:
    async with typed.Client(rs.config(server)) as c:
        yield c.dynamic


async def test_webapp_lifecycle(server: e2e.Server) -> None:
    """Create, spec change, drift of an owned Deployment repaired, deletion through the finalizer."""
    await webapp_scenario.lifecycle(rs.new_manager(server, field_manager=operator.FIELD_MANAGER))


async def test_deletion_with_finalizer_bumps_generation(server: e2e.Server) -> None:
    """Marking an object deleting bumps its generation, as upstream's markAsDeleting does."""
    async with dynamic_client(server) as dc:
        ns = f"g-{uuid.uuid4().hex[:6]}"
        await dc.resource(webapp_scenario.NAMESPACES).create({"metadata": {"name": ns}})
        deployments = dc.resource(webapp_scenario.DEPLOYMENTS, ns)
        dep = operator.desired_objects(
            {**webapp_scenario.webapp("held", ns), "metadata": {"name": "held", "namespace": ns, "uid": "u1"}}
        )[1]
        dep["metadata"]["finalizers"] = ["example.kplane.dev/hold"]
        del dep["metadata"]["ownerReferences"]
        created = await deployments.create(dep)
        assert created["metadata"]["generation"] == 1
        await deployments.delete("held")
        marked = await deployments.get("held")
        assert marked["metadata"]["deletionTimestamp"]
        assert marked["metadata"]["generation"] == 2
        await deployments.patch("held", {"metadata": {"finalizers": None}})
