"""``WebhookBuilder``: a type's webhooks on the manager's webhook server, in one chain.

    WebhookBuilder(manager, WebApp).with_defaulter(Defaults()).with_validator(Checks()).complete()

As controller-runtime's ``NewWebhookManagedBy(mgr, &T{})`` (reference/controllers.md §6.6): the
defaulter is served on ``/mutate-<group with dashes>-<version>-<lowercase kind>``, the validator on
``/validate-...`` (custom paths allowed), and ``with_conversion`` registers the type's versions with
the server's one ``/convert`` endpoint. The GVK comes from the type (``markers.kind`` or a model's
``gvk``), or is given for ``dict`` objects.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from kplane.api.gvk import GroupVersionKind
from kplane.runtime import markers
from kplane.runtime.webhook import admission
from kplane.runtime.webhook import server as server_mod

T = TypeVar("T")

CONVERT_PATH = "/convert"


class WebhookBuilder(Generic[T]):
    """Collects a type's webhooks; ``complete`` registers them (see the module docstring)."""

    def __init__(self, manager: Any, type_: type[T], *, gvk: GroupVersionKind | None = None) -> None:
        self._server: server_mod.WebhookServer = manager.webhook_server()
        self._type = type_
        info = markers.kind_info(type_) if isinstance(type_, type) else None
        found = gvk or (info.gvk if info is not None else getattr(type_, "gvk", None))
        if not isinstance(found, GroupVersionKind):
            raise ValueError(
                f"{type_!r} has no group/version/kind: declare it with markers.kind or pass gvk="
            )
        self.gvk = found
        self._defaulter: admission.Defaulter[T] | None = None
        self._validator: admission.Validator[T] | None = None
        self._keep_removals = False
        self._conversion: list[type[Any]] = []
        self._mutate_path = admission.mutate_path(*found)
        self._validate_path = admission.validate_path(*found)

    def with_defaulter(
        self, defaulter: admission.Defaulter[T], *, remove_unknown_or_omitable_fields: bool = False
    ) -> WebhookBuilder[T]:
        self._defaulter = defaulter
        self._keep_removals = remove_unknown_or_omitable_fields
        return self

    def with_validator(self, validator: admission.Validator[T]) -> WebhookBuilder[T]:
        self._validator = validator
        return self

    def with_defaulter_custom_path(self, path: str) -> WebhookBuilder[T]:
        self._mutate_path = path
        return self

    def with_validator_custom_path(self, path: str) -> WebhookBuilder[T]:
        self._validate_path = path
        return self

    def with_conversion(self, *versions: type[Any]) -> WebhookBuilder[T]:
        """Serve conversions between this type and ``versions`` (one of them the ``@hub``)."""
        self._conversion = [self._type, *versions]
        return self

    def complete(self) -> list[str]:
        """Register the webhooks; returns the paths now served for this type."""
        paths = []
        if self._defaulter is not None:
            handler = admission.DefaultingHandler(
                self._type, self._defaulter, remove_unknown_or_omitable_fields=self._keep_removals
            )
            self._server.register(self._mutate_path, handler)
            paths.append(self._mutate_path)
        if self._validator is not None:
            self._server.register(
                self._validate_path, admission.ValidatingHandler(self._type, self._validator)
            )
            paths.append(self._validate_path)
        if self._conversion:
            converter = self._server.converter()
            for cls in self._conversion:
                converter.register(cls)
            paths.append(CONVERT_PATH)
        if not paths:
            raise ValueError(
                f"no webhook to register for {self.gvk.kind}: add a defaulter, validator or conversion"
            )
        return paths
