"""Predicates, handlers, finalizers, owner references, conditions and merge-patch creation."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kplane._util import clock as clock_mod
from kplane.api.patch import mergepatch
from kplane.client.models import apps_v1, meta_v1
from kplane.runtime import conditions, finalizers, handler, ownership, predicate
from kplane.runtime.reconcile import Request


def _obj(gen: int = 1, rv: str = "1", labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.kplane.dev/v1",
        "kind": "WebApp",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u-a", "generation": gen,
                     "resourceVersion": rv, "labels": labels or {}, **meta},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("pred", "old", "new", "passes"),
    [
        (predicate.GenerationChanged(), _obj(1, "1"), _obj(1, "2"), False),
        (predicate.GenerationChanged(), _obj(1, "1"), _obj(2, "2"), True),
        (predicate.ResourceVersionChanged(), _obj(1, "1"), _obj(1, "1"), False),
        (predicate.ResourceVersionChanged(), _obj(1, "1"), _obj(1, "2"), True),
        (predicate.LabelsChanged(), _obj(labels={"a": "1"}), _obj(labels={"a": "2"}), True),
        (predicate.AnnotationsChanged(), _obj(), _obj(annotations={"x": "y"}), True),
        (
            predicate.or_(predicate.GenerationChanged(), predicate.LabelsChanged()),
            _obj(),
            _obj(rv="9"),
            False,
        ),
        (predicate.not_(predicate.GenerationChanged()), _obj(1), _obj(1, "2"), True),
        (predicate.and_(lambda o: True, predicate.GenerationChanged()), _obj(1), _obj(2), True),
    ],
    ids=["gen-same", "gen-bumped", "rv-same", "rv-changed", "labels", "annotations", "or", "not", "and-fn"],
)
def test_update_predicates(pred: predicate.Predicate, old: Any, new: Any, passes: bool) -> None:
    """Change predicates filter updates as upstream's pkg/predicate does."""
    assert pred.update(old, new) is passes


def test_change_predicates_pass_other_events() -> None:
    """Create, delete and generic events always pass the change predicates."""
    p = predicate.GenerationChanged()
    assert p.create(_obj()) and p.delete(_obj()) and p.generic(_obj())


def test_plain_function_predicate() -> None:
    """A plain function filters every kind of event (the new object on update)."""
    p = predicate.as_predicate(lambda o: o["metadata"]["name"] == "a")
    assert p.create(_obj()) and p.update({}, _obj())
    assert not p.delete({"metadata": {"name": "b"}})


class _Q:
    def __init__(self) -> None:
        self.items: list[Request] = []

    def add(self, item: Request) -> None:
        self.items.append(item)


def test_enqueue_for_owner_only_controller() -> None:
    """Only the controller reference of the owner's group and kind is enqueued, in the object's namespace."""
    child = {"metadata": {"name": "c", "namespace": "ns", "ownerReferences": [
        {"apiVersion": "example.kplane.dev/v1", "kind": "WebApp", "name": "owner", "uid": "1",
         "controller": True},
        {"apiVersion": "example.kplane.dev/v2", "kind": "WebApp", "name": "other", "uid": "2"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "3", "controller": False},
    ]}}  # fmt: skip
    q = _Q()
    handler.EnqueueRequestForOwner("example.kplane.dev", "WebApp").create(child, q)
    assert q.items == [Request("ns", "owner")]
    q2 = _Q()
    handler.EnqueueRequestForOwner("example.kplane.dev", "WebApp", only_controller=False).create(child, q2)
    assert sorted(r.name for r in q2.items) == ["other", "owner"]
    q3 = _Q()
    handler.EnqueueRequestForOwner("example.kplane.dev", "WebApp", owner_namespaced=False).create(child, q3)
    assert q3.items == [Request("", "owner")]


def test_predicates_and_owner_handler_read_typed_objects() -> None:
    """Typed objects (an informer over a model class) are read by their JSON field names too:
    resourceVersion and ownerReferences, not only same-spelled fields such as generation."""

    def rs(rv: str) -> apps_v1.ReplicaSet:
        owner = meta_v1.OwnerReference(api_version="apps/v1", kind="Deployment", name="web", uid="1",
                                       controller=True)  # fmt: skip
        meta = meta_v1.ObjectMeta(name="web-1", namespace="ns", resource_version=rv, owner_references=[owner])
        return apps_v1.ReplicaSet(metadata=meta)

    assert predicate.ResourceVersionChanged().update(rs("1"), rs("2"))
    assert not predicate.ResourceVersionChanged().update(rs("1"), rs("1"))
    q = _Q()
    handler.EnqueueRequestForOwner("apps", "Deployment").create(rs("1"), q)
    assert q.items == [Request("ns", "web")]


def test_map_func_handler_update_maps_old_and_new() -> None:
    """A map function's requests for the old and new object are both enqueued, once each."""
    q = _Q()
    h = handler.as_handler(lambda o: [Request("ns", o["metadata"]["labels"]["team"])])
    h.update(_obj(labels={"team": "x"}), _obj(labels={"team": "y"}), q)
    assert sorted(r.name for r in q.items) == ["x", "y"]


