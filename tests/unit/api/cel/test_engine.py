"""The CEL engine and Kubernetes' libraries, case by case.

Expected values follow the library documentation in apiserver pkg/cel/library/*.go (1.32) and
cel-go ext/strings.go, sets.go; error texts are cel-go's where the engine lets us match them.
"""

from __future__ import annotations

from typing import Any

import pytest
from cel_expr_python import cel

from kplane.api.cel import CompileError, EvalError, environment

DYN = {"self": cel.Type.DYN}
ERR = object()

CASES: list[tuple[str, Any]] = [
    # Lists (lists.go)
    ("[1, 2, 2, 3].isSorted()", True),
    ("['b', 'a'].isSorted()", False),
    ("[1, 2, 3].sum()", 6),
    ("[1.5, 2.5].sum()", 4.0),
    ("[duration('1s'), duration('2s')].isSorted()", True),
    ("[3, 1, 2].min()", 1),
    ("['b', 'c', 'a'].max()", "c"),
    ("[1, 2, 1].indexOf(1)", 0),
    ("[1, 2, 1].lastIndexOf(1)", 2),
    ("['a'].indexOf('z')", -1),
    ("[].min()", ERR),
    # Regex (regex.go)
    ("'abc 123'.find('[0-9]+')", "123"),
    ("'abc'.find('[0-9]+')", ""),
    ("'123 abc 456'.findAll('[0-9]+')", ["123", "456"]),
    ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
    # URLs (urls.go)
    ("url('https://example.com:80/path?k=v&k=w').getScheme()", "https"),
    ("url('https://example.com:80/path').getHost()", "example.com:80"),
    ("url('https://[::1]:80/').getHostname()", "::1"),
    ("url('https://example.com:80/').getPort()", "80"),
    ("url('https://example.com/').getPort()", ""),
    ("url('https://example.com/a/b').getEscapedPath()", "/a/b"),
    ("url('https://example.com/?k=v&k=w').getQuery()", {"k": ["v", "w"]}),
    ("url('/absolute-path').getEscapedPath()", "/absolute-path"),
    ("isURL('https://example.com')", True),
    ("isURL('relative/path')", False),
    ("url('relative/path')", ERR),
    # Quantity (quantity.go)
    ("quantity('1Gi') == quantity('1024Mi')", True),
    ("quantity('500m').isInteger()", False),
    ("quantity('2k').asInteger()", 2000),
    ("quantity('1.5').asApproximateFloat()", 1.5),
    ("quantity('-1').sign()", -1),
    ("quantity('1').add(quantity('500m')).isGreaterThan(quantity('1'))", True),
    ("quantity('1').sub(2).isLessThan(quantity('0'))", True),
    ("quantity('200M').compareTo(quantity('0.2G'))", 0),
    ("isQuantity('1Ki') && !isQuantity('1KB')", True),
    ("quantity('500m').asInteger()", ERR),
    ("quantity('1KB')", ERR),
    # IP and CIDR (ip.go, cidr.go)
    ("ip('10.0.0.1').family()", 4),
    ("ip('::1').isLoopback()", True),
    ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('fe80::1').isLinkLocalUnicast()", True),
    ("ip('224.0.0.1').isLinkLocalMulticast()", True),
    ("ip('10.0.0.1').isGlobalUnicast()", True),  # Go: private ranges are global unicast
    ("ip('255.255.255.255').isGlobalUnicast()", False),
    ("isIP('1.2.3') || isIP('::ffff:1.2.3.4') || isIP('fe80::1%eth0')", False),
    ("ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')", True),
    ("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))", True),
    ("cidr('10.0.0.0/8').containsIP('192.168.0.1')", False),
    ("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", True),
    ("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')", True),
    ("cidr('10.1.2.3/8').ip() == ip('10.1.2.3')", True),
    ("cidr('2001:db8::/32').prefixLength()", 32),
    ("isCIDR('10.0.0.0/33')", False),
    # ext.Strings v2 (cel-go ext/strings.go)
    ("'hello'.charAt(4)", "o"),
    ("'hello'.indexOf('l')", 2),
    ("'hello'.indexOf('l', 3)", 3),
    ("'hello'.lastIndexOf('l')", 3),
    ("'HeLLo'.lowerAscii() + 'x'.upperAscii()", "helloX"),
    ("'a-b-c'.replace('-', '+', 1)", "a+b-c"),
    ("'a,b,c'.split(',', 2)", ["a", "b,c"]),
    ("'hello'.substring(1, 3)", "el"),
    ("'  padded \\t'.trim()", "padded"),
    ("['a', 'b'].join(', ')", "a, b"),
    ("'%s=%d (%.2f, %x)'.format(['n', 42, 1.5, 255])", "n=42 (1.50, ff)"),
    ("strings.quote('a\"b')", '"a\\"b"'),
    ("'hello'.substring(3, 1)", ERR),
    # ext.Sets
    ("sets.contains([1, 2, 3], [1, 3])", True),
    ("sets.equivalent([1, 2], [2, 1, 1])", True),
    ("sets.intersects(['a'], ['b'])", False),
    # optionals
    ("{'a': 1}.?a.orValue(0) + {'a': 1}.?b.orValue(5)", 6),
    ("optional.none().hasValue()", False),
    ("[?optional.of(1), ?optional.none()]", [1]),
    # core semantics Kubernetes relies on
    ("1 < 2.0 && 3.5 > 2", True),  # cross-type numeric comparison
    ("dyn(1) == 1.0", True),
    ("[0, 1].exists(x, 1 / x > 0)", True),
    ("self.missing", ERR),
]


