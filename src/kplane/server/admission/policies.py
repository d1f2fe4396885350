"""ValidatingAdmissionPolicies and their bindings, compiled once per write.

``compile_policy`` turns a stored policy into a ``Policy``: its match constraints as
``matching`` predicates, and every expression (matchConditions, variables, validations,
messageExpressions, auditAnnotations) as a CEL program. Stored expressions compile against the
full (stored) library set, as upstream's read side. A policy that does not compile (possible only
for objects stored before a rule tightened) carries ``error`` and fails as a configuration error.
``compile_binding`` does the same for a binding's ``matchResources`` and ``paramRef``.

Variables are evaluated lazily, per request, as upstream's composition does: an expression runs
after the variables it references (``variables.x``, directly or through other variables), each
evaluated at most once per (binding, param) evaluation; a variable no expression reads is never
evaluated.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kplane.api import labels
from kplane.api.cel import admission as celadmission
from kplane.api.cel import cost, engine
from kplane.server.admission import matching

log = logging.getLogger(__name__)
Object = dict[str, Any]

_VARIABLE_REF = re.compile(r"""\bvariables\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*['"]([A-Za-z_]\w*)['"]\s*\])""")


@dataclass(frozen=True, slots=True)
class NamedRule:
    rule: matching.Rule
    names: frozenset[str]

    def matches(self, req: matching.Request, name: str) -> bool:
        return self.rule.matches(req) and (not self.names or name in self.names)


@dataclass(frozen=True, slots=True)
class Match:
    """``matchConstraints`` / ``matchResources``."""

    rules: tuple[NamedRule, ...]
    excludes: tuple[NamedRule, ...]
    namespace_selector: labels.Selector
    object_selector: labels.Selector
    equivalent: bool


@dataclass(frozen=True, slots=True)
class Expression:
    """A compiled expression and the variables it needs, in declaration order."""

    source: str
    program: engine.Program
    needs: tuple[str, ...] = ()
    cost_tree: cost.Node | None = None
    """Set when the expression iterates (a comprehension): only those can pass the per-call
    cost limit on an object that fits a request, so only those are measured before they run."""


@dataclass(frozen=True, slots=True)
class Validation:
    check: Expression
    message: str
    message_expression: Expression | None
    reason: str


@dataclass(frozen=True, slots=True)
class AuditAnnotation:
    key: str
    value: Expression


@dataclass(slots=True)
class Policy:
    name: str
    fail: bool
    param_kind: tuple[str, str, str] | None  # group, version, kind
    match: Match | None
    conditions: tuple[tuple[str, Expression], ...] = ()
    variables: tuple[tuple[str, Expression], ...] = ()
    validations: tuple[Validation, ...] = ()
    annotations: tuple[AuditAnnotation, ...] = ()
    error: str = ""


@dataclass(frozen=True, slots=True)
class ParamRef:
    name: str
    namespace: str
    selector: labels.Selector | None
    deny_if_missing: bool


@dataclass(slots=True)
class Binding:
    name: str
    policy: str
    actions: frozenset[str]
    action_list: tuple[str, ...]
    match: Match | None
    param_ref: ParamRef | None
    error: str = ""


