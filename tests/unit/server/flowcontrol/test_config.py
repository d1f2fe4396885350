"""FlowSchema matching and the configuration in effect: upstream's bootstrap objects route each
kind of user as a 1.32 kube-apiserver does (``kubectl get flowschemas`` on a real cluster lists
the same precedences), seats are ``ceil(600 * shares / 245)``, dangling schemas are skipped."""

from __future__ import annotations

import copy

from kplane._util.clock import FakeClock
from kplane.server.auth import authn
from kplane.server.flowcontrol import bootstrap
from kplane.server.flowcontrol.config import PREFIX, FlowControl
from kplane.server.flowcontrol.matching import Schema, request_of

ADMIN = authn.UserInfo("kplane-admin", groups=("system:masters", "system:authenticated"))
ALICE = authn.UserInfo("alice", groups=("devs", "system:authenticated"))
BOT = authn.UserInfo(
    "system:serviceaccount:team:bot",
    groups=("system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"),
)
KS_BOT = authn.UserInfo(
    "system:serviceaccount:kube-system:endpoint-controller",
    groups=("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"),
)
NODE = authn.UserInfo("system:node:n1", groups=("system:nodes", "system:authenticated"))
ANON = authn.UserInfo("system:anonymous", groups=("system:unauthenticated",))

LIST_PODS = request_of("list", True, "", "pods", "", "team", "")
GET_NODE_STATUS = request_of("get", True, "", "nodes", "status", "", "")
HEALTHZ = request_of("get", False, "", "", "", "", "/healthz")


def _loaded(server_limit: int = 600) -> FlowControl:
    control = FlowControl(server_limit, 15.0, FakeClock())
    for i, (plural, obj) in enumerate(bootstrap.all_objects()):
        obj = copy.deepcopy(obj)
        obj["metadata"]["uid"] = f"uid-{i}"
        control.apply(f"{PREFIX}{plural}/{obj['metadata']['name']}", obj)
    return control


def _route(control: FlowControl, user: authn.UserInfo, request: tuple[str, bool, str, str, str, str]) -> str:
    found = control.classify(user, request)
    return f"{found.schema.name}/{found.level.name}"


def test_bootstrap_routes() -> None:
    """Each kind of caller lands where upstream's bootstrap configuration sends it."""
    control = _loaded()
    assert _route(control, ADMIN, LIST_PODS) == "exempt/exempt"
    assert _route(control, ALICE, LIST_PODS) == "global-default/global-default"
    assert _route(control, ANON, HEALTHZ) == "probes/exempt"
    assert _route(control, BOT, LIST_PODS) == "service-accounts/workload-low"
    assert _route(control, KS_BOT, LIST_PODS) == "kube-system-service-accounts/workload-high"
    update_ep = request_of("update", True, "", "endpoints", "", "default", "")
    assert _route(control, KS_BOT, update_ep) == "endpoint-controller/workload-high"
    assert _route(control, NODE, GET_NODE_STATUS) == "system-node-high/node-high"
    assert _route(control, NODE, LIST_PODS) == "system-nodes/system"
    lease = request_of("update", True, "coordination.k8s.io", "leases", "", "kube-system", "")
    assert _route(control, KS_BOT, lease) == "system-leader-election/leader-election"


def test_seats_from_shares() -> None:
    """Nominal seats are ceil(server limit * shares / total shares) (total 245 here)."""
    control = _loaded(600)
    seats = {name: lv.queue_set.limit for name, lv in control.levels.items() if lv.queue_set is not None}
    assert seats == {
        "catch-all": 13,
        "system": 74,
        "node-high": 98,
        "leader-election": 25,
        "workload-high": 98,
        "workload-low": 245,
        "global-default": 49,
    }
    assert control.levels["exempt"].queue_set is None


