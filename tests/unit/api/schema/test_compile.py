"""Contract of ``compile_schema``/``compiled_for_gvk``: pruning, defaulting, validation, messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kplane.api import errors
from kplane.api import schema as api_schema
from kplane.api.schema import containers, formats


def crd(properties: dict[str, Any], **spec_extra: Any) -> api_schema.CompiledSchema:
    """A CRD root schema whose ``spec`` has ``properties``."""
    spec = {"type": "object", "properties": properties, **spec_extra}
    return api_schema.compile_schema({"type": "object", "properties": {"spec": spec}})


def cr(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def messages(result: api_schema.Result) -> list[str]:
    return [str(e) for e in result.errors]


# --- validation: one case per keyword, with upstream's exact text ------------------------------

INVALID = [
    pytest.param(
        {"type": "integer"},
        "string",
        'spec.x: Invalid value: "string": spec.x in body must be of type integer: "string"',
        id="type-integer",
    ),
    pytest.param(
        {"type": "string"},
        5,
        'spec.x: Invalid value: "integer": spec.x in body must be of type string: "integer"',
        id="type-string",
    ),
    pytest.param(
        {"type": "boolean"},
        "yes",
        'spec.x: Invalid value: "string": spec.x in body must be of type boolean: "string"',
        id="type-boolean",
    ),
    pytest.param(
        {"type": "number"},
        True,
        'spec.x: Invalid value: "boolean": spec.x in body must be of type number: "boolean"',
        id="type-number-rejects-bool",
    ),
    pytest.param(
        {"type": "object"},
        [1],
        'spec.x: Invalid value: "array": spec.x in body must be of type object: "array"',
        id="type-object",
    ),
    pytest.param(
        {"type": "array"},
        {},
        'spec.x: Invalid value: "object": spec.x in body must be of type array: "object"',
        id="type-array",
    ),
    pytest.param(
        {"type": "integer"},
        1.5,
        'spec.x: Invalid value: "number": spec.x in body must be of type integer: "number"',
        id="type-integer-rejects-fraction",
    ),
    pytest.param(
        {"type": "string", "enum": ["S", "M"]},
        "L",
        'spec.x: Unsupported value: "L": supported values: "S", "M"',
        id="enum-string",
    ),
    pytest.param(
        {"type": "integer", "enum": [1, 2]},
        3,
        'spec.x: Unsupported value: 3: supported values: "1", "2"',
        id="enum-int",
    ),
    pytest.param(
        {"type": "integer", "maximum": 10},
        11,
        "spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10",
        id="maximum",
    ),
    pytest.param(
        {"type": "integer", "maximum": 10, "exclusiveMaximum": True},
        10,
        "spec.x: Invalid value: 10: spec.x in body should be less than 10",
        id="exclusive-maximum",
    ),
    pytest.param(
        {"type": "integer", "minimum": 1},
        0,
        "spec.x: Invalid value: 0: spec.x in body should be greater than or equal to 1",
        id="minimum",
    ),
    pytest.param(
        {"type": "number", "minimum": 0.5, "exclusiveMinimum": True},
        0.5,
        "spec.x: Invalid value: 0.5: spec.x in body should be greater than 0.5",
        id="exclusive-minimum",
    ),
    pytest.param(
        {"type": "integer", "multipleOf": 5},
        7,
        "spec.x: Invalid value: 7: spec.x in body should be a multiple of 5",
        id="multiple-of",
    ),
    pytest.param(
        {"type": "string", "minLength": 1},
        "",
        'spec.x: Invalid value: "": spec.x in body should be at least 1 chars long',
        id="min-length",
    ),
    pytest.param(
        {"type": "string", "maxLength": 3},
        "abcd",
        "spec.x: Too long: may not be more than 3 bytes",
        id="max-length",
    ),
    pytest.param(
        {"type": "string", "pattern": "^[a-z]+$"},
        "AB",
        "spec.x: Invalid value: \"AB\": spec.x in body should match '^[a-z]+$'",
        id="pattern",
    ),
    pytest.param(
        {"type": "array", "minItems": 1},
        [],
        "spec.x: Invalid value: 0: spec.x in body should have at least 1 items",
        id="min-items",
    ),
    pytest.param(
        {"type": "array", "maxItems": 1, "items": {"type": "integer"}},
        [1, 2],
        "spec.x: Too many: 2: must have at most 1 item",
        id="max-items",
    ),
    pytest.param(
        {"type": "object", "minProperties": 1},
        {},
        "spec.x: Invalid value: 1: spec.x in body should have at least 1 properties",
        id="min-properties",
    ),
    pytest.param(
        {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
        {"a": "1", "b": "2"},
        "spec.x: Too many: 2: must have at most 1 item",
        id="max-properties",
    ),
    pytest.param(
        {"type": "string", "format": "date-time"},
        "yesterday",
        'spec.x: Invalid value: "yesterday": spec.x in body must be of type date-time: "yesterday"',
        id="format-date-time",
    ),
    pytest.param(
        {"type": "string", "format": "byte"},
        "not base64!",
        'spec.x: Invalid value: "not base64!": spec.x in body must be of type byte: "not base64!"',
        id="format-byte",
    ),
    pytest.param(
        {"type": "integer", "format": "int32"},
        2**31,
        "spec.x: Invalid value: 2147483648: spec.x in body must be of type int32",
        id="format-int32",
    ),
    pytest.param(
        {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}},
        {},
        "spec.x.a: Required value",
        id="required",
    ),
    pytest.param(
        {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        ["a", "b", "a"],
        'spec.x[2]: Duplicate value: "a"',
        id="list-type-set",
    ),
    pytest.param(
        {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}},
        },
        [{"name": "a", "v": 1}, {"name": "a", "v": 2}],
        'spec.x[1]: Duplicate value: map[string]interface {}{"name":"a"}',
        id="list-type-map",
    ),
    pytest.param(
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"k": "v"},
        'spec.x.k: Invalid value: "string": spec.x.k in body must be of type integer: "string"',
        id="additional-properties-schema",
    ),
    pytest.param(
        {"x-kubernetes-int-or-string": True},
        True,
        'spec.x: Invalid value: "": "spec.x" must validate at least one schema (anyOf)',
        id="int-or-string",
    ),
    pytest.param(
        {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^x"}]},
        "abc",
        'spec.x: Invalid value: "": "spec.x" must validate at least one schema (anyOf)',
        id="any-of",
    ),
    pytest.param(
        {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
        5,
        'spec.x: Invalid value: "": "spec.x" must validate one and only one schema (oneOf). '
        "Found 2 valid alternatives",
        id="one-of",
    ),
    pytest.param(
        {"type": "integer", "allOf": [{"minimum": 0}, {"maximum": 10}]},
        11,
        "spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10",
        id="all-of",
    ),
    pytest.param(
        {"type": "string", "not": {"enum": ["forbidden"]}},
        "forbidden",
        'spec.x: Invalid value: "": "spec.x" must not validate the schema (not)',
        id="not",
    ),
    pytest.param(
        {"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"required": ["a"]}]},
        {},
        "spec.x.a: Required value",
        id="any-of-required-subschema",
    ),
]


@pytest.mark.parametrize(("prop", "value", "expected"), INVALID)
def test_invalid_value_reports_upstream_message(prop: dict[str, Any], value: Any, expected: str) -> None:
    """Each keyword rejects a bad value with the field error text upstream prints."""
    result = crd({"x": prop}).process(cr({"x": value}))
    assert expected in messages(result)


VALID = [
    pytest.param({"type": "integer", "maximum": 10}, 10, id="maximum-inclusive"),
    pytest.param({"type": "integer"}, 2.0, id="integral-float-is-integer"),
    pytest.param({"type": "number"}, 3, id="integer-is-number"),
    pytest.param({"x-kubernetes-int-or-string": True}, "25%", id="int-or-string-string"),
    pytest.param({"x-kubernetes-int-or-string": True}, 3, id="int-or-string-int"),
    pytest.param({"type": "string", "format": "date-time"}, "2024-01-02T03:04:05Z", id="date-time"),
    pytest.param({"type": "string", "format": "byte"}, "aGVsbG8=", id="byte"),
    pytest.param({"type": "string", "format": "no-such-format"}, "anything", id="unknown-format-ignored"),
    pytest.param({"type": "string", "pattern": "^a"}, "abc", id="pattern-unanchored-end"),
    pytest.param({"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^x"}]}, "xyz", id="any-of"),
    pytest.param({"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 0}]}, 7, id="one-of"),
    pytest.param({"type": "number", "multipleOf": 0.1}, 0.3, id="multiple-of-float"),
    pytest.param(
        {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}, [1, 2, 3], id="set"
    ),
    pytest.param({"type": "object", "x-kubernetes-map-type": "atomic"}, {}, id="map-type"),
]


@pytest.mark.parametrize(("prop", "value"), VALID)
def test_valid_value_passes(prop: dict[str, Any], value: Any) -> None:
    """Values the keyword allows produce no error."""
    assert messages(crd({"x": prop}).process(cr({"x": value}))) == []


def test_pattern_dollar_is_end_of_text_as_in_re2() -> None:
    """Go's ``$`` does not match before a trailing newline; Python's would, so it is rewritten."""
    result = crd({"x": {"type": "string", "pattern": "^[a-z]+$"}}).process(cr({"x": "ab\n"}))
    assert [(e.field, e.detail) for e in result.errors] == [
        ("spec.x", "spec.x in body should match '^[a-z]+$'")
    ]


def test_reason_types_follow_upstream_mapping() -> None:
    """Type errors are FieldValueTypeInvalid, maxLength TooLong, enum NotSupported, required Required."""
    compiled = crd(
        {
            "t": {"type": "integer"},
            "l": {"type": "string", "maxLength": 1},
            "e": {"type": "string", "enum": ["a"]},
            "o": {"type": "object", "required": ["r"]},
        }
    )
    result = compiled.process(cr({"t": "x", "l": "xx", "e": "b", "o": {}}))
    assert [e.type for e in result.errors] == [
        "FieldValueTypeInvalid",
        "FieldValueTooLong",
        "FieldValueNotSupported",
        "FieldValueRequired",
    ]
    assert result.errors[0].cause().to_dict()["field"] == "spec.t"


def test_nested_array_paths_use_indexes() -> None:
    """Errors inside arrays of objects carry ``[i]`` paths as upstream prints them."""
    compiled = crd(
        {"items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}}
    )
    result = compiled.process(cr({"items": [{"n": 1}, {"n": "x"}]}))
    assert [e.field for e in result.errors] == ["spec.items[1].n"]


def test_non_re2_pattern_is_rejected_at_compile_time() -> None:
    """A lookahead pattern (not RE2) fails compilation with SchemaError."""
    with pytest.raises(api_schema.SchemaError):
        crd({"x": {"type": "string", "pattern": "^(?=a)"}})


# --- pruning and unknown fields ---------------------------------------------------------------


def test_unknown_fields_are_pruned_and_reported_in_document_order() -> None:
    """Undeclared fields disappear from the result and are listed as strict-decoding texts."""
    compiled = crd(
        {"a": {"type": "string"}, "o": {"type": "object", "properties": {"b": {"type": "string"}}}}
    )
    obj = cr({"a": "1", "zz": 1, "o": {"b": "2", "c": 3}})
    obj["status"] = {"x": 1}
    result = compiled.process(obj)
    assert result.obj["spec"] == {"a": "1", "o": {"b": "2"}}
    assert "status" not in result.obj
    assert result.unknown_fields == [
        'unknown field "spec.zz"',
        'unknown field "spec.o.c"',
        'unknown field "status"',
    ]


@pytest.mark.parametrize(("mode", "reported"), [("Strict", True), ("Warn", True), ("Ignore", False)])
def test_field_validation_mode_controls_reporting_not_pruning(mode: Any, reported: bool) -> None:
    """Every mode prunes; only Strict and Warn collect the unknown fields."""
    result = crd({"a": {"type": "string"}}).process(cr({"a": "1", "b": 2}), mode=mode)
    assert result.obj["spec"] == {"a": "1"}
    assert bool(result.unknown_fields) is reported


def test_bad_mode_is_rejected() -> None:
    """A fieldValidation value other than Strict/Warn/Ignore raises ValueError."""
    with pytest.raises(ValueError, match="fieldValidation"):
        crd({}).process(cr({}), mode="Loud")  # type: ignore[arg-type]


def test_root_keeps_api_version_kind_and_prunes_metadata_to_object_meta() -> None:
    """A CR keeps apiVersion/kind/metadata; metadata loses non-ObjectMeta fields (reported)."""
    obj = cr({})
    obj["metadata"] = {"name": "w", "labels": {"a": "b"}, "bogus": 1}
    result = crd({}).process(obj)
    assert result.obj["apiVersion"] == "example.com/v1"
    assert result.obj["kind"] == "Widget"
    assert result.obj["metadata"] == {"name": "w", "labels": {"a": "b"}}
    assert result.unknown_fields == ['unknown field "metadata.bogus"']


def test_root_metadata_restrictions_apply() -> None:
    """A CRD's metadata.name constraint is validated on top of ObjectMeta."""
    schema = {
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}
        },
    }
    result = api_schema.compile_schema(schema).process(cr({}) | {"metadata": {"name": "long-name"}})
    assert messages(result) == ["metadata.name: Too long: may not be more than 3 bytes"]


