"""managedFields bookkeeping for ordinary writes, entry encoding, manager names, conflict text."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import apply as ssa
from kplane.api import schema
from kplane.api.apply import FieldSet, managed

CM = schema.node_for_gvk("", "v1", "ConfigMap")


def cm(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "uid": "u1"}, "data": data}


def update(
    old: dict[str, Any] | None, new: dict[str, Any], manager: str, now: str, **kw: Any
) -> dict[str, Any]:
    return ssa.update_managed_fields(old, new, manager=manager, api_version="v1", schema=CM, now=now, **kw)


def fields(obj: dict[str, Any], manager: str) -> FieldSet:
    [e] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    return FieldSet.from_fields_v1(e["fieldsV1"])


def test_create_owns_everything_but_identity_fields() -> None:
    """A create's manager owns what it set; apiVersion, kind, name and uid belong to nobody."""
    obj = update(None, cm(a="1"), "kubectl-create", "2026-01-01T00:00:00Z")
    [entry] = obj["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert entry["operation"] == "Update" and entry["time"] == "2026-01-01T00:00:00Z"


def test_update_takes_changed_fields_and_drops_empty_managers() -> None:
    """The writer takes changed fields; a manager left with nothing disappears."""
    obj = update(None, cm(a="1"), "creator", "2026-01-01T00:00:00Z")
    obj2 = update(obj, {**obj, "data": {"a": "2"}}, "editor", "2026-01-01T00:00:05Z")
    assert fields(obj2, "editor").has(("f:data", "f:a"))
    assert not fields(obj2, "creator").has(("f:data", "f:a"))
    obj3 = update(obj2, {**obj2, "data": {"a": "2", "b": "x"}}, "editor", "2026-01-01T00:00:09Z")
    assert [e["manager"] for e in obj3["metadata"]["managedFields"]] == ["creator", "editor"]
    obj4 = update(obj3, {**obj3, "data": {}}, "wiper", "2026-01-01T00:00:10Z")
    assert [e["manager"] for e in obj4["metadata"]["managedFields"]] == ["creator"]


def test_same_manager_entries_merge_and_time_moves_only_on_change() -> None:
    """Successive writes by one manager accumulate in one entry; a no-op keeps its time."""
    obj = update(None, cm(a="1"), "m", "2026-01-01T00:00:00Z")
    obj = update(obj, {**obj, "data": {"a": "1", "b": "2"}}, "m", "2026-01-01T00:00:01Z")
    assert set(fields(obj, "m").paths()) >= {("f:data", "f:a"), ("f:data", "f:b")}
    assert obj["metadata"]["managedFields"][0]["time"] == "2026-01-01T00:00:01Z"
    same = update(obj, obj, "m", "2026-01-01T00:00:02Z")
    assert same["metadata"]["managedFields"][0]["time"] == "2026-01-01T00:00:01Z"


def test_entries_sorted_apply_first_then_time() -> None:
    """Encoded entries: Apply before Update, then by time, then manager."""
    obj = update(None, cm(a="1"), "z-late", "2026-01-01T00:00:09Z")
    obj = update(obj, {**obj, "data": {"a": "1", "b": "2"}}, "a-early", "2026-01-01T00:00:01Z")
    obj = ssa.apply(
        obj,
        cm(c="3"),
        manager="applier",
        api_version="v1",
        schema=CM,
        force=False,
        now="2026-01-01T00:00:05Z",
    )
    assert [(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"]] == [
        ("applier", "Apply"),
        ("a-early", "Update"),
        ("z-late", "Update"),
    ]


def test_subresource_entries_are_separate() -> None:
    """A status write records its own entry with "subresource"."""
    obj = update(None, cm(a="1"), "m", "2026-01-01T00:00:00Z")
    obj2 = update(obj, {**obj, "data": {"a": "2"}}, "m", "2026-01-01T00:00:01Z", subresource="status")
    subs = sorted(e.get("subresource", "") for e in obj2["metadata"]["managedFields"])
    assert subs == ["", "status"]
    main, status = obj2["metadata"]["managedFields"]
    assert not FieldSet.from_fields_v1(main["fieldsV1"]).has(("f:data", "f:a"))
    assert "subresource" not in main and list(status)[-1] == "subresource"


def test_request_may_reset_or_keep_managed_fields() -> None:
    """[{}] clears managedFields; omitting them keeps the live ones; existing untracked stays so."""
    obj = update(None, cm(a="1"), "m", "2026-01-01T00:00:00Z")
    cleared = update(obj, {**obj, "metadata": {**obj["metadata"], "managedFields": [{}]}}, "m", "T")
    assert "managedFields" not in cleared["metadata"] or cleared["metadata"]["managedFields"]
    no_mf = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}
    kept = update(obj, {**no_mf, "data": {"a": "1", "b": "2"}}, "other", "2026-01-01T00:00:01Z")
    assert {e["manager"] for e in kept["metadata"]["managedFields"]} == {"m", "other"}
    untracked = update(no_mf, {**no_mf, "data": {"a": "9"}}, "other", "2026-01-01T00:00:02Z")
    assert "managedFields" not in untracked["metadata"]


def test_update_managers_are_capped() -> None:
    """More than ten Update entries fold the oldest into ancient-changes."""
    obj = update(None, cm(k0="0"), "m0", "2026-01-01T00:00:00Z")
    for i in range(1, 12):
        obj = update(
            obj, {**obj, "data": {**obj["data"], f"k{i}": str(i)}}, f"m{i}", f"2026-01-01T00:00:{i:02d}Z"
        )
    names = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(names) == 10 and "ancient-changes" in names and "m0" not in names and "m1" not in names


@pytest.mark.parametrize(
    ("agent", "manager"),
    [
        pytest.param("kubectl/v1.32.0 (linux/amd64) kubernetes/abc", "kubectl", id="kubectl"),
        pytest.param("OpenAPI-Generator/31.0.0/python", "OpenAPI-Generator", id="python"),
        pytest.param("a\tb/1", "ab", id="unprintable"),
        pytest.param("x" * 200, "x" * 128, id="truncated"),
    ],
)
def test_default_manager(agent: str, manager: str) -> None:
    """A request without fieldManager is attributed to its User-Agent's product name."""
    assert ssa.default_manager(agent) == manager


def test_conflict_text_with_subresource_and_several_managers() -> None:
    """Managers print with subresource and apiVersion; groups are sorted by manager."""
    cs = [
        ssa.Conflict("b", "Apply", "apps/v1", ("f:spec", "f:replicas")),
        ssa.Conflict("a", "Update", "apps/v1", ("f:status", "f:x"), "status"),
        ssa.Conflict("b", "Apply", "apps/v1", ("f:spec", "f:paused")),
    ]
    message, causes = ssa.format_conflicts(cs)
    assert message == (
        'Apply failed with 3 conflicts: conflicts with "a" with subresource "status" using apps/v1:\n'
        "- .status.x\n"
        'conflicts with "b":\n'
        "- .spec.replicas\n"
        "- .spec.paused"
    )
    assert causes[1] == {
        "reason": "FieldManagerConflict",
        "message": 'conflict with "a" with subresource "status" using apps/v1',
        "field": ".status.x",
    }


def test_decode_rejects_bad_entries() -> None:
    """Entries upstream rejects are a ValueError with its wording."""
    with pytest.raises(ValueError, match="operation must be"):
        managed.decode([{"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}])
    with pytest.raises(ValueError, match="invalid fieldsType"):
        managed.decode([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"}])
