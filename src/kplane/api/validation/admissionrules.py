"""Shared pieces of ``admissionregistration.k8s.io`` validation: CEL expressions and their result
types, ``matchConditions`` (kubernetes ``pkg/apis/admissionregistration/validation/
validation.go``, apiserver ``pkg/admission/plugin/cel/compile.go``, 1.32).

Used by ValidatingAdmissionPolicy and its binding (``admissionpolicy``) and by the webhook
configurations (``admissionregistration``, which holds rules and label selectors).
"""

from __future__ import annotations

from typing import Any

from kplane.api import errors, names
from kplane.api.cel import admission as cel_admission
from kplane.api.cel import engine
from kplane.api.validation.field import Errs, dl, s

FAILURE_POLICIES = ["Fail", "Ignore"]
MATCH_POLICIES = ["Equivalent", "Exact"]


def strings(value: Any) -> list[str]:
    return [x for x in value if isinstance(x, str)] if isinstance(value, list) else []


def path_segment_errors(name: str) -> list[str]:
    """apimachinery ``ValidatePathSegmentName`` (no prefix)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def qualified_name(value: str, path: str) -> Errs:
    return [errors.invalid(path, value, msg) for msg in names.qualified_name_errors(value)]


def compile_error(path: str, expression: str, exc: engine.CompileError) -> errors.FieldError:
    """``convertCELErrorToValidationError`` of a compile failure."""
    return errors.invalid(path, expression, f"compilation failed: {exc}")


def cel_expression(
    expression: str, path: str, scope: cel_admission.Scope, returns: tuple[str, ...], *, stored: bool
) -> tuple[Errs, engine.Program | None]:
    """Compile one admission expression as ``plugin/cel/compile.go`` checks it: issues, then the
    result type (one of ``returns``; ``dyn`` accepts anything)."""
    try:
        program = cel_admission.compile(expression, scope, stored=stored)
    except engine.CompileError as exc:
        return [compile_error(path, expression, exc)], None
    if "dyn" in returns or program.result_type in returns or not program.checked:
        return [], program
    if len(returns) == 1:
        reason = f"must evaluate to {returns[0]}"
    else:
        reason = "must evaluate to one of [" + " ".join(returns) + "]"
    return [errors.invalid(path, expression, reason)], None


def match_conditions(
    conditions: Any, path: str, scope: cel_admission.Scope, stored: frozenset[str] = frozenset()
) -> Errs:
    """``validateMatchConditions``: at most 64, unique qualified names, boolean expressions."""
    errs: Errs = []
    items = dl(conditions)
    if len(items) > 64:
        errs.append(errors.FieldError("FieldValueTooMany", path, "must have at most 64 items", len(items)))
    names: set[str] = set()
    for i, cond in enumerate(items):
        at = f"{path}[{i}]"
        expression = s(cond, "expression").strip()
        if not expression:
            errs.append(errors.required(f"{at}.expression"))
        else:
            errs += cel_expression(
                expression, f"{at}.expression", scope, ("bool",), stored=expression in stored
            )[0]
        name = s(cond, "name")
        if not name:
            errs.append(errors.required(f"{at}.name"))
        else:
            errs += qualified_name(name, f"{at}.name")
            if name in names:
                errs.append(errors.FieldError("FieldValueDuplicate", f"{at}.name", "", name))
            names.add(name)
    return errs