def test_preserve_unknown_fields_keeps_and_nested_properties_prune_again() -> None:
    """Under preserve-unknown-fields unknown keys stay, but a nested node with properties prunes."""
    compiled = crd(
        {
            "p": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"inner": {"type": "object", "properties": {"k": {"type": "string"}}}},
            }
        }
    )
    result = compiled.process(cr({"p": {"free": {"deep": [1, {"x": 2}]}, "inner": {"k": "v", "drop": 1}}}))
    assert result.obj["spec"]["p"] == {"free": {"deep": [1, {"x": 2}]}, "inner": {"k": "v"}}
    assert result.unknown_fields == ['unknown field "spec.p.inner.drop"']


def test_preserve_unknown_fields_without_type_keeps_any_value() -> None:
    """A typeless preserve-unknown-fields node keeps scalars, lists and objects."""
    compiled = crd({"any": {"x-kubernetes-preserve-unknown-fields": True}})
    for value in ("s", 1, [1, "a"], {"k": {"v": None}}):
        assert compiled.process(cr({"any": value})).obj["spec"]["any"] == value


def test_additional_properties_true_keeps_values() -> None:
    """``additionalProperties: true`` keeps undeclared keys without reporting them."""
    result = crd({"m": {"type": "object", "additionalProperties": True}}).process(cr({"m": {"a": {"b": 1}}}))
    assert result.obj["spec"]["m"] == {"a": {"b": 1}}
    assert result.unknown_fields == []


