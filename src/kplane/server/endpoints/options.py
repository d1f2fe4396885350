"""A write's options (``CreateOptions``, ``UpdateOptions``, ``PatchOptions``, ``DeleteOptions``)
validated as upstream's meta/v1 validation does (apimachinery ``pkg/apis/meta/v1/validation``):
every problem is one cause of a single 422 on the options kind, e.g.
``PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch``.
"""

from __future__ import annotations

from collections.abc import Sequence

from kplane.api import errors

FIELD_MANAGER_MAX_BYTES = 128
_KINDS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions", "DELETE": "DeleteOptions"}
_FIELD_VALIDATIONS = ("", "Ignore", "Strict", "Warn")  # sorted, as upstream lists them
_POLICIES = ("Foreground", "Background", "Orphan")


def kind_for(method: str) -> str:
    """The options kind a request with HTTP ``method`` decodes its query into."""
    return _KINDS.get(method, "CreateOptions")


def field_manager_errors(manager: str) -> list[errors.FieldError]:
    """``ValidateFieldManager``: at most 128 bytes, printable characters only (one error each)."""
    if manager.isprintable() and len(manager.encode()) <= FIELD_MANAGER_MAX_BYTES:
        return []  # the common case, in two C calls
    errs: list[errors.FieldError] = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_BYTES:
        errs.append(
            errors.FieldError(
                "FieldValueTooLong",
                "fieldManager",
                f"may not be more than {FIELD_MANAGER_MAX_BYTES} bytes",
                has_value=False,
            )
        )
    position = 0
    for ch in manager:
        if not ch.isprintable():  # Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols, " "
            detail = f"invalid character U+{ord(ch):04X} (at position {position})"
            errs.append(errors.invalid("fieldManager", manager, detail))
        position += len(ch.encode())  # Go ranges over a string by byte offset
    return errs


def dry_run_errors(values: Sequence[str]) -> list[errors.FieldError]:
    """``ValidateDryRun``: only ``All``; the value shown is the whole list."""
    if all(v == "All" for v in values):
        return []
    detail = 'supported values: "All"'
    return [errors.FieldError("FieldValueNotSupported", "dryRun", detail, errors.GoStrings(values))]


def field_validation_errors(value: str) -> list[errors.FieldError]:
    """``ValidateFieldValidation``."""
    if value in _FIELD_VALIDATIONS:
        return []
    return [errors.not_supported("fieldValidation", value, list(_FIELD_VALIDATIONS))]


def propagation_errors(policy: object) -> list[errors.FieldError]:
    """``ValidateDeleteOptions``' propagationPolicy rule (its list of supported values ends in "nil")."""
    if policy is None or policy in _POLICIES:
        return []
    return [errors.not_supported("propagationPolicy", policy, [*_POLICIES, "nil"])]


def orphan_errors(orphan: object, policy: object) -> list[errors.FieldError]:
    """``ValidateDeleteOptions``: the legacy ``orphanDependents`` excludes ``propagationPolicy``."""
    if orphan is None or policy is None:
        return []
    return [
        errors.invalid(
            "propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set"
        )
    ]


def check(kind: str, errs: list[errors.FieldError]) -> None:
    """422 on ``<kind>.meta.k8s.io ""`` with one cause per error, if there are any."""
    if errs:
        raise errors.invalid_object(kind, "meta.k8s.io", "", errs)
