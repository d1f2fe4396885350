"""One CEL engine for every Kubernetes use: CRD ``x-kubernetes-validations``, admission policies
and webhook ``matchConditions``.

``Environment(stored=...)`` is Kubernetes 1.32's base environment (apiserver pkg/cel/environment)
on cel-expr-python (Google's cel-cpp): the standard library, optionals, ``ext.Sets``, the strings
extension at v2 (``strings``), and Kubernetes' Lists, Regex, URL, Quantity, IP, CIDR and
authorizer (``authz``) libraries.
``stored=False`` is the *NewExpressions* set (libraries introduced up to 1.31, the compatibility
version of a 1.32 server) used for expressions being written; ``stored=True`` adds what 1.32
introduced (two-variable comprehensions) for expressions that were already stored.

``compile(source, variables)`` type-checks against the declared variable types and returns a
``Program`` or raises ``CompileError`` whose text is cel-go's display format
(``ERROR: <input>:1:5: undefined field 'x'`` plus the source line and a caret line).
``Program.eval(data)`` returns a plain Python value (lists, dicts, scalars, messages) or raises
``EvalError`` with cel-go's wording for the common failures (``no such key: x``, ``division by
zero``, ``no such overload``).
Environments are cached per variable signature; building one costs ~10 µs.

Differences from cel-go v0.22 (documented in ARCHITECTURE.md): an expression whose only type
errors are cross-type numeric comparisons (``1 < 2.0``, which cel-go accepts with Kubernetes'
options) runs unchecked with a dyn result; heterogeneous list literals compile; no cost tracking.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_optional

from kplane.api.cel import authz, formats, lists_regex, network, quantity, strings, types

T = cel.Type
_ERROR = T.ERROR

_NEW = cel.NewEnvConfigFromYaml('extensions:\n  - name: "sets"\n')
_STORED = cel.NewEnvConfigFromYaml('extensions:\n  - name: "sets"\n  - name: "two-var-comprehensions"\n')
_STATUS = re.compile(r"^[A-Z_]+: ")
_STATUS_TAIL = re.compile(r" \[[A-Z_]+\]$")


class CompileError(Exception):
    """An expression that does not parse or type-check; ``str()`` is cel-go's issue text."""


class EvalError(Exception):
    """An evaluation failure; ``str()`` is cel-go's wording where known."""


def _functions() -> list[Any]:
    return [
        *lists_regex.list_functions(strings.string_index_overloads()),
        *lists_regex.regex_functions(),
        *strings.string_functions(),
        *quantity.quantity_functions(),
        *network.network_functions(),
        *authz.authz_functions(),
        *formats.format_functions(),
    ]


_NOT_IN_STRUCT = re.compile(r"(undefined field '[^']*') not found in struct '[^']*'")


_UNDECLARED = re.compile(
    r"ERROR: <input>:(\d+):(\d+): undeclared reference to '([A-Za-z_][\w]*)((?:\.[A-Za-z_]\w*)+)' "
    r"\(in container ''\)\n \| ([^\n]*)\n \| [.]*\^"
)


def _undeclared(m: re.Match[str]) -> str:
    """cel-go names the unknown leading identifier of a dotted name, at its start; cel-cpp names
    the whole qualified name at its last dot."""
    line, col, head, rest, source = m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)
    last = rest.rsplit(".", 1)[1]
    start = col - (len(head) + len(rest) - len(last) - 1)
    if start < 1 or source[start - 1 : start - 1 + len(head)] != head:
        return m.group(0)
    caret = "." * (start - 1) + "^"
    issue = f"undeclared reference to '{head}' (in container '')"
    return f"ERROR: <input>:{line}:{start}: {issue}\n | {source}\n | {caret}"


def _clean(message: str) -> str:
    text = _STATUS_TAIL.sub("", _STATUS.sub("", message, count=1)).rstrip()
    text = _NOT_IN_STRUCT.sub(r"\1", text)
    text = _UNDECLARED.sub(_undeclared, text)
    # schema formats are typed with the well-known messages; cel-go names them timestamp/duration
    return text.replace("google.protobuf.Timestamp", "timestamp").replace(
        "google.protobuf.Duration", "duration"
    )


_CROSS = re.compile(
    r"^ERROR: [^\n]*: found no matching overload for '_(?:<|<=|>|>=)_' applied to "
    r"'\((int|uint|double), (int|uint|double)\)'$"
)


def _only_cross_numeric(message: str) -> bool:
    """True if every issue is an ordering of two different numeric types (``1 < 2.0``)."""
    issues = [block.split("\n", 1)[0] for block in ("\n" + message).split("\nERROR: ")[1:]]
    for issue in issues:
        m = _CROSS.match("ERROR: " + issue)
        if m is None or m.group(1) == m.group(2):
            return False
    return bool(issues)