def test_embedded_resource_keeps_and_validates_type_meta_and_metadata() -> None:
    """An embedded resource keeps apiVersion/kind/metadata (pruned to ObjectMeta) and requires kind."""
    compiled = crd(
        {
            "tpl": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            }
        }
    )
    ok = compiled.process(
        cr({"tpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "x": 1}, "s": 1}})
    )
    assert ok.obj["spec"]["tpl"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "s": 1}
    assert ok.unknown_fields == ['unknown field "spec.tpl.metadata.x"']
    bad = compiled.process(cr({"tpl": {"apiVersion": "v1"}}))
    assert messages(bad) == ["spec.tpl.kind: Required value: must not be empty"]


def test_process_does_not_mutate_input_and_shares_no_containers() -> None:
    """The input stays equal to a snapshot; mutating the result leaves the input alone."""
    compiled = crd(
        {
            "keep": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "d": {"type": "string", "default": "x"},
        }
    )
    obj = cr({"keep": {"deep": {"a": 1}}, "gone": 1})
    snapshot = copy.deepcopy(obj)
    result = compiled.process(obj)
    result.obj["spec"]["keep"]["deep"]["a"] = 2
    assert obj == snapshot


# --- defaulting and nulls ----------------------------------------------------------------------


def test_defaults_fill_absent_fields_in_nested_objects_and_arrays() -> None:
    """Defaults apply in nested objects, in every array element, and inside defaulted objects."""
    compiled = crd(
        {
            "replicas": {"type": "integer", "default": 1},
            "obj": {
                "type": "object",
                "default": {},
                "properties": {"inner": {"type": "string", "default": "i"}},
            },
            "list": {
                "type": "array",
                "items": {"type": "object", "properties": {"p": {"type": "string", "default": "TCP"}}},
            },
        }
    )
    result = compiled.process(cr({"list": [{}, {"p": "UDP"}]}))
    assert result.obj["spec"] == {"list": [{"p": "TCP"}, {"p": "UDP"}], "replicas": 1, "obj": {"inner": "i"}}


def test_defaults_are_deep_copied() -> None:
    """Two objects defaulted from the same schema do not share the default's containers."""
    compiled = crd({"tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]}})
    first = compiled.process(cr({})).obj
    first["spec"]["tags"].append("b")
    assert compiled.process(cr({})).obj["spec"]["tags"] == ["a"]


def test_default_does_not_create_absent_parent() -> None:
    """A default inside an absent object does not make the object appear."""
    compiled = crd({"o": {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}})
    assert compiled.process(cr({})).obj["spec"] == {}


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        pytest.param({"type": "string"}, {}, id="non-nullable-null-pruned"),
        pytest.param({"type": "string", "default": "d"}, {"x": "d"}, id="non-nullable-null-defaulted"),
        pytest.param(
            {"type": "string", "nullable": True, "default": "d"}, {"x": None}, id="nullable-null-kept"
        ),
    ],
)
def test_null_handling(prop: dict[str, Any], expected: dict[str, Any]) -> None:
    """null is dropped (then defaulted) unless nullable, in which case it is kept as is."""
    result = crd({"x": prop}).process(cr({"x": None}))
    assert result.obj["spec"] == expected
    assert result.errors == []


def test_null_array_element_is_a_type_error_unless_nullable() -> None:
    """A null array element is reported against the item type; nullable items accept it."""
    strict = crd({"a": {"type": "array", "items": {"type": "string"}}}).process(cr({"a": [None]}))
    assert messages(strict) == [
        'spec.a[0]: Invalid value: "null": spec.a[0] in body must be of type string: "null"'
    ]
    lax = crd({"a": {"type": "array", "items": {"type": "string", "nullable": True}}}).process(
        cr({"a": [None]})
    )
    assert lax.errors == []


# --- ratcheting --------------------------------------------------------------------------------


def test_unchanged_invalid_field_is_ratcheted() -> None:
    """With ``old``, an invalid but unchanged value is not reported; a changed one is."""
    compiled = crd({"n": {"type": "integer", "maximum": 10}, "m": {"type": "integer", "maximum": 10}})
    old = cr({"n": 11, "m": 1})
    result = compiled.process(cr({"n": 11, "m": 12}), old=old)
    assert [e.field for e in result.errors] == ["spec.m"]


def test_list_map_elements_correlate_by_key_for_ratcheting() -> None:
    """Reordered list-type map elements still correlate with their old selves by key."""
    compiled = crd(
        {
            "l": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k"],
                "items": {
                    "type": "object",
                    "properties": {"k": {"type": "string"}, "v": {"type": "integer", "maximum": 1}},
                },
            }
        }
    )
    old = cr({"l": [{"k": "a", "v": 5}, {"k": "b", "v": 0}]})
    result = compiled.process(
        cr({"l": [{"k": "b", "v": 0}, {"k": "a", "v": 5}, {"k": "c", "v": 7}]}), old=old
    )
    assert [e.field for e in result.errors] == ["spec.l[2].v"]


# --- built-in kinds ----------------------------------------------------------------------------


def deployment(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}]},
        },
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": base | spec}


