"""YAML bodies decoded as sigs.k8s.io/yaml (go-yaml v2) decodes them: bounded aliases, JSON keys."""

from __future__ import annotations

import pytest

from kplane.api import jsonbody, yamlbody


def _laughs(levels: int, fanout: int) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * fanout) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fanout) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_small_alias_use_is_expanded_into_independent_copies() -> None:
    """Aliases below go-yaml's threshold decode as copies (no shared objects)."""
    doc = yamlbody.loads("base: &b {x: 1}\none: *b\ntwo: *b\n")
    assert doc == {"base": {"x": 1}, "one": {"x": 1}, "two": {"x": 1}}
    assert doc["one"] is not doc["two"] and doc["one"] is not doc["base"]


@pytest.mark.parametrize(("levels", "fanout"), [(4, 10), (9, 9), (30, 2)])
def test_alias_bombs_fail_as_go_yaml_does_without_expanding(levels: int, fanout: int) -> None:
    """go-yaml v2 decode.go: ``yaml: document contains excessive aliasing`` once more than 99 %
    of (over 1000) decodes come from aliases; a billion-leaf document fails at once."""
    with pytest.raises(yamlbody.YAMLError) as info:
        yamlbody.loads(_laughs(levels, fanout))  # a billion copies would never finish
    assert str(info.value) == "yaml: document contains excessive aliasing"


def test_moderate_aliasing_is_allowed() -> None:
    """Two levels of ten (about 130 decodes) is under go-yaml's 1000-decode floor: decoded in full."""
    doc = yamlbody.loads(_laughs(2, 10))
    assert len(doc["a2"]) == 10 and len(doc["a2"][0]) == 10


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{true: v}", {"true": "v"}),
        ("{false: v}", {"false": "v"}),
        ("{1: v}", {"1": "v"}),
        ("{-7: v}", {"-7": "v"}),
        ("{1.5: v}", {"1.5": "v"}),
        ("{100000.0: v}", {"100000": "v"}),
        ("{1000000.0: v}", {"1e+06": "v"}),
        ("{0.00001: v}", {"1e-05": "v"}),
        ("{.inf: v}", {".inf": "v"}),
    ],
)
def test_keys_become_strings_as_sigs_yaml_converts_them(text: str, expected: dict[str, str]) -> None:
    """sigs.k8s.io/yaml convertToJSONableObject: bools, ints, floats (FormatFloat 'g', -1, 64)."""
    assert yamlbody.loads(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{null: v}", 'unsupported map key of type: %!s(<nil>), key: <nil>, value: "v"'),
        (
            "{18446744073709551615: v}",
            'unsupported map key of type: uint64, key: 0xffffffffffffffff, value: "v"',
        ),
        ("{[a]: v}", 'yaml: invalid map key: []interface {}{"a"}'),
        ("a: &x {b: *x}", "yaml: anchor 'x' value contains itself"),
        ("a: *nope", "yaml: unknown anchor 'nope' referenced"),
        ("a: !!int foo", "yaml: cannot decode !!str `foo` as a !!int"),
        ("m:\n  <<: 5\n", "yaml: map merge requires map or sequence of maps as the value"),
    ],
)
def test_undecodable_documents_get_upstreams_text(text: str, message: str) -> None:
    """Messages of sigs.k8s.io/yaml (yaml.go) and go-yaml v2 (decode.go)."""
    with pytest.raises(yamlbody.YAMLError) as info:
        yamlbody.loads(text)
    assert str(info.value) == message


def test_nesting_is_bounded() -> None:
    ok = "[" * jsonbody.MAX_DEPTH + "]" * jsonbody.MAX_DEPTH
    assert yamlbody.loads(ok) is not None
    with pytest.raises(yamlbody.YAMLError, match=f"exceeded max depth of {jsonbody.MAX_DEPTH}"):
        yamlbody.loads("[" * (jsonbody.MAX_DEPTH + 1) + "]" * (jsonbody.MAX_DEPTH + 1))
    deep_anchor = "a: &a " + "[" * 150 + "]" * 150 + "\nb: " + "[" * 60 + "*a" + "]" * 60 + "\n"
    with pytest.raises(yamlbody.YAMLError, match="exceeded max depth"):
        yamlbody.loads(deep_anchor)


def test_go_yaml_conventions() -> None:
    """First document only; timestamps stay strings; merges in place; big integers become floats."""
    assert yamlbody.loads("a: 1\n---\nb: 2\n") == {"a": 1}
    assert yamlbody.loads("") is None
    assert yamlbody.loads("t: 2001-12-14t21:59:43.10-05:00") == {"t": "2001-12-14t21:59:43.10-05:00"}
    assert yamlbody.loads("b: &b {x: 1, y: 2}\nm: {<<: *b, y: 3}") == {
        "b": {"x": 1, "y": 2},
        "m": {"x": 1, "y": 3},
    }
    assert yamlbody.loads("n: 123456789012345678901234567890") == {"n": 1.2345678901234568e29}
    assert yamlbody.loads("s: !!binary aGVsbG8=") == {"s": "hello"}
