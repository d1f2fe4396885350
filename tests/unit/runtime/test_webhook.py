"""The webhook server over HTTPS: AdmissionReview and ConversionReview bodies as the API server sends them.

Expected responses follow controller-runtime (CR pkg/webhook/admission/http.go, response.go,
webhook.go ``Response.Complete``, defaulter_custom.go, validator_custom.go; pkg/webhook/conversion/
conversion.go): HTTP 200 with a review; ``status.code`` 200 when allowed; 403 Forbidden with the
error text on refusal; an APIStatus error keeps its Status; JSONPatch base64 with patchType JSONPatch.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import aiohttp
import msgspec
import orjson
import pytest

from kplane import runtime, testing
from kplane.api import errors
from kplane.api.patch import jsondiff, jsonpatch
from kplane.client import typed
from kplane.client.models import meta_v1
from kplane.runtime import markers
from kplane.runtime.webhook import (
    DefaultingHandler,
    Denied,
    ValidatingHandler,
    WebhookBuilder,
    WebhookServer,
    WebhookServerOptions,
    hub,
    mutate_path,
    validate_path,
)

GROUP = "hooks.kplane.dev"


class GizmoSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    size: int | None = None
    color: str | None = None
    tags: list[str] | None = None


@markers.kind(group=GROUP, version="v2", storage=True)
@hub
class Gizmo(msgspec.Struct, kw_only=True, omit_defaults=True):
    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None
    spec: GizmoSpec | None = None


class GizmoV1Spec(msgspec.Struct, kw_only=True, omit_defaults=True):
    dimension: int | None = None  # v1 calls size "dimension"
    colour: str | None = None


@markers.kind(group=GROUP, version="v1", kind="Gizmo")
class GizmoV1(msgspec.Struct, kw_only=True, omit_defaults=True):
    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None
    spec: GizmoV1Spec | None = None

    def convert_to(self) -> Gizmo:
        spec = self.spec or GizmoV1Spec()
        return Gizmo(metadata=self.metadata, spec=GizmoSpec(size=spec.dimension, color=spec.colour))

    @classmethod
    def convert_from(cls, hub: Gizmo) -> GizmoV1:
        spec = hub.spec or GizmoSpec()
        return cls(metadata=hub.metadata, spec=GizmoV1Spec(dimension=spec.size, colour=spec.color))


class GizmoV3Spec(msgspec.Struct, kw_only=True, omit_defaults=True):
    size_mm: Annotated[int, markers.Minimum(0)] | None = msgspec.field(default=None, name="sizeMM")


@markers.kind(group=GROUP, version="v3", kind="Gizmo")
class GizmoV3(msgspec.Struct, kw_only=True, omit_defaults=True):
    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None
    spec: GizmoV3Spec | None = None

    def convert_to(self) -> Gizmo:
        mm = (self.spec or GizmoV3Spec()).size_mm
        return Gizmo(metadata=self.metadata, spec=GizmoSpec(size=None if mm is None else mm // 10))

    @classmethod
    def convert_from(cls, hub: Gizmo) -> GizmoV3:
        size = (hub.spec or GizmoSpec()).size
        return cls(metadata=hub.metadata, spec=GizmoV3Spec(size_mm=None if size is None else size * 10))


class GizmoDefaulter:
    def default(self, obj: Gizmo) -> None:
        spec = obj.spec = obj.spec or GizmoSpec()
        if spec.size is None:
            spec.size = 3
        if spec.color is None:
            spec.color = "red"


IMMUTABLE = {
    "reason": "FieldValueInvalid",
    "message": "Invalid value: field is immutable",
    "field": "spec.color",
}


class GizmoValidator:
    async def validate_create(self, obj: Gizmo) -> list[str] | None:
        size = (obj.spec or GizmoSpec()).size or 0
        if size > 100:
            raise ValueError(f"spec.size: {size} is larger than 100")
        return ["spec.color is not set"] if not (obj.spec and obj.spec.color) else None

    async def validate_update(self, old: Gizmo, new: Gizmo) -> list[str] | None:
        if (old.spec and old.spec.color) != (new.spec and new.spec.color):
            raise errors.Invalid(
                f'Gizmo.{GROUP} "{(new.metadata or meta_v1.ObjectMeta()).name}" is invalid: spec.color: '
                "Invalid value: field is immutable",
                details={"name": "g", "group": GROUP, "kind": "Gizmo", "causes": [IMMUTABLE]},
            )
        return ["updated"]

    def validate_delete(self, obj: Gizmo) -> list[str] | None:
        if obj.metadata and obj.metadata.labels and obj.metadata.labels.get("protected") == "true":
            raise Denied("protected gizmos cannot be deleted", warnings=["remove the protected label first"])
        return None


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[WebhookServer]:
    opts = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=tmp_path, self_signed=True)
    srv = WebhookServer(opts)
    srv.register(mutate_path(GROUP, "v2", "Gizmo"), DefaultingHandler(Gizmo, GizmoDefaulter()))
    srv.register(validate_path(GROUP, "v2", "Gizmo"), ValidatingHandler(Gizmo, GizmoValidator()))
    srv.converter().register(Gizmo)
    srv.converter().register(GizmoV1)
    srv.converter().register(GizmoV3)
    await srv.listen()
    try:
        yield srv
    finally:
        await srv.close()


async def post(
    srv: WebhookServer, path: str, body: Any, content_type: str = "application/json"
) -> tuple[int, Any]:
    ctx = ssl.create_default_context(cafile=str(srv.options.cert_file))
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    async with (
        aiohttp.ClientSession() as session,
        session.post(srv.url + path, data=data, headers={"Content-Type": content_type}, ssl=ctx) as resp,
    ):
        raw = await resp.read()
        return resp.status, orjson.loads(raw) if raw.strip().startswith(b"{") else raw


def review(operation: str, obj: Any = None, old: Any = None, version: str = "v1") -> dict[str, Any]:
    request: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": GROUP, "version": "v2", "kind": "Gizmo"},
        "resource": {"group": GROUP, "version": "v2", "resource": "gizmos"},
        "requestKind": {"group": GROUP, "version": "v2", "kind": "Gizmo"},
        "requestResource": {"group": GROUP, "version": "v2", "resource": "gizmos"},
        "name": "g",
        "namespace": "default",
        "operation": operation,
        "userInfo": {"username": "admin", "groups": ["system:masters", "system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return {"apiVersion": f"admission.k8s.io/{version}", "kind": "AdmissionReview", "request": request}


def gizmo(spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v2",
        "kind": "Gizmo",
        "metadata": {"name": "g", "namespace": "default", **meta},
    }
    if spec is not None:
        obj["spec"] = spec
    return obj


UID = "705ab4f5-6393-11e8-b7cc-42010a800002"
OK = {"metadata": {}, "code": 200}


async def test_defaulting_answers_a_json_patch(server: WebhookServer) -> None:
    obj = gizmo({"size": 5, "unknownField": "kept"}, labels={"a": "b"})
    code, body = await post(server, "/mutate-hooks-kplane-dev-v2-gizmo", review("CREATE", obj))
    assert code == 200
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    resp = body["response"]
    assert resp["uid"] == UID and resp["allowed"] is True
    assert resp["patchType"] == "JSONPatch" and resp["status"] == OK
    patch = orjson.loads(base64.b64decode(resp["patch"]))
    # Only the defaulter's change: the field the type does not know is not removed (upstream's default).
    assert patch == [{"op": "add", "path": "/spec/color", "value": "red"}]
    assert jsonpatch.json_patch(obj, patch)["spec"] == {"size": 5, "unknownField": "kept", "color": "red"}


async def test_defaulting_without_change_and_on_delete(server: WebhookServer) -> None:
    path = "/mutate-hooks-kplane-dev-v2-gizmo"
    _, body = await post(server, path, review("UPDATE", gizmo({"size": 1, "color": "blue"}), gizmo()))
    assert body["response"] == {"uid": UID, "allowed": True, "status": OK}
    _, body = await post(server, path, review("DELETE", None, gizmo()))
    assert body["response"] == {"uid": UID, "allowed": True, "status": OK}
    _, body = await post(server, path, review("CREATE", gizmo()))
    patch = orjson.loads(base64.b64decode(body["response"]["patch"]))
    assert patch == [{"op": "add", "path": "/spec", "value": {"size": 3, "color": "red"}}]


async def test_validation_refusal_and_warnings(server: WebhookServer) -> None:
    path = "/validate-hooks-kplane-dev-v2-gizmo"
    _, body = await post(server, path, review("CREATE", gizmo({"size": 101})))
    # Upstream Denied(err.Error()): allowed false, code 403, reason Forbidden, the error's text.
    assert body["response"] == {
        "uid": UID,
        "allowed": False,
        "status": {
            "metadata": {},
            "code": 403,
            "reason": "Forbidden",
            "message": "spec.size: 101 is larger than 100",
        },
    }
    _, body = await post(server, path, review("CREATE", gizmo({"size": 1})))
    assert body["response"] == {
        "uid": UID,
        "allowed": True,
        "status": OK,
        "warnings": ["spec.color is not set"],
    }
    _, body = await post(server, path, review("UPDATE", gizmo({"color": "a"}), gizmo({"color": "a"})))
    assert body["response"]["allowed"] is True and body["response"]["warnings"] == ["updated"]
    _, body = await post(server, path, review("CONNECT"))
    assert body["response"]["allowed"] is True


async def test_api_status_error_keeps_its_status(server: WebhookServer) -> None:
    _, body = await post(
        server,
        "/validate-hooks-kplane-dev-v2-gizmo",
        review("UPDATE", gizmo({"color": "b"}), gizmo({"color": "a"})),
    )
    status = body["response"]["status"]
    assert body["response"]["allowed"] is False
    assert status["code"] == 422 and status["reason"] == "Invalid" and status["status"] == "Failure"
    assert status["details"]["causes"] == [IMMUTABLE]
    assert "kind" not in status and "apiVersion" not in status


async def test_delete_validates_the_old_object(server: WebhookServer) -> None:
    _, body = await post(
        server,
        "/validate-hooks-kplane-dev-v2-gizmo",
        review("DELETE", None, gizmo(labels={"protected": "true"})),
    )
    assert body["response"] == {
        "uid": UID,
        "allowed": False,
        "status": {
            "metadata": {},
            "code": 403,
            "reason": "Forbidden",
            "message": "protected gizmos cannot be deleted",
        },
        "warnings": ["remove the protected label first"],
    }


async def test_v1beta1_review_answered_in_kind(server: WebhookServer) -> None:
    _, body = await post(
        server, "/validate-hooks-kplane-dev-v2-gizmo", review("CREATE", gizmo({}), version="v1beta1")
    )
    assert body["apiVersion"] == "admission.k8s.io/v1beta1" and body["response"]["allowed"] is True


async def test_bad_requests_get_errored_reviews(server: WebhookServer) -> None:
    path = "/validate-hooks-kplane-dev-v2-gizmo"
    # Upstream http.go: errored responses without apiVersion/kind and with an empty uid.
    code, body = await post(server, path, b"")
    assert code == 200
    assert body == {
        "response": {
            "uid": "",
            "allowed": False,
            "status": {"metadata": {}, "code": 400, "message": "request body is empty"},
        }
    }
    _, body = await post(server, path, review("CREATE", gizmo()), content_type="text/plain")
    assert body["response"]["status"]["message"] == "contentType=text/plain, expected application/json"
    _, body = await post(server, path, b"x" * (7 * 1024 * 1024 + 1))
    assert body["response"]["status"] == {
        "metadata": {},
        "code": 413,
        "message": "request entity is too large; limit is 7340032 bytes",
    }
    _, body = await post(server, path, b"{not json")
    assert body["response"]["status"]["code"] == 400
    _, body = await post(server, path, {"apiVersion": "v1", "kind": "Pod"})
    assert body["response"]["status"]["code"] == 400
    _, body = await post(server, path, review("CREATE", {"spec": {"size": "big"}}))
    assert body["response"]["allowed"] is False and body["response"]["status"]["code"] == 400
    code, _ = await post(server, "/nowhere", review("CREATE", gizmo()))
    assert code == 404


@hub
@markers.kind(group=GROUP, version="v1", kind="Sprocket")
class Sprocket(msgspec.Struct, kw_only=True):
    metadata: meta_v1.ObjectMeta | None = None


@markers.kind(group=GROUP, version="v2", kind="Sprocket")
class SprocketV2(msgspec.Struct, kw_only=True):
    metadata: meta_v1.ObjectMeta | None = None

    def convert_to(self) -> Sprocket:
        raise RuntimeError("a bug in the converter")

    @classmethod
    def convert_from(cls, hub: Sprocket) -> SprocketV2:
        raise RuntimeError("a bug in the converter")


async def test_a_failing_handler_answers_500(tmp_path: Path) -> None:
    """A handler or converter that raises is answered as upstream recovers a panic, and counted in
    controller_runtime_webhook_panics_total / controller_runtime_conversion_webhook_panics_total
    (controller-runtime pkg/webhook/admission/metrics, pkg/webhook/conversion/metrics)."""

    class Broken:
        def default(self, obj: Any) -> None:
            raise RuntimeError("boom")

    async def explode(request: Any) -> Any:
        raise RuntimeError("boom")

    metrics = runtime.Metrics()
    options = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=tmp_path, self_signed=True)
    srv = WebhookServer(options, metrics=metrics)
    srv.register("/explode", explode)
    srv.register("/broken", DefaultingHandler(dict, Broken()))
    srv.converter().register(Sprocket)
    srv.converter().register(SprocketV2)
    await srv.listen()
    try:
        text = metrics.exposition().decode()
        assert "controller_runtime_webhook_panics_total 0.0" in text
        assert "controller_runtime_conversion_webhook_panics_total 0.0" in text
        _, body = await post(srv, "/explode", review("CREATE", gizmo()))
        assert body["response"] == {
            "uid": UID,
            "allowed": False,
            "status": {"metadata": {}, "code": 500, "message": "panic: boom [recovered]"},
        }
        _, body = await post(srv, "/broken", review("CREATE", gizmo()))
        assert body["response"]["status"] == {
            "metadata": {},
            "code": 403,
            "reason": "Forbidden",
            "message": "boom",
        }
        sprocket = {"apiVersion": f"{GROUP}/v2", "kind": "Sprocket", "metadata": {"name": "s"}}
        _, body = await post(srv, "/convert", conversion_review(f"{GROUP}/v1", sprocket))
        assert body["response"]["result"]["message"] == "internal error occurred during conversion"
        text = metrics.exposition().decode()
        assert "controller_runtime_webhook_panics_total 1.0" in text  # /explode; /broken is a denial
        assert "controller_runtime_conversion_webhook_panics_total 1.0" in text
    finally:
        await srv.close()


def conversion_review(desired: str, *objects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "c0ffee", "desiredAPIVersion": desired, "objects": list(objects)},
    }


async def test_conversion_hub_and_spokes(server: WebhookServer) -> None:
    meta = {"name": "g", "namespace": "default", "resourceVersion": "7"}
    v1 = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gizmo",
        "metadata": meta,
        "spec": {"dimension": 4, "colour": "red"},
    }
    code, body = await post(server, "/convert", conversion_review(f"{GROUP}/v2", v1))
    assert code == 200
    assert body == {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {
            "uid": "c0ffee",
            "convertedObjects": [
                {
                    "apiVersion": f"{GROUP}/v2",
                    "kind": "Gizmo",
                    "metadata": meta,
                    "spec": {"size": 4, "color": "red"},
                }
            ],
            "result": {"metadata": {}, "status": "Success"},
        },
    }
    # Spoke to spoke goes through the hub.
    _, body = await post(server, "/convert", conversion_review(f"{GROUP}/v3", v1))
    assert body["response"]["convertedObjects"][0]["spec"] == {"sizeMM": 40}
    _, body = await post(server, "/convert", conversion_review(f"{GROUP}/v1", {**v1}))
    assert body["response"]["result"] == {
        "metadata": {},
        "status": "Failure",
        "message": "conversion is not allowed between same type GizmoV1",
    }
    assert "convertedObjects" not in body["response"]
    code, _raw = await post(server, "/convert", {"kind": "ConversionReview"})
    assert code == 400


async def test_certificate_is_reloaded(server: WebhookServer, tmp_path: Path) -> None:
    first = server.options.cert_file.read_bytes()
    server.options.cert_file.unlink()
    server.options.key_file.unlink()
    from kplane.runtime.webhook import certs

    certs.ensure_self_signed(server.options.cert_file, server.options.key_file, ["127.0.0.1"])
    assert server.options.cert_file.read_bytes() != first
    server._reload_if_changed()
    code, _ = await post(server, "/validate-hooks-kplane-dev-v2-gizmo", review("CREATE", gizmo()))
    assert code == 200  # verified against the new certificate only


async def test_missing_certificate_fails_start(tmp_path: Path) -> None:
    srv = WebhookServer(WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=tmp_path / "none"))
    with pytest.raises(FileNotFoundError):
        await srv.start()
    with pytest.raises(FileNotFoundError):
        await srv.wait_ready()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"a": 1}, {"a": 1}),
        ({"a": 1, "b": [1, 2, 3]}, {"a": 2, "b": [1, 5]}),
        ({"x/y": {"~": 1}}, {"x/y": {"~": 2, "n": None}}),
        ([1, {"a": [True]}], [1, {"a": [1]}, "new", "more"]),
        ({"a": 1.0}, {"a": 1}),
        ({}, {"deep": {"er": [{"k": "v"}]}}),
    ],
)
def test_json_diff_round_trips(a: Any, b: Any) -> None:
    patch = jsondiff.create_patch(a, b)
    assert jsonpatch.json_patch(a, patch) == b
    if a == b and type(a) is type(b):
        assert patch == []


async def test_manager_serves_webhooks_before_caches_and_stops_on_a_bad_certificate(
    kplane: testing.ControlPlane, tmp_path: Path
) -> None:
    """Through a Manager: the webhook server listens before the caches start (a ConversionReview is
    answered while ``start`` runs), and a missing certificate fails ``start`` at once."""
    assert kplane.config is not None
    good = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=tmp_path, self_signed=True)
    manager = runtime.Manager(
        options=runtime.ManagerOptions(metrics_bind_address="0", webhook=good),
        api=typed.Client(kplane.config),
    )
    WebhookBuilder(manager, Gizmo).with_defaulter(GizmoDefaulter()).with_conversion(GizmoV1).complete()
    server = manager.webhook_server()
    assert server.paths == ["/convert", "/mutate-hooks-kplane-dev-v2-gizmo"]
    task = asyncio.create_task(manager.start())
    try:
        await server.wait_ready()
        v1 = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Gizmo",
            "metadata": {"name": "g"},
            "spec": {"dimension": 2},
        }
        _, body = await post(server, "/convert", conversion_review(f"{GROUP}/v2", v1))
        assert body["response"]["convertedObjects"][0]["spec"] == {"size": 2}
        await testing.eventually(manager.is_leader, timeout=10)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await manager.api.close()

    missing = WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=tmp_path / "absent")
    broken = runtime.Manager(
        options=runtime.ManagerOptions(metrics_bind_address="0", webhook=missing),
        api=typed.Client(kplane.config),
    )
    WebhookBuilder(broken, Gizmo).with_defaulter(GizmoDefaulter()).complete()
    try:
        with pytest.raises(FileNotFoundError):
            await asyncio.wait_for(broken.start(), timeout=10)
        assert not broken.is_leader()
    finally:
        await broken.api.close()


def test_default_listens_on_loopback_only() -> None:
    """Unlike controller-runtime, the webhook server binds loopback unless every interface is asked for."""
    assert WebhookServerOptions().host == "127.0.0.1"
    assert WebhookServerOptions().port == 9443