def test_finalizers() -> None:
    """add/remove report changes; contains reads metadata.finalizers."""
    obj = _obj()
    assert finalizers.add_finalizer(obj, "f") and not finalizers.add_finalizer(obj, "f")
    assert finalizers.contains_finalizer(obj, "f")
    assert finalizers.remove_finalizer(obj, "f") and not finalizers.remove_finalizer(obj, "f")
    assert obj["metadata"]["finalizers"] == []


def test_set_controller_reference_rules() -> None:
    """Upsert by group/kind/name, AlreadyOwnedError for another controller, namespace checks."""
    owner = _obj()
    child: dict[str, Any] = {"metadata": {"name": "c", "namespace": "ns"}}
    ownership.set_controller_reference(owner, child)
    ownership.set_controller_reference(owner, child)  # idempotent
    refs = child["metadata"]["ownerReferences"]
    assert refs == [{"apiVersion": "example.kplane.dev/v1", "kind": "WebApp", "name": "a", "uid": "u-a",
                     "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    other = _obj()
    other["metadata"]["name"] = "b"
    with pytest.raises(ownership.AlreadyOwnedError) as err:
        ownership.set_controller_reference(other, child)
    # controller-runtime controllerutil.AlreadyOwnedError.Error()
    assert str(err.value) == "Object ns/c is already owned by another WebApp controller a"
    ownership.set_owner_reference(other, child)
    assert len(child["metadata"]["ownerReferences"]) == 2
    with pytest.raises(ValueError, match="cross-namespace owner references are disallowed"):
        ownership.set_controller_reference(owner, {"metadata": {"name": "x", "namespace": "elsewhere"}})
    with pytest.raises(ValueError, match="cluster-scoped resource must not have a namespace-scoped owner"):
        ownership.set_controller_reference(owner, {"metadata": {"name": "x"}})


def test_set_status_condition_transition_time() -> None:
    """lastTransitionTime changes only when status changes (meta.SetStatusCondition)."""
    clock = clock_mod.FakeClock(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    conds: list[dict[str, Any]] = []
    ready = {"type": "Ready", "status": "False", "reason": "Pending", "message": "wait"}
    assert conditions.set_status_condition(conds, ready, clock=clock)
    assert conds[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    clock.step(60)
    assert conditions.set_status_condition(conds, {**ready, "message": "still waiting"}, clock=clock)
    assert conds[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert not conditions.set_status_condition(conds, {**ready, "message": "still waiting"}, clock=clock)
    assert conditions.set_status_condition(conds, {**ready, "status": "True", "reason": "Up"}, clock=clock)
    assert conds[0]["lastTransitionTime"] == "2026-01-01T00:01:00Z"
    assert conditions.is_status_condition_true(conds, "Ready")
    assert conditions.remove_status_condition(conds, "Ready") and conds == []


def test_set_status_condition_on_models() -> None:
    """A list of condition models follows the same rules and stays a list of models."""
    clock = clock_mod.FakeClock(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    conds: list[meta_v1.Condition] = []
    ready = meta_v1.Condition(type="Ready", status="False", reason="Pending", message="wait")
    assert conditions.set_status_condition(conds, ready, clock=clock)
    assert isinstance(conds[0], meta_v1.Condition)
    assert conds[0].last_transition_time == datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    clock.step(60)
    waiting = meta_v1.Condition(type="Ready", status="False", reason="Pending", message="still waiting")
    assert conditions.set_status_condition(conds, waiting, clock=clock)
    assert not conditions.set_status_condition(conds, waiting, clock=clock)
    assert conds[0].last_transition_time == datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    up = meta_v1.Condition(type="Ready", status="True", reason="Up", message="", observed_generation=3)
    assert conditions.set_status_condition(conds, up, clock=clock)
    assert conds[0].last_transition_time == datetime.datetime(2026, 1, 1, 0, 1, tzinfo=datetime.UTC)
    assert conds[0].observed_generation == 3
    assert conditions.is_status_condition_true(conds, "Ready")
    assert conditions.find_status_condition(conds, "Ready") is conds[0]
    assert conditions.remove_status_condition(conds, "Ready") and conds == []


@pytest.mark.parametrize(
    ("original", "modified", "patch"),
    [
        ({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 2}}, {"b": {"d": None}}),
        ({"a": [1, 2]}, {"a": [1]}, {"a": [1]}),
        ({"a": 1}, {"a": 1}, {}),
        ({}, {"x": {"y": 1}}, {"x": {"y": 1}}),
    ],
    ids=["nested-delete", "array-whole", "equal", "added"],
)
def test_create_merge_patch(original: Any, modified: Any, patch: Any) -> None:
    """The created patch is minimal and turns original into modified."""
    assert mergepatch.create_merge_patch(original, modified) == patch
    assert mergepatch.merge_patch(original, patch) == modified
