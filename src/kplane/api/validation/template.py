"""``ValidatePodTemplateSpec``: the template's labels and annotations, then its pod spec."""

from __future__ import annotations

from kplane.api import errors, names
from kplane.api.validation import podspec
from kplane.api.validation.field import Errs, Object, d


def validate(tmpl: Object, path: str) -> Errs:
    meta = d(tmpl.get("metadata"))
    errs: Errs = []
    for key, value in d(meta.get("labels")).items():
        errs.extend(
            errors.invalid(f"{path}.metadata.labels", key, m) for m in names.qualified_name_errors(key)
        )
        if isinstance(value, str):
            errs.extend(
                errors.invalid(f"{path}.metadata.labels", value, m) for m in names.label_value_errors(value)
            )
    errs.extend(podspec.validate(d(tmpl.get("spec")), f"{path}.spec"))
    if d(tmpl.get("spec")).get("ephemeralContainers"):
        errs.append(
            errors.forbidden(
                f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"
            )
        )
    return errs
