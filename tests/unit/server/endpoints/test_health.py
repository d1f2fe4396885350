"""Health endpoint output on failure and per check (upstream k8s.io/apiserver/pkg/server/healthz)."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from kplane.server.endpoints import health


async def _ok() -> None:
    return None


async def _broken() -> None:
    raise RuntimeError("disk on fire")


CHECKS = health.Health(
    [
        health.NamedCheck("ping", _ok),
        health.NamedCheck("etcd", _broken),
        health.NamedCheck("shutdown", _ok, ("readyz",)),
    ]
)


async def test_failure_is_always_verbose_and_withholds_reasons() -> None:
    """A failing check: 500, every line, `[-]etcd failed: reason withheld`, `readyz check failed`."""
    resp = await CHECKS.serve(make_mocked_request("GET", "/readyz"), ("readyz",))
    assert resp.status == 500
    assert resp.body == b"[+]ping ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n"


async def test_excluding_the_failure_passes() -> None:
    """Excluding the failing check makes the endpoint pass; non-verbose success is `ok`."""
    resp = await CHECKS.serve(make_mocked_request("GET", "/livez?exclude=etcd"), ("livez",))
    assert (resp.status, resp.body) == (200, b"ok")


@pytest.mark.parametrize(
    ("check", "status", "body"),
    [("ping", 200, b"ok"), ("etcd", 500, b"internal server error: disk on fire\n")],
)
async def test_single_check(check: str, status: int, body: bytes) -> None:
    """/<endpoint>/<check> gives the reason (these paths are not public)."""
    resp = await CHECKS.serve(make_mocked_request("GET", f"/healthz/{check}"), ("healthz", check))
    assert (resp.status, resp.body) == (status, body)
