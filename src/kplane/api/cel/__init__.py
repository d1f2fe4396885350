"""Kubernetes' CEL (1.32): one engine (``engine``) with Kubernetes' libraries, and its uses
(``validations`` for CRD ``x-kubernetes-validations``)."""

from kplane.api.cel.engine import CompileError, Environment, EvalError, Program, environment
from kplane.api.cel.validations import RuleTree, compile_rules

__all__ = ["CompileError", "Environment", "EvalError", "Program", "RuleTree", "compile_rules", "environment"]