def test_compiled_for_gvk_is_cached_and_none_for_unknown_kinds() -> None:
    """The same CompiledSchema comes back for a kind; an unknown kind gives None."""
    assert api_schema.compiled_for_gvk("apps", "v1", "Deployment") is api_schema.compiled_for_gvk(
        "apps", "v1", "Deployment"
    )
    assert api_schema.compiled_for_gvk("example.com", "v1", "Nope") is None


def test_builtin_deployment_is_defaulted_like_upstream() -> None:
    """A minimal Deployment gets apps/v1 and core/v1 defaults at every level."""
    compiled = api_schema.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    result = compiled.process(deployment())
    assert result.errors == []
    spec = result.obj["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod_spec = spec["template"]["spec"]
    assert pod_spec["restartPolicy"] == "Always"
    assert pod_spec["dnsPolicy"] == "ClusterFirst"
    assert pod_spec["terminationGracePeriodSeconds"] == 30
    assert pod_spec["schedulerName"] == "default-scheduler"
    assert pod_spec["securityContext"] == {}
    assert "enableServiceLinks" not in pod_spec  # Pod-only default
    container = pod_spec["containers"][0]
    assert container["imagePullPolicy"] == "Always"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_builtin_deployment_misspelled_field_is_unknown() -> None:
    """``spec.replica`` is pruned and reported; the strict message names it as upstream does."""
    compiled = api_schema.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    result = compiled.process(deployment(replica=3))
    assert result.unknown_fields == ['unknown field "spec.replica"']
    assert result.obj["spec"]["replicas"] == 1
    assert api_schema.strict_decoding_message("Deployment", "v1", result.unknown_fields) == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.replica"'
    )


