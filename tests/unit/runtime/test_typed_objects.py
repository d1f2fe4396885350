"""Typed models through the manager's client and the helpers: what goes in as a model comes back
as one, and finalizers and owner references work on models as on dicts (controller-runtime's
``controllerutil`` helpers take any ``client.Object``)."""

from __future__ import annotations

import pytest

from kplane import runtime, testing
from kplane.client.models import core_v1, meta_v1
from kplane.runtime import finalizers
from tests.e2e import runtime_support as rs

FINALIZER = "example.kplane.dev/cleanup"


async def test_models_in_models_out_with_helpers(kplane: testing.ControlPlane) -> None:
    """Writes of models return models of the same class (kind from the class when unset); the
    finalizer and owner-reference helpers change models in place."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    client = manager.client
    try:
        owner = await client.create(
            core_v1.ConfigMap(metadata=meta_v1.ObjectMeta(name="owner", namespace="default"))
        )
        assert isinstance(owner, core_v1.ConfigMap) and owner.metadata is not None and owner.metadata.uid
        assert (owner.api_version, owner.kind) == ("v1", "ConfigMap")

        assert finalizers.add_finalizer(owner, FINALIZER) and not finalizers.add_finalizer(owner, FINALIZER)
        assert finalizers.contains_finalizer(owner, FINALIZER)
        owner = await client.update(owner)
        assert isinstance(owner, core_v1.ConfigMap) and owner.metadata is not None
        assert owner.metadata.finalizers == [FINALIZER]

        child = core_v1.Secret(
            metadata=meta_v1.ObjectMeta(name="child", namespace="default"), string_data={"k": "v"}
        )
        runtime.set_controller_reference(owner, child)
        assert child.metadata is not None and child.metadata.owner_references == [
            meta_v1.OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid,
                                   controller=True, block_owner_deletion=True)
        ]  # fmt: skip
        child = await client.apply(child)
        assert isinstance(child, core_v1.Secret)
        assert runtime.ownership.is_controlled_by(child, owner)
        other = core_v1.ConfigMap(
            api_version="v1",
            kind="ConfigMap",
            metadata=meta_v1.ObjectMeta(name="other", namespace="default", uid="x"),
        )
        # upstream's AlreadyOwnedError text (controllerutil.go)
        with pytest.raises(
            runtime.AlreadyOwnedError,
            match="Object default/child is already owned by another ConfigMap controller owner",
        ):
            runtime.set_controller_reference(other, child)
        with pytest.raises(runtime.AlreadyOwnedError) as owned:
            runtime.set_controller_reference(other, child)
        assert owned.value.object is child and owned.value.owner["name"] == "owner"

        assert finalizers.remove_finalizer(owner, FINALIZER)
        owner = await client.update(owner)
        assert owner.metadata is not None and not owner.metadata.finalizers
        assert not finalizers.is_being_deleted(owner)
    finally:
        await manager.api.close()


async def test_create_or_update_and_patch_on_models(kplane: testing.ControlPlane) -> None:
    """The mutate function gets the model; an unchanged model is no write (``unchanged``), and the
    model passed in holds the server's object afterwards."""
    assert kplane.config is not None
    manager = rs.new_manager(kplane.config)
    seen: list[type] = []

    def want(data: dict[str, str]) -> runtime.mutating.MutateFn[core_v1.ConfigMap]:
        def mutate(cm: core_v1.ConfigMap) -> None:
            seen.append(type(cm))
            cm.data = dict(data)

        return mutate

    def labelled(cm: core_v1.ConfigMap) -> None:
        assert cm.metadata is not None
        cm.metadata.labels = {"team": "a"}

    try:
        cm = core_v1.ConfigMap(metadata=meta_v1.ObjectMeta(name="cu", namespace="default"))
        result = await runtime.create_or_update(manager.client, cm, want({"a": "1"}))
        assert result == runtime.OperationResult.CREATED
        assert cm.metadata is not None and cm.metadata.uid and cm.data == {"a": "1"}
        created_rv = cm.metadata.resource_version
        # The read goes to the cache: wait until it has the object.
        await testing.eventually(lambda: manager.client.get(core_v1.ConfigMap, "cu", "default"))
        result = await runtime.create_or_update(manager.client, cm, want({"a": "1"}))
        assert result == runtime.OperationResult.NONE
        assert cm.metadata is not None and cm.metadata.resource_version == created_rv
        result = await runtime.create_or_update(manager.client, cm, want({"b": "2"}))
        assert result == runtime.OperationResult.UPDATED
        assert (
            cm.data == {"b": "2"} and cm.metadata is not None and cm.metadata.resource_version != created_rv
        )

        async def updated_in_cache() -> bool:
            cached = await manager.client.get(core_v1.ConfigMap, "cu", "default")
            return cached.data == {"b": "2"}

        await testing.eventually(updated_in_cache)
        assert await runtime.create_or_patch(manager.client, cm, labelled) == runtime.OperationResult.UPDATED
        assert cm.metadata is not None and cm.metadata.labels == {"team": "a"} and cm.data == {"b": "2"}
        assert set(seen) == {core_v1.ConfigMap}
    finally:
        await manager.api.close()
