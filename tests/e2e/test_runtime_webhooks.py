"""kplane.runtime's own webhook server called by ``kplane serve``: the WebApp example's validator,
registered with a ValidatingWebhookConfiguration whose ``caBundle`` is the runtime's self-signed
certificate. A refusal reaches the client as upstream wraps it (webhook/errors/statuserror.go
``ToStatusErr``: the validator's 422 Status, its message prefixed)."""

from __future__ import annotations

import asyncio
import base64
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples.webapp import crd
from examples.webapp import webhook as webapp_webhook
from kplane.api import errors
from kplane.client import dynamic
from kplane.runtime.webhook.server import WebhookServerOptions
from tests.e2e import conftest as e2e
from tests.e2e import runtime_support as rs
from tests.examples import webapp_scenario

VWC = dynamic.Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[e2e.Server]:
    srv = e2e.start_server(tmp_path_factory.mktemp("kplane"), storage="memory")
    yield srv
    srv.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_servers_calls_reach_the_runtimes_validator(server: e2e.Server, tmp_path: Path) -> None:
    """A WebApp with an unpinned image is refused by the operator's webhook; a pinned one is created."""
    port = _free_port()
    options = WebhookServerOptions(host="127.0.0.1", port=port, cert_dir=tmp_path, self_signed=True)
    manager = rs.new_manager(server, webhook=options)
    (path,) = webapp_webhook.setup(manager)
    dc = manager.api.dynamic
    await crd.install(dc)
    running = asyncio.create_task(manager.start())
    try:
        for _ in range(100):
            if options.cert_file.exists():
                break
            await asyncio.sleep(0.05)
        ca = base64.b64encode(options.cert_file.read_bytes()).decode()
        ns = f"rw-{uuid.uuid4().hex[:6]}"
        await dc.resource(webapp_scenario.NAMESPACES).create({"metadata": {"name": ns}})
        await dc.resource(VWC).create(
            {
                "metadata": {"name": "webapp-validation"},
                "webhooks": [
                    {
                        "name": "vwebapp.example.kplane.dev",
                        "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca},
                        "rules": [
                            {
                                "operations": ["CREATE", "UPDATE"],
                                "apiGroups": [crd.GROUP],
                                "apiVersions": [crd.VERSION],
                                "resources": [crd.PLURAL],
                            }
                        ],
                        "sideEffects": "None",
                        "admissionReviewVersions": ["v1"],
                    }
                ],
            }
        )
        webapps = dc.resource(crd.WEBAPPS, ns)
        with pytest.raises(errors.APIError) as refused:
            await webapps.create(webapp_scenario.webapp("bad", ns, image="nginx:latest"))
        assert refused.value.code == 422
        assert refused.value.message == (
            'admission webhook "vwebapp.example.kplane.dev" denied the request: '
            'WebApp.example.kplane.dev "bad" is invalid: '
            'spec.image: Invalid value: "nginx:latest": the tag "latest" does not pin a version'
        )
        created = await webapps.create(webapp_scenario.webapp("good", ns, replicas=3))
        assert created["metadata"]["name"] == "good"
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await manager.api.close()