def test_builtin_unknown_field_paths_inside_lists() -> None:
    """Unknown fields deep in a pod template are reported with their indexed path."""
    compiled = api_schema.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["imagePolicy"] = "x"
    result = compiled.process(obj)
    assert result.unknown_fields == ['unknown field "spec.template.spec.containers[0].imagePolicy"']


def test_builtin_type_error_and_required() -> None:
    """A string replicas and a nameless container are reported with upstream's paths."""
    compiled = api_schema.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    obj = deployment(replicas="3")
    del obj["spec"]["template"]["spec"]["containers"][0]["name"]
    assert sorted(messages(compiled.process(obj))) == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        "spec.template.spec.containers[0].name: Required value",
    ]


def test_builtin_null_fields_count_as_absent() -> None:
    """``replicas: null`` on a built-in kind is dropped and then defaulted, as Go decoding does."""
    compiled = api_schema.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    result = compiled.process(deployment(replicas=None))
    assert result.errors == []
    assert result.obj["spec"]["replicas"] == 1


def test_builtin_int_or_string_and_quantity() -> None:
    """IntOrString accepts both forms; a Quantity string must parse."""
    compiled = api_schema.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    obj = deployment(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%"}}
    )
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1x", "memory": 1.5}}
    result = compiled.process(obj)
    assert [e.field for e in result.errors] == ["spec.template.spec.containers[0].resources.limits[cpu]"]
    assert result.errors[0].detail == formats.QUANTITY_MESSAGE


