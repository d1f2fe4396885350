"""Kubernetes' CEL (1.32): one engine (``engine``) with Kubernetes' libraries, and its uses
(``validations`` compiles CRD ``x-kubernetes-validations`` into a ``ruletree`` run on each write)."""

from kplane.api.cel.engine import CompileError, Environment, EvalError, Program, environment
from kplane.api.cel.ruletree import RuleTree
from kplane.api.cel.validations import compile_rules

__all__ = ["CompileError", "Environment", "EvalError", "Program", "RuleTree", "compile_rules", "environment"]
