"""The example WebApp operator against a real ``kplane serve``: create, spec change, drift, deletion."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
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


WEBAPP_YAML = """
apiVersion: example.kplane.dev/v1
kind: WebApp
metadata:
  name: shop
spec:
  image: nginx:1.27
  replicas: 2
"""


@e2e.requires_kubectl
@pytest.mark.kubectl
def test_operator_process_with_kubectl(server: e2e.Server) -> None:
    """``python -m examples.webapp`` serves kubectl users: apply, wait for Ready, delete; SIGTERM exits 0."""
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "examples.webapp"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ns = f"k-{uuid.uuid4().hex[:6]}"
        server.kubectl("create", "namespace", ns)
        deadline = time.monotonic() + 20
        while server.kubectl("get", "crd", "webapps.example.kplane.dev", check=False).returncode != 0:
            assert time.monotonic() < deadline, "the operator did not install its CRD"
            time.sleep(0.1)
        server.kubectl("apply", "-n", ns, "-f", "-", input=WEBAPP_YAML)
        server.kubectl("wait", "-n", ns, "--for=condition=Ready", "webapp/shop", "--timeout=20s")
        out = server.kubectl("get", "-n", ns, "deployment", "shop", "-o", "jsonpath={.spec.replicas}")
        assert out.stdout == "2"
        server.kubectl("delete", "-n", ns, "webapp", "shop", "--timeout=20s")
        selector = "app.kubernetes.io/name=shop"
        gone = server.kubectl("get", "-n", ns, "deployment,service,configmap", "-l", selector, "-o", "name")
        assert gone.stdout.strip() == ""
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, proc.stderr.read() if proc.stderr else code