def test_builtin_opaque_objects_are_kept() -> None:
    """managedFields[].fieldsV1 (an object without properties) is kept whole."""
    compiled = api_schema.compiled_for_gvk("", "v1", "ConfigMap")
    assert compiled is not None
    fields = {"f:data": {"f:a": {}}}
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "managedFields": [{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": fields}],
        },
        "data": {"a": "b"},
    }
    result = compiled.process(obj)
    assert result.obj["metadata"]["managedFields"][0]["fieldsV1"] == fields
    assert result.errors == [] and result.unknown_fields == []


def test_builtin_pod_and_service_defaults() -> None:
    """A Pod gets enableServiceLinks and requests from limits; a Service gets type, affinity, targetPort."""
    pod = api_schema.compiled_for_gvk("", "v1", "Pod")
    service = api_schema.compiled_for_gvk("", "v1", "Service")
    assert pod is not None and service is not None
    container = {"name": "c", "image": "busybox:1.36", "resources": {"limits": {"cpu": "1"}}}
    pod_obj = pod.process(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [container]}}
    ).obj
    assert pod_obj["spec"]["enableServiceLinks"] is True
    assert pod_obj["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert pod_obj["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]},
    }
    spec = service.process(svc).obj["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]


def test_builtin_list_map_duplicates_are_not_rejected() -> None:
    """Repeated env names are legal for built-in kinds (upstream only warns)."""
    compiled = api_schema.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"},
        {"name": "A", "value": "2"},
    ]
    assert compiled.process(obj).errors == []


def test_builtin_map_value_paths_use_brackets() -> None:
    """A bad label value is reported at ``metadata.labels[key]``."""
    compiled = api_schema.compiled_for_gvk("apps", "v1", "Deployment")
    assert compiled is not None
    obj = deployment()
    obj["metadata"]["labels"] = {"app": 1}
    assert [e.field for e in compiled.process(obj).errors] == ["metadata.labels[app]"]


# --- helpers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (10, "10"),
        (10.0, "10"),
        (0.5, "0.5"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (1.5e-5, "1.5e-05"),
        (-2.25, "-2.25"),
    ],
)
def test_go_number_matches_go_percent_v(value: float, text: str) -> None:
    """Numbers render like Go's ``%v``."""
    assert formats.go_number(value) == text


def test_copy_json_is_deep() -> None:
    """copy_json copies nested containers."""
    value = {"a": [{"b": 1}]}
    copied = containers.copy_json(value)
    copied["a"][0]["b"] = 2
    assert value == {"a": [{"b": 1}]}


def test_errors_module_is_the_one_used() -> None:
    """Compiled errors are ``kplane.api.errors.FieldError`` instances."""
    result = crd({"x": {"type": "integer"}}).process(cr({"x": "s"}))
    assert isinstance(result.errors[0], errors.FieldError)