_RUNTIME = (
    (re.compile(r'Key not found in map : "?(.*?)"?$'), r"no such key: \1"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^modulus by zero$"), "modulus by zero"),
    (re.compile(r"^No matching overloads found.*"), "no such overload"),
)


def runtime_message(message: str) -> str:
    """An engine error rephrased as cel-go words it."""
    text = _clean(message)
    for pattern, repl in _RUNTIME:
        if pattern.search(text):
            return pattern.sub(repl, text)
    return text


class Program:
    """A compiled, type-checked expression; thread-safe to evaluate."""

    __slots__ = ("_expr", "checked", "result_type", "source")

    def __init__(self, expr: Any, source: str, result_type: str | None = None) -> None:
        self._expr = expr
        self.source = source
        self.result_type: str = result_type or str(expr.return_type().name()).lower()
        self.checked = result_type is None
        """False for an expression run unchecked (see ``Environment.compile``): its result type
        is unknown, so callers must not refuse it for one."""

    def serialize(self) -> bytes:
        """The checked expression (``cel.expr.CheckedExpr`` in a ``google.protobuf.Any``)."""
        return bytes(self._expr.serialize())

    def eval(self, data: Mapping[str, Any]) -> Any:
        try:
            value = self._expr.eval(data=data)
        except Exception as exc:  # the engine raises RuntimeError/ValueError subclasses
            raise EvalError(runtime_message(str(exc))) from None
        if value.type() == _ERROR:
            raise EvalError(runtime_message(str(value.value())))
        try:
            return value.plain_value()
        except Exception:  # an optional (the engine cannot hand one to Python)
            raise EvalError(f"no Python value for a result of type {value.type().name()}") from None


class Environment:
    """A CEL environment of the 1.32 base library set (see the module docstring)."""

    def __init__(self, *, stored: bool = False) -> None:
        self.stored = stored
        self._envs: dict[tuple[Any, ...], Any] = {}
        self._pool: Any = None
        self._pool_envs: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()
        self._functions = _functions()

    def _env(self, variables: Mapping[str, Any], pool: Any = None) -> Any:
        key = (*sorted((k, str(v.name())) for k, v in variables.items()),)
        envs = self._envs
        if pool is not None:  # environments over a caller's pool are kept for the latest pool only
            if self._pool is not pool:
                with self._lock:
                    self._pool, self._pool_envs = pool, {}
            envs = self._pool_envs
        env = envs.get(key)
        if env is None:
            with self._lock:
                if len(envs) > 256:
                    envs.clear()
                env = cel.NewEnv(
                    descriptor_pool=types.POOL if pool is None else pool,
                    config=_STORED if self.stored else _NEW,
                    variables=dict(variables),
                    extensions=[ext_optional.ExtOptional()],
                    functions=self._functions,
                )
                envs[key] = env
        return env

    def compile(self, source: str, variables: Mapping[str, Any], *, pool: Any = None) -> Program:
        """Parse and type-check ``source``; raises ``CompileError``. ``pool`` is a protobuf
        descriptor pool declaring the message types named in ``variables`` (see ``schematypes``);
        such a program is for checking only, as values must then be messages."""
        env = self._env(variables, pool)
        text = formats.rewrite(source)
        try:
            expr = env.compile(text)
        except Exception as exc:
            message = _clean(str(exc))
            if text != source:
                message = _unrewrite(message, source, text)
            if not _only_cross_numeric(message):
                raise CompileError(message) from None
            # cel-go (with Kubernetes' CrossTypeNumericComparisons) accepts these; cel-cpp's
            # runtime compares across numeric types but its checker has no such overloads.
            expr = env.compile(text, disable_check=True)
            return Program(expr, source, result_type="dyn")
        return Program(expr, source)


_ISSUE = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)\n \| [^\n]*\n \| [.]*\^")


def _unrewrite(message: str, source: str, text: str) -> str:
    """Issues of the rewritten ``text`` (``formats.rewrite``) placed in the original ``source``:
    columns after an inserted lookup move back, and the shown line is the original's."""
    src_lines, text_lines = source.split("\n"), text.split("\n")

    def one(m: re.Match[str]) -> str:
        line, col = int(m.group(1)), int(m.group(2))
        if not 1 <= line <= len(src_lines) or line > len(text_lines):
            return m.group(0)
        original, rewritten = src_lines[line - 1], text_lines[line - 1]
        # walk both lines together; the rewritten one has extra inserts
        i = j = 0
        while j < col - 1 and j < len(rewritten):
            if i < len(original) and original[i] == rewritten[j]:
                i += 1
            j += 1
        return f"ERROR: <input>:{line}:{i + 1}: {m.group(3)}\n | {original}\n | {'.' * i}^"

    return _ISSUE.sub(one, message)


_DEFAULT: dict[bool, Environment] = {}


def environment(*, stored: bool = False) -> Environment:
    """The process-wide environment (new or stored expressions)."""
    env = _DEFAULT.get(stored)
    if env is None:
        env = _DEFAULT.setdefault(stored, Environment(stored=stored))
    return env
