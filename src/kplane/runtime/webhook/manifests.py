"""Webhook configurations from a project's webhook registrations, as controller-gen writes them.

controller-gen reads ``+kubebuilder:webhook`` markers; here the registrations themselves are the
declarations, so the manifest cannot disagree with what the server serves: ``collect(setups)``
calls each ``setup(manager)`` function (the one ``kplane create webhook`` writes) with a
``RecordingManager``, whose webhook server records every admission handler a ``WebhookBuilder``
registers instead of serving it. A setup that asks the manager for anything else is refused.

``configurations(hooks, service)`` is then controller-gen's ``config/webhook/manifests.yaml``: a
``MutatingWebhookConfiguration`` named ``mutating-webhook-configuration`` with one webhook per
defaulter and a ``ValidatingWebhookConfiguration`` named ``validating-webhook-configuration`` with
one per validator (both names after ``name_prefix``, which kustomize's ``namePrefix`` adds in a
kubebuilder project) (each omitted when empty), in path order, with kubebuilder's scaffold defaults:
name ``m|v<kind lowercased>-<version>.kb.io``, operations CREATE and UPDATE, failurePolicy Fail,
sideEffects None, admissionReviewVersions v1, the service's namespace/name and the handler's path.
The ``caBundle`` is left to whoever issues the serving certificate (cert-manager's CA injector
in a kubebuilder project). Conversion handlers are not admission webhooks: the CRD carries them
(``kplane generate crds --conversion-service``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from kplane.client import dynamic, typed
from kplane.runtime import markers
from kplane.runtime.webhook import admission


class WebhookManifestError(Exception):
    """A registration that cannot be written as a webhook configuration."""


@dataclasses.dataclass(frozen=True, order=True)
class Hook:
    """One admission webhook: where it is served and which resource it admits."""

    path: str
    mutating: bool
    group: str
    version: str
    kind: str
    plural: str


@dataclasses.dataclass(frozen=True)
class Service:
    """The Service in front of the manager's webhook server."""

    namespace: str
    name: str
    port: int = 443


class _RecordingServer:
    def __init__(self) -> None:
        self.hooks: list[Hook] = []

    def register(self, path: str, route: Any) -> None:
        if isinstance(route, admission.DefaultingHandler):
            self.hooks.append(_hook(path, True, route.codec.type))
        elif isinstance(route, admission.ValidatingHandler):
            self.hooks.append(_hook(path, False, route.codec.type))

    def converter(self) -> _NoConverter:
        return _NoConverter()


class _NoConverter:
    def register(self, cls: type[Any]) -> None:
        """Conversions are the CRD's (``spec.conversion``), not a webhook configuration's."""


class RecordingManager:
    """Stands in for a ``Manager`` in a ``setup`` function: only ``webhook_server()`` exists."""

    def __init__(self) -> None:
        self._server = _RecordingServer()

    def webhook_server(self) -> _RecordingServer:
        return self._server

    @property
    def hooks(self) -> list[Hook]:
        return self._server.hooks

    def __getattr__(self, name: str) -> Any:
        raise WebhookManifestError(
            f"a webhook setup function used manager.{name}: generating manifests runs setup functions "
            "that only register webhooks (WebhookBuilder(manager, T)...complete())"
        )


def collect(setups: Iterable[Callable[[Any], Any]]) -> list[Hook]:
    """The admission webhooks the ``setups`` register, in path order (see the module docstring)."""
    manager = RecordingManager()
    for setup in setups:
        result = setup(manager)
        if inspect.isawaitable(result):
            asyncio.run(_wait(result))
    return sorted(manager.hooks)


async def _wait(result: Any) -> None:
    await result


def _hook(path: str, mutating: bool, type_: Any) -> Hook:
    info = markers.kind_info(type_) if isinstance(type_, type) else None
    if info is not None:
        return Hook(path, mutating, info.group, info.version, info.kind, info.plural)
    if typed.is_model_class(type_):
        resource = typed.resource_of(type_)
        if isinstance(resource, dynamic.Resource):
            return Hook(path, mutating, resource.group, resource.version, resource.kind, resource.plural)
    raise WebhookManifestError(
        f"webhook {path}: {type_!r} names no resource (use a markers.kind type or a kplane model)"
    )


def configurations(hooks: Iterable[Hook], service: Service, *, name_prefix: str = "") -> list[dict[str, Any]]:
    """The Mutating and Validating WebhookConfigurations of ``hooks`` (module docstring)."""
    docs = []
    for mutating, kind, name in (
        (True, "MutatingWebhookConfiguration", "mutating-webhook-configuration"),
        (False, "ValidatingWebhookConfiguration", "validating-webhook-configuration"),
    ):
        webhooks = [_webhook(h, service) for h in sorted(hooks) if h.mutating is mutating]
        if webhooks:
            docs.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": kind,
                    "metadata": {"name": name_prefix + name},
                    "webhooks": webhooks,
                }
            )
    return docs


def _webhook(hook: Hook, service: Service) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": service.name, "namespace": service.namespace, "path": hook.path}
    if service.port != 443:
        ref["port"] = service.port
    prefix = "m" if hook.mutating else "v"
    return {
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": ref},
        "failurePolicy": "Fail",
        "name": f"{prefix}{hook.kind.lower()}-{hook.version}.kb.io",
        "rules": [
            {
                "apiGroups": [hook.group],
                "apiVersions": [hook.version],
                "operations": ["CREATE", "UPDATE"],
                "resources": [hook.plural],
            }
        ],
        "sideEffects": "None",
    }
