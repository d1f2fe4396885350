"""Objects kube-apiserver keeps about its own API: one local APIService per served built-in
group-version, and the mandatory API Priority and Fairness configuration.

Both are created at start when missing and never overwritten (a restart keeps what users changed,
except that a deleted one comes back). APIService priorities are upstream's table
(``pkg/controlplane/apiserver/aggregator.go`` and ``pkg/controlplane/apis/...``, 1.32); the
flowcontrol objects are upstream's mandatory ``exempt`` and ``catch-all`` FlowSchemas and
PriorityLevelConfigurations (``apiserver/pkg/apis/flowcontrol/bootstrap/default.go``). The
suggested (non-mandatory) configuration is not created.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kplane.api import errors
from kplane.api.catalog import Catalog, ResourceRecord
from kplane.server.registry.store import Registry

Object = dict[str, Any]

# (group, version) -> (groupPriorityMinimum, versionPriority), upstream's values.
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
}

_EVERYTHING_RESOURCE = {
    "verbs": ["*"],
    "apiGroups": ["*"],
    "resources": ["*"],
    "clusterScope": True,
    "namespaces": ["*"],
}
_EVERYTHING_NON_RESOURCE = {"verbs": ["*"], "nonResourceURLs": ["*"]}
_AUTOUPDATE = {"apf.kubernetes.io/autoupdate-spec": "true"}


def _group(name: str) -> Object:
    return {"kind": "Group", "group": {"name": name}}


def local_apiservices(catalog: Catalog) -> list[Object]:
    """The local APIService of every served built-in group-version upstream registers."""
    out = []
    served = {(r.group, r.version) for r in catalog if not r.custom}
    for (group, version), (group_priority, version_priority) in PRIORITIES.items():
        if (group, version) not in served:
            continue
        spec: Object = {
            "version": version,
            "groupPriorityMinimum": group_priority,
            "versionPriority": version_priority,
        }
        if group:
            spec = {"group": group, **spec}
        out.append(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {
                    "name": f"{version}.{group}",
                    "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"},
                },
                "spec": spec,
            }
        )
    return out


def mandatory_flowcontrol() -> list[tuple[str, Object]]:
    """Upstream's mandatory APF objects, as (plural, object) pairs."""
    meta = {"annotations": _AUTOUPDATE}
    api = "flowcontrol.apiserver.k8s.io/v1"
    return [
        (
            "prioritylevelconfigurations",
            {
                "apiVersion": api,
                "kind": "PriorityLevelConfiguration",
                "metadata": {"name": "exempt", **meta},
                "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
            },
        ),
        (
            "prioritylevelconfigurations",
            {
                "apiVersion": api,
                "kind": "PriorityLevelConfiguration",
                "metadata": {"name": "catch-all", **meta},
                "spec": {
                    "type": "Limited",
                    "limited": {
                        "nominalConcurrencyShares": 5,
                        "lendablePercent": 0,
                        "limitResponse": {"type": "Reject"},
                    },
                },
            },
        ),
        (
            "flowschemas",
            {
                "apiVersion": api,
                "kind": "FlowSchema",
                "metadata": {"name": "exempt", **meta},
                "spec": {
                    "priorityLevelConfiguration": {"name": "exempt"},
                    "matchingPrecedence": 1,
                    "rules": [
                        {
                            "subjects": [_group("system:masters")],
                            "resourceRules": [_EVERYTHING_RESOURCE],
                            "nonResourceRules": [_EVERYTHING_NON_RESOURCE],
                        }
                    ],
                },
            },
        ),
        (
            "flowschemas",
            {
                "apiVersion": api,
                "kind": "FlowSchema",
                "metadata": {"name": "catch-all", **meta},
                "spec": {
                    "priorityLevelConfiguration": {"name": "catch-all"},
                    "matchingPrecedence": 10000,
                    "distinguisherMethod": {"type": "ByUser"},
                    "rules": [
                        {
                            "subjects": [_group("system:unauthenticated"), _group("system:authenticated")],
                            "resourceRules": [_EVERYTHING_RESOURCE],
                            "nonResourceRules": [_EVERYTHING_NON_RESOURCE],
                        }
                    ],
                },
            },
        ),
    ]


async def _ensure(registry: Registry, record: ResourceRecord, obj: Object) -> None:
    name = obj["metadata"]["name"]
    try:
        await registry.get(record, "", name)
        return
    except errors.NotFound:
        pass
    try:
        await registry.create(record, "", obj)
    except errors.AlreadyExists:
        pass


async def ensure_api_objects(registry: Registry, catalog: Catalog) -> None:
    """Create every missing local APIService and mandatory flowcontrol object (concurrently, so
    that a first start commits them together)."""
    todo: list[tuple[ResourceRecord, Object]] = []
    apiservices = catalog.lookup("apiregistration.k8s.io", "v1", "apiservices")
    if apiservices is not None:
        todo.extend((apiservices, obj) for obj in local_apiservices(catalog))
    for plural, obj in mandatory_flowcontrol():
        record = catalog.lookup("flowcontrol.apiserver.k8s.io", "v1", plural)
        if record is not None:
            todo.append((record, obj))
    await asyncio.gather(*(_ensure(registry, record, obj) for record, obj in todo))