def test_distinguishers_and_cache() -> None:
    """ByUser flows differ per user, ByNamespace per namespace; answers are cached until a change."""
    control = _loaded()
    first = control.classify(ALICE, LIST_PODS)
    assert control.classify(ALICE, LIST_PODS) is first
    bob = authn.UserInfo("bob", groups=("system:authenticated",))
    assert control.classify(bob, LIST_PODS).flow != first.flow
    other_ns = request_of("list", True, "", "pods", "", "other", "")
    assert control.classify(KS_BOT, LIST_PODS).flow != control.classify(KS_BOT, other_ns).flow
    control.apply(PREFIX + "flowschemas/custom", _custom_schema("custom", "missing-level"))
    assert control.classify(ALICE, LIST_PODS) is not first  # rebuilt


def _custom_schema(name: str, level: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "uid": "u-custom"},
        "spec": {
            "priorityLevelConfiguration": {"name": level},
            "matchingPrecedence": 50,
            "rules": [
                {
                    "subjects": [{"kind": "User", "user": {"name": "alice"}}],
                    "resourceRules": [
                        {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["team"]}
                    ],
                }
            ],
        },
    }


def test_dangling_schema_is_skipped_until_its_level_exists() -> None:
    """A schema naming a missing level is dangling and matches nothing; once the level exists,
    it routes its subjects there."""
    control = _loaded()
    control.apply(PREFIX + "flowschemas/custom", _custom_schema("custom", "strict"))
    assert control.dangling()["custom"] == ("strict", True)
    assert _route(control, ALICE, LIST_PODS) == "global-default/global-default"
    level = {
        "metadata": {"name": "strict", "uid": "u-strict"},
        "spec": {
            "type": "Limited",
            "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}},
        },
    }
    control.apply(PREFIX + "prioritylevelconfigurations/strict", level)
    assert control.dangling()["custom"] == ("strict", False)
    assert _route(control, ALICE, LIST_PODS) == "custom/strict"
    assert _route(control, ALICE, request_of("list", True, "", "pods", "", "elsewhere", "")).startswith(
        "global"
    )
    assert _route(control, ALICE, request_of("get", True, "", "pods", "", "team", "")).startswith("global")


def test_nonresource_patterns_and_cluster_scope() -> None:
    """``/prefix/*`` covers paths under the prefix; a cluster-scoped request needs clusterScope."""
    schema = Schema.compile(
        {
            "metadata": {"name": "s"},
            "spec": {
                "priorityLevelConfiguration": {"name": "x"},
                "rules": [
                    {
                        "subjects": [{"kind": "Group", "group": {"name": "*"}}],
                        "resourceRules": [
                            {"verbs": ["*"], "apiGroups": ["*"], "resources": ["nodes"], "namespaces": ["*"]}
                        ],
                        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics/*"]}],
                    }
                ],
            },
        }
    )
    assert schema.precedence == 1000
    assert schema.matches(ALICE, request_of("get", False, "", "", "", "", "/metrics/slis"))
    assert not schema.matches(ALICE, request_of("get", False, "", "", "", "", "/healthz"))
    assert not schema.matches(ALICE, request_of("get", True, "", "nodes", "", "", ""))  # no clusterScope
    assert schema.matches(ALICE, request_of("get", True, "", "nodes", "", "ns", ""))


def test_without_catch_all_the_builtin_one_applies() -> None:
    """With no schema matching (catch-all deleted), upstream's built-in catch-all is used."""
    control = FlowControl(600, 15.0, FakeClock())
    found = control.classify(ALICE, LIST_PODS)
    assert (found.schema.name, found.level.name) == ("catch-all", "catch-all")


def test_queuing_values_are_bounded() -> None:
    """Queuing values upstream's validation refuses (not validated at write here) are clamped, so
    dealing a hand stays cheap."""
    control = _loaded()
    level = {
        "metadata": {"name": "huge", "uid": "u-huge"},
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 1,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": 10**12, "handSize": 10**9, "queueLengthLimit": 1},
                },
            },
        },
    }
    control.apply(PREFIX + "prioritylevelconfigurations/huge", level)
    queue_set = control.levels["huge"].queue_set
    assert queue_set is not None and queue_set.queuing is not None
    assert (queue_set.queuing.queues, queue_set.queuing.hand_size) == (10_000_000, 64)
