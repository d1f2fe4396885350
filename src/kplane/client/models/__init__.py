"""Typed models of the built-in Kubernetes kinds, one module per group-version (generated).

``msgspec.json.decode(data, type=apps_v1.Deployment)`` decodes; ``msgspec.json.encode`` encodes.
Each module is imported on first use (all of them cost ~7 MiB of memory), so a program pays only
for the kinds it uses. Regenerate with ``make models``; do not edit."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kplane.client.models import (
        admissionregistration_v1,
        apiextensions_v1,
        apiregistration_v1,
        apps_v1,
        authentication_v1,
        authorization_v1,
        autoscaling_v1,
        autoscaling_v2,
        batch_v1,
        certificates_v1,
        coordination_v1,
        core_v1,
        discovery_v1,
        events_v1,
        flowcontrol_v1,
        meta_v1,
        networking_v1,
        node_v1,
        policy_v1,
        rbac_v1,
        scheduling_v1,
        storage_v1,
    )

__all__ = [
    "admissionregistration_v1",
    "apiextensions_v1",
    "apiregistration_v1",
    "apps_v1",
    "authentication_v1",
    "authorization_v1",
    "autoscaling_v1",
    "autoscaling_v2",
    "batch_v1",
    "certificates_v1",
    "coordination_v1",
    "core_v1",
    "discovery_v1",
    "events_v1",
    "flowcontrol_v1",
    "meta_v1",
    "networking_v1",
    "node_v1",
    "policy_v1",
    "rbac_v1",
    "scheduling_v1",
    "storage_v1",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
