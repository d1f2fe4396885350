# ruff: noqa: E501
"""Texts of the files ``kplane create api`` writes (``string.Template``)."""

VERSION_INIT = '''"""API group $full_group, version $version."""

GROUP = "$full_group"
VERSION = "$version"
'''

TYPES = '''"""The $kind custom resource, version $version: what a user asks for (spec) and what the controller
reports (status). Constraints are ``Annotated`` markers; run ``make manifests`` after a change to
write the CRD (``config/crd/bases``)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from kplane.client.models import meta_v1
from kplane.runtime import markers

from $package.api.$version import GROUP, VERSION


class Condition(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One aspect of the object's state, as Kubernetes conditions are written."""

    type: Annotated[str, markers.MinLength(1), markers.MaxLength(316)]
    """The aspect, in CamelCase (for example Ready)."""
    status: Annotated[str, markers.Enum("True", "False", "Unknown")]
    """Whether the aspect holds."""
    last_transition_time: Annotated[str, markers.Format("date-time")] = msgspec.field(
        name="lastTransitionTime"
    )
    """When status last changed."""
    reason: Annotated[str, markers.MinLength(1), markers.MaxLength(1024)]
    """Why, in CamelCase, for machines."""
    message: Annotated[str, markers.MaxLength(32768)]
    """Why, for humans."""
    observed_generation: Annotated[int, markers.Minimum(0)] | None = msgspec.field(
        default=None, name="observedGeneration"
    )
    """The metadata.generation the condition was computed from."""


class ${kind}Spec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the user asks of a $kind."""

    # TODO(user): declare the desired state here.
    foo: Annotated[str, markers.MaxLength(64)] | None = None
    """An example field: edit or remove it."""


class ${kind}Status(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the controller last observed of a $kind."""

    observed_generation: int | None = msgspec.field(default=None, name="observedGeneration")
    """The metadata.generation the status describes."""
    conditions: Annotated[list[Condition], markers.ListMapKeys("type")] | None = None
    """The object's conditions, one per type."""


@markers.kind(
    group=GROUP,
    version=VERSION,
    scope="$scope",
    status=True,
    printer_columns=(
        markers.PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        markers.PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
)
class $kind(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A $kind of the $full_group API."""

    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None
    spec: ${kind}Spec | None = None
    status: ${kind}Status | None = None
'''

CONTROLLER = '''"""The $kind controller: brings each $kind to its spec and reports it in its status.

``setup`` registers it with the manager (``main.setup`` calls it). The permissions it needs are
declared on the reconciler; ``make manifests`` turns them into ``config/rbac/role.yaml``.
"""

from __future__ import annotations

from kplane import runtime
from kplane.api import errors
from kplane.runtime import conditions, rbac

from $package.api.$version import GROUP
from $package.api.$version.$module import Condition, $kind, ${kind}Status


@rbac.permission(
    groups=[GROUP],
    resources=["$plural"],
    verbs=["get", "list", "watch", "create", "update", "patch", "delete"],
)
@rbac.permission(groups=[GROUP], resources=["$plural/status"], verbs=["get", "update", "patch"])
@rbac.permission(groups=[GROUP], resources=["$plural/finalizers"], verbs=["update"])
class ${kind}Reconciler:
    """Reconciles one $kind at a time (safe to run with several workers)."""

    def __init__(self, client: runtime.Client) -> None:
        self.client = client

    async def reconcile(self, request: runtime.Request) -> runtime.Result:
        try:
            obj = await self.client.get($kind, request.name, request.namespace)
        except errors.NotFound:
            return runtime.Result()  # deleted: objects it owns go with it
        # TODO(user): make the world match obj.spec here (create or update owned objects...).
        generation = obj.metadata.generation if obj.metadata else None
        status = obj.status = obj.status or ${kind}Status()
        conds = status.conditions = status.conditions or []
        ready = Condition(
            type="Ready",
            status="True",
            reason="Reconciled",
            message="the spec is applied",
            last_transition_time="",  # set_status_condition stamps it when the status changes
            observed_generation=generation,
        )
        if conditions.set_status_condition(conds, ready) or status.observed_generation != generation:
            status.observed_generation = generation
            await self.client.update_status(obj)
            runtime.logger().info("reconciled generation %s", generation)
        return runtime.Result()


async def setup(manager: runtime.Manager) -> runtime.Controller:
    """Register the $kind controller with ``manager`` (spec changes only: status writes do not
    trigger another reconcile)."""
    return await (
        runtime.Builder(manager)
        .for_($kind, predicates=[runtime.GenerationChanged()])
        .named("$lower")
        .complete(${kind}Reconciler(manager.client))
    )
'''

CONTROLLER_TEST = '''"""The $kind controller against an in-process kplane control plane (CRDs from the types)."""

from __future__ import annotations

from pathlib import Path

from kplane import testing
from kplane.client.models import meta_v1

from $package.api.$version.$module import $kind, ${kind}Spec
from $package.controllers import $module as controller
from tests import support


async def test_${module}_becomes_ready(kplane: testing.ControlPlane, tmp_path: Path) -> None:
    manager = support.new_manager(kplane, tmp_path)
    await controller.setup(manager)
    async with support.running(manager):
        api = kplane.client.resource($kind$namespace_arg)
        sample = $kind(metadata=meta_v1.ObjectMeta(name="sample"), spec=${kind}Spec(foo="bar"))
        await api.create(sample)

        async def ready() -> $kind:
            obj = await api.get("sample")
            assert obj.status is not None and obj.status.conditions, "no status yet"
            condition = obj.status.conditions[0]
            assert (condition.type, condition.status) == ("Ready", "True")
            assert obj.metadata is not None
            assert obj.status.observed_generation == obj.metadata.generation
            return obj

        await testing.eventually(ready, timeout=10)
'''

SAMPLE = """apiVersion: $full_group/$version
kind: $kind
metadata:
  name: $lower-sample
spec:
  foo: bar
"""