@pytest.mark.parametrize(("source", "want"), CASES)
def test_library_case(source: str, want: Any) -> None:
    program = environment().compile(source, DYN)
    if want is ERR:
        with pytest.raises(EvalError):
            program.eval({"self": {}})
        return
    got = program.eval({"self": {}})
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        # cel-go's checker and parser texts (common/error.go display format)
        ("self.a +", "ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting"),
        ("1 + 'a'", "ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'\n"),
        ("nope(1)", "ERROR: <input>:1:5: undeclared reference to 'nope' (in container '')"),
        ("quantity(1)", "found no matching overload for 'quantity' applied to '(int)'"),
        ("url('x').isInteger()", "found no matching overload for 'isInteger' applied to '(kubernetes.URL)'"),
        ("'abc'.reverse()", "undeclared reference to 'reverse'"),  # strings v3: not in 1.32
        ("[1, 2].sort()", "undeclared reference to 'sort'"),  # ext.Lists is not in 1.32
    ],
)
def test_compile_errors(source: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        environment().compile(source, DYN)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("self.x", "no such key: x"),
        ("1 / 0", "division by zero"),
        ("quantity('1KB')", "quantities must match the regular expression"),
    ],
)
def test_runtime_errors(source: str, message: str) -> None:
    with pytest.raises(EvalError) as info:
        environment().compile(source, DYN).eval({"self": {}})
    assert message in str(info.value)


def test_two_variable_comprehensions_only_in_stored_expressions() -> None:
    """Introduced in 1.32: new expressions compile against 1.31's set (environment/base.go)."""
    source = "{'a': 1}.all(k, v, v > 0)"
    with pytest.raises(CompileError):
        environment().compile(source, {})
    assert environment(stored=True).compile(source, {}).eval({}) is True


def test_find_is_linear_on_hostile_patterns() -> None:
    """RE2 semantics as upstream: a nested quantifier on a long non-matching input returns at once
    (a backtracking engine would take exponential time here)."""
    program = environment().compile("self.find('(a+)+$')", DYN)
    assert program.eval({"self": "a" * 50_000 + "b"}) == ""


def test_invalid_pattern_is_an_evaluation_error() -> None:
    with pytest.raises(EvalError) as info:
        environment().compile("'ab'.find('(?<=a)b')", DYN).eval({})
    assert "error parsing regexp" in str(info.value)
