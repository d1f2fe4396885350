"""Webhooks: a TLS webhook server (a Manager runnable), typed defaulting and validating admission
webhooks, and conversion webhooks for multi-version CRDs (controller-runtime's ``webhook`` package).

* ``WebhookServer`` / ``WebhookServerOptions`` (``server``): HTTPS on 9443, certificates from a
  directory or self-signed, AdmissionReview and ConversionReview endpoints;
* ``Defaulter[T]``, ``Validator[T]``, ``Denied`` and the handlers (``admission``);
* ``Converter``, ``hub`` (``conversion``): hub-and-spoke ``convert_to``/``convert_from``;
* ``WebhookBuilder`` (``builder``): a type's webhooks on a manager in one chain.
"""

from kplane.runtime.webhook.admission import (
    AdmissionRequest,
    AdmissionResponse,
    Defaulter,
    DefaultingHandler,
    Denied,
    ValidatingHandler,
    Validator,
    mutate_path,
    validate_path,
)
from kplane.runtime.webhook.builder import WebhookBuilder
from kplane.runtime.webhook.conversion import ConversionError, Converter, hub
from kplane.runtime.webhook.server import WebhookServer, WebhookServerOptions

__all__ = [
    "AdmissionRequest",
    "AdmissionResponse",
    "ConversionError",
    "Converter",
    "Defaulter",
    "DefaultingHandler",
    "Denied",
    "ValidatingHandler",
    "Validator",
    "WebhookBuilder",
    "WebhookServer",
    "WebhookServerOptions",
    "hub",
    "mutate_path",
    "validate_path",
]