def _dicts(value: Any) -> list[Object]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _str(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _named_rules(raw: Any) -> tuple[NamedRule, ...]:
    return tuple(
        NamedRule(
            matching.Rule.parse(r), frozenset(n for n in r.get("resourceNames") or () if isinstance(n, str))
        )
        for r in _dicts(raw)
    )


def compile_match(raw: Any) -> Match:
    """Match constraints; raises ``ValueError`` for a selector that does not parse."""
    mc = raw if isinstance(raw, dict) else {}
    return Match(
        rules=_named_rules(mc.get("resourceRules")),
        excludes=_named_rules(mc.get("excludeResourceRules")),
        namespace_selector=matching.selector(mc.get("namespaceSelector")),
        object_selector=matching.selector(mc.get("objectSelector")),
        equivalent=mc.get("matchPolicy", "Equivalent") == "Equivalent",
    )


def _param_kind(raw: Any) -> tuple[str, str, str] | None:
    if not isinstance(raw, dict):
        return None
    group, _, version = _str(raw, "apiVersion").rpartition("/")
    return group, version, _str(raw, "kind")


class _Compiler:
    """Compiles one policy's expressions; ``needs`` closes over variable references."""

    def __init__(self, scope: celadmission.Scope, variables: list[str]) -> None:
        self.scope = scope
        self.order = variables
        self.deps: dict[str, tuple[str, ...]] = {}

    def needs(self, source: str) -> tuple[str, ...]:
        direct = {a or b for a, b in _VARIABLE_REF.findall(source)} if self.scope.variables else set()
        closed: set[str] = set()
        pending = [n for n in direct if n in self.order]
        while pending:
            name = pending.pop()
            if name not in closed:
                closed.add(name)
                pending.extend(self.deps.get(name, ()))
        return tuple(n for n in self.order if n in closed)

    def expression(self, source: str, scope: celadmission.Scope | None = None) -> Expression:
        program = celadmission.compile(source, scope or self.scope, stored=True)
        return Expression(source, program, self.needs(source), _iterating(program))


def _iterating(program: engine.Program) -> cost.Node | None:
    try:
        tree = cost.decode(program.serialize())
    except (ValueError, IndexError, StopIteration):
        return None
    pending = [tree]
    while pending:
        node = pending.pop()
        if node.kind == "comprehension":
            return tree
        pending.extend(node.children)
        pending.extend(node.parts.values())
    return None


def compile_policy(obj: Object) -> Policy:
    """The compiled form of a stored ValidatingAdmissionPolicy (never raises)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(meta, dict) and isinstance(spec, dict)
    policy = Policy(
        name=_str(meta, "name"),
        fail=spec.get("failurePolicy", "Fail") != "Ignore",
        param_kind=_param_kind(spec.get("paramKind")),
        match=None,
    )
    try:
        policy.match = compile_match(spec.get("matchConstraints"))
        variables = [_str(v, "name") for v in _dicts(spec.get("variables"))]
        scope = celadmission.policy_scope(params=policy.param_kind is not None, variables=bool(variables))
        compiler = _Compiler(scope, variables)
        compiled_vars = []
        for raw in _dicts(spec.get("variables")):
            expr = compiler.expression(_str(raw, "expression"))
            compiler.deps[_str(raw, "name")] = expr.needs
            compiled_vars.append((_str(raw, "name"), expr))
        policy.variables = tuple(compiled_vars)
        policy.conditions = tuple(
            (_str(c, "name"), compiler.expression(_str(c, "expression")))
            for c in _dicts(spec.get("matchConditions"))
        )
        message_scope = celadmission.message_scope(scope)
        validations = []
        for raw in _dicts(spec.get("validations")):
            message_source = _str(raw, "messageExpression")
            validations.append(
                Validation(
                    check=compiler.expression(_str(raw, "expression")),
                    message=_str(raw, "message").strip(),
                    message_expression=(
                        compiler.expression(message_source, message_scope) if message_source.strip() else None
                    ),
                    reason=_str(raw, "reason") or "Invalid",
                )
            )
        policy.validations = tuple(validations)
        policy.annotations = tuple(
            AuditAnnotation(_str(a, "key"), compiler.expression(_str(a, "valueExpression").strip()))
            for a in _dicts(spec.get("auditAnnotations"))
        )
    except (engine.CompileError, ValueError) as exc:
        log.warning("ValidatingAdmissionPolicy %s does not compile: %s", policy.name, exc)
        policy.error = str(exc)
    return policy


def compile_binding(obj: Object) -> Binding:
    """The compiled form of a stored ValidatingAdmissionPolicyBinding (never raises)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(meta, dict) and isinstance(spec, dict)
    actions = tuple(a for a in spec.get("validationActions") or () if isinstance(a, str))
    binding = Binding(
        name=_str(meta, "name"),
        policy=_str(spec, "policyName"),
        actions=frozenset(actions),
        action_list=actions,
        match=None,
        param_ref=None,
    )
    try:
        if isinstance(spec.get("matchResources"), dict):
            binding.match = compile_match(spec["matchResources"])
        ref = spec.get("paramRef")
        if isinstance(ref, dict):
            selector = ref.get("selector")
            binding.param_ref = ParamRef(
                name=_str(ref, "name"),
                namespace=_str(ref, "namespace"),
                selector=labels.from_label_selector(selector) if isinstance(selector, dict) else None,
                deny_if_missing=ref.get("parameterNotFoundAction") == "Deny",
            )
    except ValueError as exc:
        binding.error = str(exc)
    return binding
