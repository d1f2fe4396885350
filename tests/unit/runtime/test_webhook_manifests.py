"""Webhook configurations from the registrations of ``setup`` functions, in controller-gen's shape
(kubebuilder's testdata/project-v4/config/webhook/manifests.yaml: names ``m|v<kind>-<version>.kb.io``,
CREATE and UPDATE, failurePolicy Fail, sideEffects None, admissionReviewVersions v1)."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.client.models import core_v1
from kplane.runtime import webhook
from kplane.runtime.webhook import manifests
from tests.unit.runtime.crdtypes.widgets import Widget, WidgetV1beta1


class Defaults:
    def default(self, obj: Any) -> None:
        return None


class Checks:
    def validate_create(self, obj: Any) -> None:
        return None

    def validate_update(self, old: Any, new: Any) -> None:
        return None

    def validate_delete(self, obj: Any) -> None:
        return None


def widget_setup(manager: Any) -> list[str]:
    builder = webhook.WebhookBuilder(manager, Widget)
    return (
        builder.with_defaulter(Defaults()).with_validator(Checks()).with_conversion(WidgetV1beta1).complete()
    )


async def pod_setup(manager: Any) -> list[str]:  # async setups are awaited
    return webhook.WebhookBuilder(manager, core_v1.Pod).with_defaulter(Defaults()).complete()


def _webhook(name: str, path: str, group: str, resource: str) -> dict[str, Any]:
    return {
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
        "failurePolicy": "Fail",
        "name": name,
        "rules": [
            {
                "apiGroups": [group],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": [resource],
            }
        ],
        "sideEffects": "None",
    }


def test_configurations_from_registrations() -> None:
    """Each defaulter is a mutating webhook and each validator a validating one, on the served path."""
    hooks = manifests.collect([widget_setup, pod_setup])
    docs = manifests.configurations(hooks, manifests.Service("system", "webhook-service"))
    group = Widget.gvk.group
    assert docs == [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [
                _webhook("mpod-v1.kb.io", "/mutate--v1-pod", "", "pods"),
                _webhook(
                    "mwidget-v1.kb.io", f"/mutate-{group.replace('.', '-')}-v1-widget", group, "widgets"
                ),
            ],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validating-webhook-configuration"},
            "webhooks": [
                _webhook(
                    "vwidget-v1.kb.io", f"/validate-{group.replace('.', '-')}-v1-widget", group, "widgets"
                )
            ],
        },
    ]
    prefixed = manifests.configurations(hooks[:1], manifests.Service("ops", "hooks", 8443), name_prefix="x-")
    assert [d["metadata"]["name"] for d in prefixed] == ["x-mutating-webhook-configuration"]
    assert prefixed[0]["webhooks"][0]["clientConfig"]["service"] == {
        "name": "hooks", "namespace": "ops", "path": "/mutate--v1-pod", "port": 8443,
    }  # fmt: skip


def test_a_setup_doing_more_than_webhooks_is_refused() -> None:
    """Generation runs setup functions with a manager that has only a webhook server."""

    def controller_setup(manager: Any) -> None:
        manager.client.get("x")

    with pytest.raises(manifests.WebhookManifestError, match=r"used manager\.client"):
        manifests.collect([controller_setup])
