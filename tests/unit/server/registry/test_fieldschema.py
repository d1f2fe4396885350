"""The schema step's field management: the create memo gives exactly what the SSA engine gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kplane.api import apply as ssa
from kplane.api import schema
from kplane.api.builtin import builtin_catalog
from kplane.server.registry.fieldschema import SchemaStep, WriteOptions

CATALOG = builtin_catalog()


def _engine(step: SchemaStep, group: str, plural: str, obj: dict[str, Any], now: str) -> dict[str, Any]:
    record = CATALOG.lookup(group, "v1", plural)
    assert record is not None
    return ssa.update_managed_fields(
        None,
        obj,
        manager="m",
        api_version=record.api_version,
        schema=step.node(record),
        now=now,
        zero=schema.zero_object_for_gvk(record.group, record.version, record.kind),
    )


OBJECTS = {
    "configmap": (
        "",
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"x": "1"}},
            "data": {"k": "v"},
        },
    ),
    "secret-null": (
        "",
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "data": {"k": "dg=="},
            "type": None,
        },
    ),
    "with-list": (
        "apps",
        "deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
        },
    ),
}


@pytest.mark.parametrize("case", list(OBJECTS), ids=list(OBJECTS))
def test_create_memo_matches_the_engine(case: str) -> None:
    """Creating objects of one shape twice: both results equal the engine's, each with its own time."""
    group, plural, obj = OBJECTS[case]
    record = CATALOG.lookup(group, "v1", plural)
    assert record is not None
    step = SchemaStep()
    opts = WriteOptions(field_manager="m")
    for now in ("2026-01-01T00:00:00Z", "2026-01-01T00:00:07Z"):
        other = copy.deepcopy(obj)
        other["metadata"]["name"] += now[-3:-1]
        got = step.managed(record, None, other, opts, now)
        assert got == _engine(step, group, plural, other, now)


def test_memo_not_used_for_updates_or_other_managers() -> None:
    """An update, or another manager, is computed by the engine, not served from the create memo."""
    record = CATALOG.lookup("", "v1", "configmaps")
    assert record is not None
    step = SchemaStep()
    obj = OBJECTS["configmap"][2]
    first = step.managed(record, None, obj, WriteOptions(field_manager="m"), "2026-01-01T00:00:00Z")
    other = step.managed(record, None, obj, WriteOptions(field_manager="n"), "2026-01-01T00:00:00Z")
    assert first["metadata"]["managedFields"][0]["manager"] == "m"
    assert other["metadata"]["managedFields"][0]["manager"] == "n"


def test_carried_managed_fields_process_as_a_full_walk() -> None:
    """An update whose managedFields are the stored list itself (a status write) is processed to
    the same object, errors and warnings as one whose equal managedFields must be walked."""
    record = CATALOG.lookup("", "v1", "configmaps")
    assert record is not None
    step = SchemaStep()
    old: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "n",
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "managedFields": [
                {
                    "manager": "m",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-01-02T03:04:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:k": {}}},
                }
            ],
            "labels": {"x": "1"},
        },
        "data": {"k": "v"},
    }
    new = {**old, "metadata": dict(old["metadata"]), "data": {"k": "w", "bad": 1}}
    walked_opts, carried_opts = WriteOptions(), WriteOptions()
    walked = step.process(record, copy.deepcopy(new), old, walked_opts)
    carried = step.process(record, new, old, carried_opts)
    assert carried == walked
    assert carried[1]  # the bad value is still reported
    assert carried_opts.warnings == walked_opts.warnings
    assert list(carried[0]["metadata"]) == list(old["metadata"])  # same keys, same order
    assert new["metadata"]["managedFields"] is old["metadata"]["managedFields"]  # input untouched


def test_create_memo_tells_shapes_apart() -> None:
    """Objects that differ only in a key, a null, or where an object nests share no memo entry:
    each create, in one step, gets exactly the engine's managedFields."""
    record = CATALOG.lookup("", "v1", "configmaps")
    assert record is not None
    step = SchemaStep()
    opts = WriteOptions(field_manager="m")
    now = "2026-01-01T00:00:00Z"
    variants: list[dict[str, Any]] = [
        {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}},
        {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": None}},
        {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"j": "v"}},
        {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v", "j": "w"}},
        {"metadata": {"name": "a", "labels": {"y": "1"}}, "data": {"k": "v"}},
        {"metadata": {"name": "a", "annotations": {"x": "1"}}, "data": {"k": "v"}},
        {"metadata": {"name": "a"}, "data": {"k": "v"}, "binaryData": {"x": "AA=="}},
        {"metadata": {"name": "a"}, "binaryData": {"k": "AA=="}, "data": {"x": "v"}},
    ]
    for variant in variants:
        obj = {"apiVersion": "v1", "kind": "ConfigMap", **variant}
        got = step.managed(record, None, copy.deepcopy(obj), opts, now)
        assert got == _engine(step, "", "configmaps", copy.deepcopy(obj), now), variant
