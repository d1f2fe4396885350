"""Pod Security Standards checks: reasons and details as pod-security-admission's policy/ writes them."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.server.admission import podsecuritychecks


def _spec(**container: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "i", **container}]}


RESTRICTED_OK: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "c",
            "image": "i",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    ],
}


def test_compliant_pod_passes_restricted() -> None:
    """A pod set as the restricted profile asks violates nothing."""
    assert podsecuritychecks.violations("restricted", RESTRICTED_OK, {}) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"hostNetwork": True, "hostPID": True, **_spec()},
            ("host namespaces", "hostNetwork=true, hostPID=true"),
            id="host-namespaces",
        ),
        pytest.param(
            _spec(securityContext={"privileged": True}),
            ("privileged", 'container "c" must not set securityContext.privileged=true'),
            id="privileged",
        ),
        pytest.param(
            _spec(securityContext={"capabilities": {"add": ["NET_ADMIN", "CHOWN"]}}),
            (
                "non-default capabilities",
                'container "c" must not include "NET_ADMIN" in securityContext.capabilities.add',
            ),
            id="capabilities",
        ),
        pytest.param(
            {
                "volumes": [
                    {"name": "a", "hostPath": {"path": "/"}},
                    {"name": "b", "hostPath": {"path": "/"}},
                ],
                **_spec(),
            },
            ("hostPath volumes", 'volumes "a", "b"'),
            id="hostpath",
        ),
        pytest.param(
            _spec(ports=[{"containerPort": 80, "hostPort": 8080}]),
            ("hostPort", 'container "c" uses hostPort 8080'),
            id="hostport",
        ),
        pytest.param(
            {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, **_spec()},
            ("seccompProfile", 'pod must not set securityContext.seccompProfile.type to "Unconfined"'),
            id="seccomp",
        ),
    ],
)
def test_baseline_violations(spec: dict[str, Any], expected: tuple[str, str]) -> None:
    """Each baseline check reports upstream's reason and detail."""
    assert podsecuritychecks.violations("baseline", spec, {}) == [expected]


def test_restricted_lists_several_containers_init_first() -> None:
    """Several containers are named together, init containers first; hostPath is reported as a
    restricted volume type at ``restricted`` (the restricted check overrides the baseline one)."""
    spec = {
        **RESTRICTED_OK,
        "initContainers": [{"name": "init", "image": "i"}],
        "volumes": [{"name": "v", "hostPath": {"path": "/"}}],
    }
    reasons = dict(podsecuritychecks.violations("restricted", spec, {}))
    assert reasons["allowPrivilegeEscalation != false"] == (
        'container "init" must set securityContext.allowPrivilegeEscalation=false'
    )
    assert reasons["restricted volume types"] == 'volume "v" uses restricted volume type "hostPath"'
    assert "hostPath volumes" not in reasons


def test_privileged_level_allows_everything() -> None:
    """``privileged`` has no checks."""
    assert podsecuritychecks.violations("privileged", _spec(securityContext={"privileged": True}), {}) == []
