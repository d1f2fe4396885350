"""Compare the Python CEL engines on CEL-spec semantics Kubernetes relies on, and on speed.

Usage: ``python benchmarks/cel_candidates.py`` in a venv holding any of ``cel-expr-python``
(``cel_expr_python``), ``common-expression-language`` (``cel``) and ``cel-python`` (``celpy``);
missing engines are skipped. Prints, per engine, how many cases give cel-go's answer (the cases are
written from the CEL language definition, cel-spec ``doc/langdef.md``, and cel-go's behaviour with
Kubernetes' options: heterogeneous equality, cross-type numeric comparison, optionals, ext.Strings,
ext.Sets), which ones fail, and the compile and evaluation time of one typical CRD rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

ERROR = object()  # the case must be an evaluation or compile error

DATA = {"self": {"replicas": 3, "maxReplicas": 5, "items": ["a", "bb"], "name": "web", "nested": {"x": 1}}}

# (expression, expected) — from the CEL language definition and cel-go's documented behaviour.
CASES: list[tuple[str, Any]] = [
    ("self.replicas <= self.maxReplicas", True),
    ("self.items.all(x, x.size() < 10)", True),
    ("self.name.matches('^[a-z]+$')", True),
    ("has(self.nested.x) && !has(self.nested.y)", True),
    ("self.items.map(x, x + '!')", ["a!", "bb!"]),
    ("self.items.filter(x, x.size() > 1)", ["bb"]),
    ("self.items.exists_one(x, x == 'a')", True),
    ("self.nope", ERROR),  # no such key
    ("1 / 0", ERROR),  # division by zero
    ("9223372036854775807 + 1", ERROR),  # int overflow is an error
    ("[0, 1].exists(x, 1 / x > 0)", True),  # errors absorbed by a true disjunct
    ("false && (1 / 0 > 0)", False),  # short-circuit commutes with errors
    ("42 || false", ERROR),  # no implicit truthiness
    ("'abc'[1]", ERROR),  # strings are not indexable
    ("dyn(1) == 1.0", True),  # heterogeneous equality at runtime (cel-go since v0.10)
    ("1 == 1.0", ERROR),  # ... but the checker refuses int == double literals
    ("1 < 2.0", True),  # cross-type numeric comparison (on in Kubernetes 1.29+)
    ("dyn(1u) == 1", True),
    ("size('héllo')", 5),  # code points, not bytes
    ("b'abc'.size()", 3),
    ("int('42') + 1", 43),
    ("double('1.5') * 2.0", 3.0),
    ("string(12)", "12"),
    ("type(1) == int", True),
    ("timestamp('2024-02-29T12:00:00Z').getMonth()", 1),  # zero-based month
    ("duration('90s') == duration('1m30s')", True),
    ("'x' in ['x', 'y'] && 'k' in {'k': 1}", True),
    ("{'a': 1}.size() == 1 && [1, 2] + [3] == [1, 2, 3]", True),
    ("self.?nested.?x.orValue(0) == 1 && self.?nope.orValue(7) == 7", True),  # optionals
    ("'hello'.charAt(1) + 'a,b'.split(',')[1] + 'HeLLo'.lowerAscii()", "ebhello"),  # ext.Strings
    ("'%s has %d'.format(['a', 2])", "a has 2"),  # ext.Strings v2 format
    ("'  x '.trim() + 'abc'.substring(1) + ['a', 'b'].join('-')", "xbca-b"),
    ("sets.contains([1, 2, 3], [3, 1]) && sets.intersects([1], [1, 5])", True),  # ext.Sets
]

RULE = "self.replicas <= self.maxReplicas && self.items.all(x, x.size() < 10)"


def _expr_python() -> tuple[Callable[[str], Any], Callable[[Any, dict[str, Any]], Any]]:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_optional, ext_strings

    env = cel.NewEnv(
        config=cel.NewEnvConfigFromYaml('extensions:\n  - name: "sets"\n'),
        variables={"self": cel.Type.DYN},
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
    )

    def run(expr: Any, data: dict[str, Any]) -> Any:
        value = expr.eval(data=data)
        if value.type() == cel.Type.ERROR:
            raise RuntimeError(value.value())
        return value.plain_value()

    return env.compile, run


def _rust_cel() -> tuple[Callable[[str], Any], Callable[[Any, dict[str, Any]], Any]]:
    import cel

    return cel.compile, lambda program, data: program.execute(data)


def _celpy() -> tuple[Callable[[str], Any], Callable[[Any, dict[str, Any]], Any]]:
    import celpy

    env = celpy.Environment()

    def compile_(source: str) -> Any:
        return env.program(env.compile(source))

    def run(program: Any, data: dict[str, Any]) -> Any:
        result = program.evaluate({k: celpy.json_to_cel(v) for k, v in data.items()})
        if isinstance(result, Exception):
            raise result
        return result

    return compile_, run


ENGINES = {
    "cel-expr-python (cel-cpp)": _expr_python,
    "common-expression-language (Rust)": _rust_cel,
    "cel-python (celpy)": _celpy,
}


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "BoolType"  # celpy's own bool


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or _is_bool(got):
        return _is_bool(got) and isinstance(want, bool) and bool(got == want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same, got, want))
    return bool(got == want) and not isinstance(got, bool)


def _check(compile_: Callable[[str], Any], run: Callable[[Any, dict[str, Any]], Any]) -> list[str]:
    failures = []
    for source, want in CASES:
        try:
            got = run(compile_(source), DATA)
        except Exception as exc:
            if want is not ERROR:
                failures.append(f"{source!r}: error {str(exc).splitlines()[0][:80]}")
            continue
        if want is ERROR:
            failures.append(f"{source!r}: {got!r} (want an error)")
        elif not _same(got, want):
            failures.append(f"{source!r}: {got!r} (want {want!r})")
    return failures


def _timing(compile_: Callable[[str], Any], run: Callable[[Any, dict[str, Any]], Any]) -> tuple[float, float]:
    n = 200
    start = time.perf_counter()
    for _ in range(n):
        program = compile_(RULE)
    compile_us = (time.perf_counter() - start) / n * 1e6
    n = 5000
    start = time.perf_counter()
    for _ in range(n):
        run(program, DATA)
    return compile_us, (time.perf_counter() - start) / n * 1e6


def main() -> None:
    print(f"{len(CASES)} conformance cases; timing rule: {RULE}")
    for name, load in ENGINES.items():
        try:
            compile_, run = load()
        except ImportError:
            print(f"\n{name}: not installed, skipped")
            continue
        failures = _check(compile_, run)
        compile_us, eval_us = _timing(compile_, run)
        right = len(CASES) - len(failures)
        timing = f"compile {compile_us:.0f} µs, eval {eval_us:.1f} µs"
        print(f"\n{name}: {right}/{len(CASES)} cases right; {timing}")
        for failure in failures:
            print("  -", failure)


if __name__ == "__main__":
    main()
