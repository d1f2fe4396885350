"""Upstream's validation of a CustomResourceDefinition's ``spec.conversion`` (apiextensions-apiserver
1.32 ``validateCustomResourceConversion``). Paths are upstream's internal ones
(``spec.conversion.webhookClientConfig``, ``spec.conversion.conversionReviewVersions``), as its
messages name them."""

from __future__ import annotations

from kplane.api import errors, names
from kplane.api.validation import admissionregistration
from kplane.api.validation.admissionrules import strings
from kplane.api.validation.field import Errs, Object, d

_STRATEGIES = ["None", "Webhook"]
_REVIEW_VERSIONS = ("v1", "v1beta1")
_PATH = "spec.conversion"


def _review_versions(raw: object, path: str, require_known: bool) -> Errs:
    versions = strings(raw)
    if not versions:
        return [errors.required(path)]
    errs: Errs = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if v in seen:
            errs.append(errors.invalid(f"{path}[{i}]", v, "duplicate version"))
            continue
        seen.add(v)
        errs += [errors.invalid(f"{path}[{i}]", v, m) for m in names.dns1035_label_errors(v)]
    if require_known and not any(v in _REVIEW_VERSIONS for v in versions):
        errs.append(
            errors.invalid(path, errors.GoStrings(versions), "must include at least one of v1, v1beta1")
        )
    return errs


def conversion(spec: Object, old_spec: Object | None) -> Errs:
    """The errors of ``spec.conversion`` (absent: none; the default is strategy None)."""
    raw = spec.get("conversion")
    if not isinstance(raw, dict):
        return []
    errs: Errs = []
    strategy = raw.get("strategy")
    if not strategy:
        errs.append(errors.required(f"{_PATH}.strategy"))
    elif strategy not in _STRATEGIES:
        errs.append(errors.not_supported(f"{_PATH}.strategy", strategy, _STRATEGIES))
    webhook = raw.get("webhook")
    client_config = d(webhook).get("clientConfig") if isinstance(webhook, dict) else None
    versions = d(webhook).get("conversionReviewVersions")
    if strategy == "Webhook":
        if not isinstance(client_config, dict):
            errs.append(
                errors.required(f"{_PATH}.webhookClientConfig", "required when strategy is set to Webhook")
            )
        else:
            url, svc = client_config.get("url"), client_config.get("service")
            at = f"{_PATH}.webhookClientConfig"
            if (url is None) == (svc is None):
                errs.append(errors.required(at, "exactly one of url or service is required"))
            elif isinstance(url, str):
                errs += admissionregistration.webhook_url(url, f"{at}.url")
            elif isinstance(svc, dict):
                errs += admissionregistration.webhook_service(svc, f"{at}.service")
        old_conv = d(old_spec.get("conversion")) if old_spec is not None else {}
        old_versions = strings(d(old_conv.get("webhook")).get("conversionReviewVersions"))
        require_known = (
            old_spec is None or not old_versions or any(v in _REVIEW_VERSIONS for v in old_versions)
        )
        errs += _review_versions(versions, f"{_PATH}.conversionReviewVersions", require_known)
        if spec.get("preserveUnknownFields") is True:
            errs.append(
                errors.invalid(
                    f"{_PATH}.strategy", strategy, "must be None if spec.preserveUnknownFields is true"
                )
            )
    else:
        if client_config is not None:
            errs.append(
                errors.forbidden(
                    f"{_PATH}.webhookClientConfig", "should not be set when strategy is not set to Webhook"
                )
            )
        if strings(versions):
            errs.append(
                errors.forbidden(
                    f"{_PATH}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return errs
