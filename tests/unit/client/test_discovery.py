"""Discovery against a real kplane server (aggregated), a legacy-only local server, and the disk cache."""

from __future__ import annotations

import datetime
import pathlib
from collections.abc import Awaitable, Callable

import orjson
import pytest
from aiohttp import web

from kplane._util import clock as clock_mod
from kplane.client import Config, discovery, rest

Start = Callable[[Callable[[web.Request], Awaitable[web.StreamResponse]]], Awaitable[str]]

LEGACY = {
    "/api": {"kind": "APIVersions", "versions": ["v1"]},
    "/apis": {
        "kind": "APIGroupList",
        "groups": [
            {
                "name": "apps",
                "versions": [
                    {"groupVersion": "apps/v1beta1", "version": "v1beta1"},
                    {"groupVersion": "apps/v1", "version": "v1"},
                ],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
            }
        ],
    },
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "pods",
                "singularName": "pod",
                "namespaced": True,
                "kind": "Pod",
                "verbs": ["get"],
                "shortNames": ["po"],
            },
            {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
        ],
    },
    "/apis/apps/v1": {
        "kind": "APIResourceList",
        "groupVersion": "apps/v1",
        "resources": [
            {
                "name": "deployments",
                "singularName": "deployment",
                "namespaced": True,
                "kind": "Deployment",
                "verbs": ["get"],
                "shortNames": ["deploy"],
                "categories": ["all"],
            },
        ],
    },
    "/apis/apps/v1beta1": {
        "kind": "APIResourceList",
        "groupVersion": "apps/v1beta1",
        "resources": [
            {
                "name": "deployments",
                "singularName": "deployment",
                "namespaced": True,
                "kind": "Deployment",
                "verbs": ["get"],
            },
        ],
    },
}


class Later(clock_mod.RealClock):
    """The real clock, ``ahead`` seconds in the future."""

    def __init__(self, ahead: float) -> None:
        self.ahead = ahead

    def now(self) -> datetime.datetime:
        return super().now() + datetime.timedelta(seconds=self.ahead)


async def legacy_server(start: Start, hits: list[str]) -> str:
    async def handler(request: web.Request) -> web.StreamResponse:
        hits.append(request.path)
        doc = LEGACY.get(request.path)
        if doc is None:
            return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)
        return web.json_response(doc)

    return await start(handler)


async def test_aggregated_discovery_of_real_server(config: Config) -> None:
    """The real server's discovery lists core first and deployments with short names and status."""
    async with rest.RESTClient(config) as rc:
        resources = await discovery.DiscoveryClient(rc).resources()
    assert resources[0].group == ""
    deploy = next(r for r in resources if r.plural == "deployments")
    assert (deploy.group, deploy.version, deploy.kind, deploy.namespaced) == (
        "apps",
        "v1",
        "Deployment",
        True,
    )
    assert "deploy" in deploy.short_names and "status" in deploy.subresources
    assert not any("/" in r.plural for r in resources)


async def test_legacy_fallback_orders_preferred_first(local_server: Start) -> None:
    """Without aggregated discovery each group-version is fetched; the preferred version comes first."""
    hits: list[str] = []
    url = await legacy_server(local_server, hits)
    async with rest.RESTClient(Config(host=url, qps=0)) as rc:
        dc = discovery.DiscoveryClient(rc)
        resources = await dc.resources()
    assert [(r.group, r.version, r.plural) for r in resources] == [
        ("", "v1", "pods"),
        ("apps", "v1", "deployments"),
        ("apps", "v1beta1", "deployments"),
    ]
    assert resources[0].subresources == ("status",)
    assert sorted(hits) == ["/api", "/api/v1", "/apis", "/apis/apps/v1", "/apis/apps/v1beta1"]


async def test_disk_cache_layout_and_reuse(local_server: Start, tmp_path: pathlib.Path) -> None:
    """A second client reads the disk cache without requests; it is not ``fresh``."""
    hits: list[str] = []
    url = await legacy_server(local_server, hits)
    async with rest.RESTClient(Config(host=url, qps=0)) as rc:
        first = discovery.DiscoveryClient(rc, cache_dir=tmp_path)
        want = await first.resources()
        assert first.fresh
        assert (tmp_path / "servergroups.json").is_file()
        assert (tmp_path / "apps" / "v1" / "serverresources.json").is_file()
        assert (tmp_path / "v1" / "serverresources.json").stat().st_mode & 0o777 == 0o660
        groups = orjson.loads((tmp_path / "servergroups.json").read_bytes())
        assert (
            groups["groups"][0]["name"] == "" and groups["groups"][1]["preferredVersion"]["version"] == "v1"
        )
        count = len(hits)
        second = discovery.DiscoveryClient(rc, cache_dir=tmp_path)
        assert await second.resources() == want
        assert len(hits) == count and not second.fresh


async def test_disk_cache_expires_after_ttl(local_server: Start, tmp_path: pathlib.Path) -> None:
    """Cache files older than the TTL are ignored and rewritten from the server."""
    hits: list[str] = []
    url = await legacy_server(local_server, hits)
    async with rest.RESTClient(Config(host=url, qps=0)) as rc:
        await discovery.DiscoveryClient(rc, cache_dir=tmp_path).resources()
        count = len(hits)
        stale = discovery.DiscoveryClient(rc, cache_dir=tmp_path, clock=Later(discovery.DEFAULT_TTL + 1))
        await stale.resources()
        assert len(hits) > count and stale.fresh


async def test_invalidate_refetches(local_server: Start, tmp_path: pathlib.Path) -> None:
    """After ``invalidate`` a client that read someone else's cache goes to the server."""
    hits: list[str] = []
    url = await legacy_server(local_server, hits)
    async with rest.RESTClient(Config(host=url, qps=0)) as rc:
        await discovery.DiscoveryClient(rc, cache_dir=tmp_path).resources()
        reader = discovery.DiscoveryClient(rc, cache_dir=tmp_path)
        await reader.resources()
        count = len(hits)
        reader.invalidate()
        await reader.resources()
        assert len(hits) > count and reader.fresh


def test_default_cache_dir_follows_kubectl(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache directory is $KUBECACHEDIR/discovery/<host with unsafe characters as _>."""
    monkeypatch.setenv("KUBECACHEDIR", "/tmp/kc")
    path = discovery.default_cache_dir(Config(host="https://127.0.0.1:6443"))
    assert path == pathlib.Path("/tmp/kc/discovery/127.0.0.1_6443")
