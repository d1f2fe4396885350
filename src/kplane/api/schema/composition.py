"""``allOf``/``anyOf``/``oneOf``/``not``: checks built from validate-only subschema nodes.

Each composer takes the compiled subschemas (built with ``shaping=False``: no pruning, defaulting
or copying) and returns a ``checks.Check``. A subschema runs against the value in a private
``Ctx``, so its errors reach the caller's only as the keyword's rules say (the closest ``anyOf``
alternative, every ``allOf`` failure, none for ``not``); the value is never modified.
Messages are kube-openapi's, at the failing node's path (upstream reports them at the root).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kplane.api import errors
from kplane.api.schema import checks

Fn = checks.Fn


def _run(fn: Fn, v: Any, path: str) -> list[errors.FieldError]:
    sub = checks.Ctx(collect_unknown=False)
    fn(v, path, None, sub)
    return sub.errors


def any_of(fns: tuple[Fn, ...]) -> checks.Check:
    def check_any_of(v: Any, path: str, old: Any, ctx: checks.Ctx) -> None:
        best: list[errors.FieldError] | None = None
        for fn in fns:
            errs = _run(fn, v, path)
            if not errs:
                return
            if best is None or len(errs) < len(best):
                best = errs
        ctx.fail(errors.invalid(path, "", f'"{path}" must validate at least one schema (anyOf)'), v, old)
        for err in best or ():
            ctx.fail(err, v, old)

    return check_any_of


def one_of(fns: tuple[Fn, ...]) -> checks.Check:
    def check_one_of(v: Any, path: str, old: Any, ctx: checks.Ctx) -> None:
        best: list[errors.FieldError] | None = None
        valid = 0
        for fn in fns:
            errs = _run(fn, v, path)
            if not errs:
                valid += 1
            elif best is None or len(errs) < len(best):
                best = errs
        if valid == 1:
            return
        found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
        detail = f'"{path}" must validate one and only one schema (oneOf). {found}'
        ctx.fail(errors.invalid(path, "", detail), v, old)
        if valid == 0:
            for err in best or ():
                ctx.fail(err, v, old)

    return check_one_of


def all_of(fns: tuple[Fn, ...]) -> checks.Check:
    def check_all_of(v: Any, path: str, old: Any, ctx: checks.Ctx) -> None:
        valid = 0
        collected: list[errors.FieldError] = []
        for fn in fns:
            errs = _run(fn, v, path)
            if errs:
                collected.extend(errs)
            else:
                valid += 1
        if valid == len(fns):
            return
        for err in collected:
            ctx.fail(err, v, old)
        suffix = ". None validated" if valid == 0 else ""
        ctx.fail(errors.invalid(path, "", f'"{path}" must validate all the schemas (allOf){suffix}'), v, old)

    return check_all_of


def not_(fn: Fn) -> checks.Check:
    def check_not(v: Any, path: str, old: Any, ctx: checks.Ctx) -> None:
        if not _run(fn, v, path):
            ctx.fail(errors.invalid(path, "", f'"{path}" must not validate the schema (not)'), v, old)

    return check_not


COMPOSERS: dict[str, Callable[[tuple[Fn, ...]], checks.Check]] = {
    "allOf": all_of,
    "anyOf": any_of,
    "oneOf": one_of,
}
