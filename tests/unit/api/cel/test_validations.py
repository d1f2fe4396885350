"""``x-kubernetes-validations`` compiled from a schema and run over objects (apiextensions-apiserver
pkg/apiserver/schema/cel semantics: scoping, transition rules, escaping, reasons and paths)."""

from __future__ import annotations

from typing import Any

from kplane.api.cel import compile_rules

ROOT = "spec.versions[0].schema.openAPIV3Schema"


def _schema(spec: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": spec}}


def _errors(spec: dict[str, Any], obj: Any, old: Any = None) -> list[str]:
    errs, tree = compile_rules(_schema(spec), ROOT)
    assert errs == [] and tree is not None
    return [str(e) for e in tree.validate({"spec": obj}, None if old is None else {"spec": old})]


def test_rules_at_list_items_and_map_values() -> None:
    spec = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0"}]},
            },
            "m": {
                "type": "object",
                "additionalProperties": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self != ''"}],
                },
            },
        },
    }
    assert _errors(spec, {"items": [1, 0, -1], "m": {"a": "x", "b": ""}}) == [
        'spec.items[1]: Invalid value: "integer": failed rule: self > 0',
        'spec.items[2]: Invalid value: "integer": failed rule: self > 0',
        "spec.m[b]: Invalid value: \"string\": failed rule: self != ''",
    ]


def test_transition_rules_follow_list_map_keys_only() -> None:
    item = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "v": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.v >= oldSelf.v", "message": "v may not decrease"}],
    }
    spec = {
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": item,
            }
        },
    }
    old = {"entries": [{"name": "a", "v": 5}, {"name": "b", "v": 1}]}
    new = {"entries": [{"name": "b", "v": 2}, {"name": "a", "v": 4}, {"name": "c", "v": 0}]}
    assert _errors(spec, new, old) == ['spec.entries[1]: Invalid value: "object": v may not decrease']
    assert _errors(spec, new) == []  # create: transition rules are skipped


def test_old_self_on_uncorrelatable_list_refused() -> None:
    spec = {
        "type": "object",
        "properties": {
            "xs": {
                "type": "array",
                "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
            }
        },
    }
    errs, _ = compile_rules(_schema(spec), ROOT)
    assert [e.field for e in errs] == [
        f"{ROOT}.properties[spec].properties[xs].items.x-kubernetes-validations[0].rule"
    ]
    assert "oldSelf cannot be used on the uncorrelatable portion of the schema" in errs[0].detail


def test_escaped_property_names() -> None:
    """escaping.go: ``-`` → ``__dash__``, ``.`` → ``__dot__``, reserved words → ``__word__``."""
    spec = {
        "type": "object",
        "properties": {"max-size": {"type": "integer"}, "in": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.max__dash__size >= self.__in__"}],
    }
    assert _errors(spec, {"max-size": 3, "in": 2}) == []
    assert len(_errors(spec, {"max-size": 1, "in": 2})) == 1


def test_optional_old_self_runs_on_create() -> None:
    spec = {
        "type": "string",
        "x-kubernetes-validations": [
            {
                "rule": "oldSelf.hasValue() || self == 'init'",
                "optionalOldSelf": True,
                "message": "create as init",
            }
        ],
    }
    assert _errors(spec, "other") == ['spec: Invalid value: "string": create as init']
    assert _errors(spec, "init") == []
    assert _errors(spec, "other", "init") == []


def test_runtime_error_and_message_expression_fallback() -> None:
    spec = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [
            {
                "rule": "self.a > 0",
                "message": "a must be positive",
                "messageExpression": "string(1 / self.a)",
            },
        ],
    }
    # an absent field is cel-go's "no such key" evaluation error; messageExpression errors fall back
    assert _errors(spec, {}) == [
        'spec: Invalid value: "object": no such key: a evaluating rule: a must be positive'
    ]
    assert _errors(spec, {"a": 0}) == ['spec: Invalid value: "object": a must be positive']


def test_cross_type_numeric_comparison_accepted() -> None:
    spec = {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 2.5"}]}
    assert _errors(spec, 2) == []
    assert _errors(spec, 3) == ['spec: Invalid value: "integer": failed rule: self < 2.5']


def test_stored_rules_may_use_newer_libraries() -> None:
    spec = {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(k, v, v > 0)"}],
    }
    errs, _ = compile_rules(_schema(spec), ROOT)
    assert len(errs) == 1 and "compilation failed" in errs[0].detail
    errs, tree = compile_rules(_schema(spec), ROOT, stored=frozenset({"self.all(k, v, v > 0)"}))
    assert errs == [] and tree is not None


def test_ratcheting_skips_unchanged_values() -> None:
    """CRDValidationRatcheting (1.30+, on in 1.32): a rule failing on a value the update did not
    change is not reported; a changed value is checked."""
    spec = {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]},
            "b": {"type": "string"},
        },
    }
    assert _errors(spec, {"a": 20, "b": "y"}, {"a": 20, "b": "x"}) == []
    assert _errors(spec, {"a": 21}, {"a": 20}) == ['spec.a: Invalid value: "integer": failed rule: self < 10']


def test_no_such_overload_wording() -> None:
    """schema/cel/validation.go words a dispatch failure at runtime (int-or-string is dyn)."""
    spec = {
        "type": "object",
        "properties": {"v": {"x-kubernetes-int-or-string": True}},
        "x-kubernetes-validations": [{"rule": "self.v + 1 > 0"}],
    }
    assert _errors(spec, {"v": "a"}) == [
        "spec: Invalid value: \"object\": 'no such overload': call arguments did not match a supported "
        "operator, function or macro signature for rule: self.v + 1 > 0"
    ]


def test_string_formats_are_typed() -> None:
    """schemas.go: ``date``/``date-time`` → timestamp, ``duration`` → duration, ``byte`` → bytes."""
    spec = {
        "type": "object",
        "properties": {
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "ttl": {"type": "string", "format": "duration"},
            "data": {"type": "string", "format": "byte"},
            "day": {"type": "string", "format": "date"},
        },
        "x-kubernetes-validations": [
            {"rule": "self.start < self.end && self.end - self.start > self.ttl", "message": "window"},
            {"rule": "self.data.size() == 3 && self.day.getFullYear() == 2024", "message": "data"},
        ],
    }
    good = {
        "start": "2024-01-01T00:00:00Z",
        "end": "2024-01-02T00:00:00+01:00",
        "ttl": "1h30m",
        "data": "YWJj",
        "day": "2024-05-01",
    }
    assert _errors(spec, good) == []
    bad = {**good, "end": "2023-12-31T00:00:00Z", "data": "YQ=="}
    assert _errors(spec, bad) == [
        'spec: Invalid value: "object": window',
        'spec: Invalid value: "object": data',
    ]
    errs, _ = compile_rules(
        _schema(
            {
                "type": "string",
                "format": "date-time",
                "x-kubernetes-validations": [{"rule": "self.size() > 0"}],
            }
        ),
        ROOT,
    )
    assert "found no matching overload for 'size' applied to '(timestamp)'" in errs[0].detail


def test_old_self_in_a_string_literal_is_not_a_transition_rule() -> None:
    spec = {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'oldSelf'"}]}
    assert _errors(spec, "oldSelf") == ["spec: Invalid value: \"string\": failed rule: self != 'oldSelf'"]
