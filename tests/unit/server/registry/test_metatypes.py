"""metadata field types are checked before any strategy reads them (upstream: the decode fails)."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import errors
from kplane.api.catalog import ResourceRecord, ScaleSpec
from kplane.server.registry import customscale, metatypes

PREFIX = 'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '


@pytest.mark.parametrize(
    ("meta", "tail"),
    [
        ("x", "string into Go struct field Pod.metadata of type v1.ObjectMeta"),
        ({"labels": "x"}, "string into Go struct field ObjectMeta.metadata.labels of type map[string]string"),
        ({"labels": {"a": 1}}, "number into Go struct field ObjectMeta.metadata.labels of type string"),
        (
            {"annotations": [1]},
            "array into Go struct field ObjectMeta.metadata.annotations of type map[string]string",
        ),
        (
            {"finalizers": {"a": 1}},
            "object into Go struct field ObjectMeta.metadata.finalizers of type []string",
        ),
        (
            {"finalizers": [{"a": 1}]},
            "object into Go struct field ObjectMeta.metadata.finalizers of type string",
        ),
        ({"name": ["x"]}, "array into Go struct field ObjectMeta.metadata.name of type string"),
        (
            {"resourceVersion": 5},
            "number into Go struct field ObjectMeta.metadata.resourceVersion of type string",
        ),
        ({"generation": 1.5}, "number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64"),
        (
            {"generation": 2**64},
            f"number {2**64} into Go struct field ObjectMeta.metadata.generation of type int64",
        ),
        (
            {"ownerReferences": ["x"]},
            "string into Go struct field ObjectMeta.metadata.ownerReferences of type v1.OwnerReference",
        ),
        (
            {"creationTimestamp": True},
            # Time.UnmarshalJSON's own json.Unmarshal into a string, with the outer field's context
            "bool into Go struct field ObjectMeta.metadata.creationTimestamp of type string",
        ),
    ],
)
def test_wrong_types_are_upstreams_decode_error(meta: Any, tail: str) -> None:
    """handlers/rest.go transformDecodeError around encoding/json's UnmarshalTypeError."""
    with pytest.raises(errors.BadRequest) as info:
        metatypes.check_metadata({"metadata": meta}, "Pod", "v1")
    assert info.value.message == PREFIX + tail


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"name": 1, "labels": "x"}, "name"),
        ({"labels": "x", "name": 1}, "labels"),
        ({"finalizers": 1, "generation": "1"}, "finalizers"),
    ],
)
def test_the_first_wrong_field_in_the_body_is_reported(meta: dict[str, Any], field: str) -> None:
    """Go's decoder keeps the first type error it meets, in document order (encoding/json saveError)."""
    with pytest.raises(errors.BadRequest) as err:
        metatypes.check_metadata({"metadata": meta}, "Pod", "v1")
    assert f"ObjectMeta.metadata.{field} of type" in err.value.message


def test_nulls_and_right_types_pass() -> None:
    metatypes.check_metadata(
        {
            "metadata": {
                "name": "a",
                "labels": None,
                "annotations": {"a": None},
                "finalizers": ["x"],
                "generation": 2,
            }
        },
        "Pod",
        "v1",
    )
    metatypes.check_metadata({}, "Pod", "v1")


_WIDGETS = ResourceRecord(
    group="example.com",
    version="v1",
    plural="widgets",
    singular="widget",
    kind="Widget",
    list_kind="WidgetList",
    scope="Namespaced",
    custom=True,
    scale=ScaleSpec(),
)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"spec": {"replicas": 3}, "status": {"replicas": 1, "selector": "a=b"}}, []),
        ({}, []),
        # apiextensions-apiserver customresource/validator.go ValidateScaleSpec + unstructured accessor errors
        (
            {"spec": {"replicas": "s"}},
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: "
                "s is of the type string, expected int64"
            ],
        ),
        (
            {"spec": {"replicas": 0.5}},
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: "
                "0.5 is of the type float64, expected int64"
            ],
        ),
        ({"spec": {"replicas": -1}}, [".spec.replicas: Invalid value: -1: should be a non-negative integer"]),
        (
            {"spec": {"replicas": 2**31}},
            [".spec.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647"],
        ),
        (
            {"spec": "x"},
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: "
                "x is of the type string, expected map[string]interface{}"
            ],
        ),
        (
            {"status": {"selector": 5}},
            [
                '.status.selector: Invalid value: "": .status.selector accessor error: '
                "5 is of the type int64, expected string"
            ],
        ),
    ],
)
def test_custom_scale_paths_are_validated(obj: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in customscale.validate(_WIDGETS, obj)] == expected
