"""The webhook plugins without a network: configuration source, dry-run refusal, denial texts."""

from __future__ import annotations

import asyncio

import pytest

from kplane._util.clock import FakeClock
from kplane.api import errors
from kplane.api.builtin.records import builtin_catalog
from kplane.server.admission import plugin, validatingwebhook, webhookconfigs, webhookdispatch
from kplane.server.registry import admitting
from kplane.server.storage.memory import MemoryStorage
from kplane.server.webhooks import client as webhookclient
from kplane.server.webhooks import resolving


def _ctx() -> plugin.Context:
    return plugin.Context(MemoryStorage(), builtin_catalog(), FakeClock())


def _config(side_effects: str) -> dict[str, object]:
    return {
        "metadata": {"name": "cfg", "uid": "u1"},
        "webhooks": [
            {
                "name": "hook.example.com",
                "clientConfig": {"url": "https://127.0.0.1:1/x"},
                "rules": [
                    {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
                ],
                "sideEffects": side_effects,
                "admissionReviewVersions": ["v1"],
            }
        ],
    }


def _attrs(ctx: plugin.Context, *, dry_run: bool) -> admitting.Attributes:
    record = ctx.record("", "v1", "configmaps")
    obj = {"metadata": {"name": "c", "namespace": "default"}}
    return admitting.Attributes("CREATE", record, "default", "c", obj, dry_run=dry_run)


def test_dry_run_with_side_effects_is_refused_before_any_call() -> None:
    """A stored webhook with sideEffects Some refuses a dry run with upstream's 400
    (webhook/errors/statuserror.go NewDryRunUnsupportedErr), without calling it."""
    ctx = _ctx()
    (hook,) = webhookconfigs.compile_configuration(_config("Some"), mutating=False)
    dispatch = webhookdispatch.Dispatcher(ctx, ctx.webhooks(), mutating=False)
    attrs = _attrs(ctx, dry_run=True)

    async def run() -> None:
        inv = await dispatch.should_call(hook, attrs)
        assert inv is not None
        await dispatch.call(inv, attrs)

    with pytest.raises(errors.BadRequest) as caught:
        asyncio.run(run())
    assert caught.value.message == 'admission webhook "hook.example.com" does not support dry run'


@pytest.mark.parametrize(
    ("result", "code", "message"),
    [
        (None, 400, 'admission webhook "w" denied the request without explanation'),
        ({"code": 200, "message": "m"}, 400, 'admission webhook "w" denied the request: m'),
        ({"code": 409, "reason": "Conflict"}, 409, 'admission webhook "w" denied the request: Conflict'),
    ],
)
def test_denial_texts(result: dict[str, object] | None, code: int, message: str) -> None:
    """ToStatusErr: code at least 400, message from status.message, else reason, else none."""
    err = webhookdispatch.denial("w", result)
    assert (err.code, err.message) == (code, message)


def test_no_configuration_makes_the_source_empty() -> None:
    """With no configuration stored, the plugin's whole cost is one attribute read after the first load."""
    ctx = _ctx()
    plug = validatingwebhook.ValidatingWebhook(ctx, ctx.webhooks())
    asyncio.run(plug.validate(_attrs(ctx, dry_run=False)))
    assert plug._source.empty


def test_endpoint_resolver_follows_the_service_port_name() -> None:
    """The Service port with the webhook's number names the Endpoints port to dial."""
    objects = {
        "/registry/core/services/ns/s": {"spec": {"ports": [{"name": "web", "port": 443}]}},
        "/registry/core/endpoints/ns/s": {
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "web", "port": 9443}]}]
        },
    }
    resolve = resolving.EndpointResolver(objects.get)
    assert resolve("ns", "s", 443) == ("127.0.0.1", 9443)
    with pytest.raises(resolving.ResolveError, match='no service port 80 found for service "s"'):
        resolve("ns", "s", 80)
    with pytest.raises(resolving.ResolveError, match='service "t" not found'):
        resolve("ns", "t", 443)


def test_target_url_is_shown_with_the_timeout() -> None:
    """Failure messages show the URL as client-go sends it."""
    svc = webhookclient.Target.parse({"service": {"namespace": "n", "name": "s", "port": 8443}})
    assert svc.shown_url(10) == "https://s.n.svc:8443/?timeout=10s"
    assert webhookclient.Target.parse({"url": "https://h/p"}).shown_url(3) == "https://h/p?timeout=3s"
