"""CEL for admission: ValidatingAdmissionPolicy expressions and webhook ``matchConditions``.

The variables each kind of expression sees (apiserver pkg/admission/plugin/cel and
validatingadmissionpolicy, 1.32):

* policy validations, messageExpressions, auditAnnotations, matchConditions and ``variables``:
  ``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject``, ``variables``
  (``map(string, dyn)``: the policy's variables, composited in order), ``authorizer`` and
  ``authorizer.requestResource``;
* webhook ``matchConditions``: ``object``, ``oldObject``, ``request``, ``authorizer`` and
  ``authorizer.requestResource``.

Objects are dyn (upstream types them only for policies whose ``paramKind``/match resources are
known; that typing feeds ``status.typeChecking`` and is not here). ``compile`` raises
``CompileError`` with cel-go's issue text; callers word the surrounding field error.
``activation`` builds the evaluation input; ``composite`` evaluates a policy's variables in
order (a variable that fails is left out, so an expression using it fails with ``no such key``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from kplane.api.cel import authz, engine, types

T = cel.Type


@dataclass(frozen=True)
class Scope:
    """Which variables an expression may use (upstream's ``OptionalVariableDeclarations``)."""

    params: bool
    namespace_object: bool
    variables: bool
    authorizer: bool = True


POLICY = Scope(params=True, namespace_object=True, variables=True)
WEBHOOK_MATCH = Scope(params=False, namespace_object=False, variables=False)


def policy_scope(*, params: bool, variables: bool) -> Scope:
    """A ValidatingAdmissionPolicy's expressions: ``params`` only with a ``paramKind``,
    ``variables`` only when the policy declares some (upstream's composited compiler)."""
    return Scope(params=params, namespace_object=True, variables=variables)


def message_scope(scope: Scope) -> Scope:
    """``messageExpression`` sees what the validations see but the authorizer."""
    return Scope(
        params=scope.params,
        namespace_object=scope.namespace_object,
        variables=scope.variables,
        authorizer=False,
    )


def declarations(scope: Scope) -> dict[str, Any]:
    out: dict[str, Any] = {
        "object": T.DYN,
        "oldObject": T.DYN,
        "request": T.DYN,
    }
    if scope.authorizer:
        out["authorizer"] = types.AUTHORIZER_T
        out["authorizer.requestResource"] = types.RESOURCE_CHECK_T
    if scope.params:
        out["params"] = T.DYN
    if scope.namespace_object:
        out["namespaceObject"] = T.DYN
    if scope.variables:
        out["variables"] = T.Map(T.STRING, T.DYN)
    return out


def compile(source: str, scope: Scope, *, stored: bool = False) -> engine.Program:
    """Compile one admission expression; ``stored`` for expressions already in storage."""
    return engine.environment(stored=stored).compile(source, declarations(scope))


@dataclass
class Request:
    """One admission request as CEL sees it (``request`` is the AdmissionRequest as a dict)."""

    request: Mapping[str, Any]
    object: Any = None
    old_object: Any = None
    params: Any = None
    namespace_object: Any = None


@contextmanager
def activation(
    scope: Scope, req: Request, authorize: authz.Authorize = authz.allow_all
) -> Iterator[dict[str, Any]]:
    """The evaluation input for ``req``; ``authorizer`` answers through ``authorize`` while the
    block runs."""
    user = str((req.request.get("userInfo") or {}).get("username") or "")
    with authz.AUTHORIZERS.bind(authorize, user) as authorizer:
        resource = req.request.get("resource") or {}
        data: dict[str, Any] = {
            "object": req.object,
            "oldObject": req.old_object,
            "request": dict(req.request),
        }
        if scope.authorizer:
            data["authorizer"] = authorizer
            data["authorizer.requestResource"] = authz.request_resource(
                authorizer,
                str(resource.get("group") or ""),
                str(resource.get("resource") or ""),
                str(req.request.get("subResource") or ""),
                str(req.request.get("namespace") or ""),
                str(req.request.get("name") or ""),
            )
        if scope.params:
            data["params"] = req.params
        if scope.namespace_object:
            data["namespaceObject"] = req.namespace_object
        if scope.variables:
            data["variables"] = {}
        yield data


def composite(variables: Sequence[tuple[str, engine.Program]], data: dict[str, Any]) -> dict[str, str]:
    """Evaluate a policy's variables in order into ``data["variables"]``; returns the errors by
    variable name (those variables stay undefined)."""
    values: dict[str, Any] = {}
    failures: dict[str, str] = {}
    for name, program in variables:
        data["variables"] = values
        try:
            values[name] = program.eval(data)
        except engine.EvalError as exc:
            failures[name] = str(exc)
    data["variables"] = values
    return failures
