"""Texts of the files ``kplane create webhook`` writes (``string.Template``)."""

WEBHOOK_HEAD = '''"""Admission webhooks of $kind ($version), served by the manager's webhook server.

``setup`` registers them (``main.setup`` calls it) on controller-runtime's paths:
``$mutate_path`` and ``$validate_path``.
"""

from __future__ import annotations

from kplane import runtime
from kplane.api import errors
from kplane.runtime import webhook

from $package.api.$version import GROUP
from $package.api.$version.$module import $kind, ${kind}Spec
'''

DEFAULTER = '''

class ${kind}Defaulter:
    """Fills in what a $kind leaves out, before it is stored."""

    def default(self, obj: $kind) -> None:
        # TODO(user): set your defaults here.
        spec = obj.spec = obj.spec or ${kind}Spec()
        if spec.foo is None:
            spec.foo = "default"
'''

VALIDATOR = '''

class ${kind}Validator:
    """Refuses $kind objects the controller could not handle; returns warnings."""

    def _check(self, obj: $kind) -> list[str]:
        # TODO(user): your rules here; raise to refuse.
        spec = obj.spec or ${kind}Spec()
        if spec.foo == "":
            name = (obj.metadata.name or "") if obj.metadata else ""
            raise errors.invalid_object(
                "$kind", GROUP, name, [errors.invalid("spec.foo", spec.foo, "must not be empty")]
            )
        return []

    def validate_create(self, obj: $kind) -> list[str]:
        return self._check(obj)

    def validate_update(self, old: $kind, new: $kind) -> list[str]:
        return self._check(new)

    def validate_delete(self, obj: $kind) -> list[str]:
        return []
'''

SETUP = '''

def setup(manager: runtime.Manager) -> list[str]:
    """Serve this kind's webhooks on ``manager``'s webhook server; returns their paths."""
    $body
'''

TEST_HEAD = '''"""The $kind webhooks: admission requests as the API server sends them, and the answers."""

from __future__ import annotations

from typing import Any

from kplane.runtime import webhook

from $package.api.$version.$module import $kind
from $package.webhooks.$version import $module as hooks


def request(operation: str, obj: Any, old: Any = None) -> webhook.AdmissionRequest:
    return webhook.AdmissionRequest.from_dict(
        {"uid": "1", "operation": operation, "object": obj, "oldObject": old, "name": "sample"}
    )


def sample(**spec: Any) -> dict[str, Any]:
    api_version = "$full_group/$version"
    return {"apiVersion": api_version, "kind": "$kind", "metadata": {"name": "sample"}, "spec": spec}
'''

TEST_DEFAULTER = """

async def test_defaulting_patches_in_the_default() -> None:
    handler = webhook.DefaultingHandler($kind, hooks.${kind}Defaulter())
    response = await handler(request("CREATE", sample()))
    assert response.allowed
    assert response.patch == [{"op": "add", "path": "/spec/foo", "value": "default"}]
    assert response.to_dict()["patchType"] == "JSONPatch"
    unchanged = await handler(request("CREATE", sample(foo="mine")))
    assert unchanged.allowed and not unchanged.patch
"""

TEST_VALIDATOR = """

async def test_validation_refuses_an_empty_foo() -> None:
    handler = webhook.ValidatingHandler($kind, hooks.${kind}Validator())
    refused = await handler(request("CREATE", sample(foo="")))
    assert not refused.allowed
    assert refused.status["code"] == 422
    assert "spec.foo" in refused.status["message"]
    allowed = await handler(request("UPDATE", sample(foo="x"), sample(foo="y")))
    assert allowed.allowed
"""

SPOKE_METHODS = '''
    def convert_to(self) -> Hub$kind:
        """This $spoke $kind as the hub version ($version)."""
        # TODO(user): map the fields that differ between the versions.
        as_hub = {**msgspec.to_builtins(self), "apiVersion": "$full_group/$version"}
        return msgspec.convert(as_hub, Hub$kind)

    @classmethod
    def convert_from(cls, hub: Hub$kind) -> $kind:
        """The hub ($version) $kind as this version ($spoke)."""
        # TODO(user): map the fields that differ between the versions.
        as_spoke = {**msgspec.to_builtins(hub), "apiVersion": "$full_group/$spoke"}
        return msgspec.convert(as_spoke, cls)
'''

TEST_CONVERSION = """

def test_conversion_to_${spoke}_and_back() -> None:
    converter = webhook.Converter([$kind, $spoke_alias])
    stored = sample(foo="bar")

    def review(desired: str, obj: dict[str, Any]) -> dict[str, Any]:
        request = {"uid": "1", "desiredAPIVersion": desired, "objects": [obj]}
        body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request}
        response: dict[str, Any] = converter.review(body)["response"]
        assert response["result"]["status"] == "Success", response["result"]
        converted: dict[str, Any] = response["convertedObjects"][0]
        return converted

    older = review("$full_group/$spoke", stored)
    assert older["apiVersion"] == "$full_group/$spoke"
    assert review("$full_group/$version", older) == stored
"""

SERVICE_YAML = """# The Service the API server calls the webhooks through (config/webhook/manifests.yaml).
apiVersion: v1
kind: Service
metadata:
  name: $project-webhook-service
  namespace: $project-system
  labels:
    app.kubernetes.io/name: $project
spec:
  ports:
  - port: 443
    protocol: TCP
    targetPort: 9443
  selector:
    app.kubernetes.io/name: $project
"""
