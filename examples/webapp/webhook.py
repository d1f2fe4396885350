"""The WebApp validating webhook: refuses specs the reconciler could only fail on.

Rules (create and update; deletes are always allowed):

* ``spec.image`` must pin a version: a tag other than ``latest``, or a digest (``@sha256:...``);
  an image with neither is refused, as is ``:latest`` (a rollout could not tell versions apart);
* ``spec.replicas`` above 20 is allowed with a warning.

A refusal is upstream's Invalid Status (422, one cause per field), built with
``kplane.api.errors.invalid_object`` as a Go webhook would with ``apierrors.NewInvalid``.
"""

from __future__ import annotations

from typing import Any

from examples.webapp import crd
from kplane import runtime
from kplane.api import errors
from kplane.api.gvk import GroupVersionKind
from kplane.runtime import webhook

Object = dict[str, Any]

MANY_REPLICAS = 20


def image_errors(image: str) -> list[errors.FieldError]:
    """What is wrong with ``image`` (empty when it pins a version)."""
    if "@" in image:
        return []
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:  # no tag (a colon may belong to a registry's port)
        return [errors.invalid("spec.image", image, "must name a tag or a digest")]
    if tag == "latest":
        return [errors.invalid("spec.image", image, 'the tag "latest" does not pin a version')]
    return []


class WebAppValidator:
    """Validates WebApps on create and update (module docstring)."""

    def _check(self, app: Object) -> list[str]:
        spec = app.get("spec") or {}
        problems = image_errors(str(spec.get("image", "")))
        if problems:
            name = str((app.get("metadata") or {}).get("name", ""))
            raise errors.invalid_object(crd.KIND, crd.GROUP, name, problems)
        replicas = spec.get("replicas")
        if isinstance(replicas, int) and replicas > MANY_REPLICAS:
            return [f"spec.replicas: {replicas} replicas is more than {MANY_REPLICAS}; is that intended?"]
        return []

    def validate_create(self, obj: Object) -> list[str]:
        return self._check(obj)

    def validate_update(self, old: Object, new: Object) -> list[str]:
        return self._check(new)

    def validate_delete(self, obj: Object) -> list[str]:
        return []


def setup(manager: runtime.Manager) -> list[str]:
    """Serve the validator on the manager's webhook server; returns its path
    (``/validate-example-kplane-dev-v1-webapp``)."""
    return (
        webhook.WebhookBuilder(manager, dict, gvk=GroupVersionKind(crd.GROUP, crd.VERSION, crd.KIND))
        .with_validator(WebAppValidator())
        .complete()
    )
