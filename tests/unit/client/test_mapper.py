"""The REST mapper against the real server's discovery, including a refresh after a stale cache."""

from __future__ import annotations

import pathlib

import orjson
import pytest

from kplane.api.gvk import GroupVersionKind, GroupVersionResource
from kplane.client import Config, discovery, dynamic, mapper, rest

DEPLOY = dynamic.Resource("apps", "v1", "deployments", "Deployment", namespaced=True)


@pytest.mark.parametrize(
    "arg",
    [
        "deploy",
        "deployments",
        "deployment",
        "Deployment",
        "deployments.apps",
        "deployments.v1.apps",
        "Deployment.apps",
        "deploy.app",
    ],
)
async def test_resolves_kubectl_forms(config: Config, arg: str) -> None:
    """Every kubectl spelling of deployments resolves to apps/v1 deployments."""
    async with rest.RESTClient(config) as rc:
        assert await mapper.RESTMapper(discovery.DiscoveryClient(rc)).resolve(arg) == DEPLOY


async def test_core_wins_and_group_selects(config: Config) -> None:
    """``events`` is core (core first); ``events.events.k8s.io`` selects the events group."""
    async with rest.RESTClient(config) as rc:
        m = mapper.RESTMapper(discovery.DiscoveryClient(rc))
        assert (await m.resolve("events")).group == ""
        assert (await m.resolve("events.events.k8s.io")).group == "events.k8s.io"
        assert (await m.resolve(GroupVersionKind("apps", "v1", "Deployment"))) == DEPLOY
        assert (await m.resolve(GroupVersionResource("apps", "", "deployments"))) == DEPLOY
        assert (await m.resolve("ns")).namespaced is False
        assert DEPLOY in await m.resources_in_category("all")


async def test_unknown_name_raises_no_match(config: Config) -> None:
    """A name nothing serves raises NoMatchError with kubectl's message."""
    async with rest.RESTClient(config) as rc:
        with pytest.raises(
            mapper.NoMatchError, match='the server doesn\'t have a resource type "nosuchthings"'
        ):
            await mapper.RESTMapper(discovery.DiscoveryClient(rc)).resolve("nosuchthings")


async def test_miss_on_stale_cache_refreshes_once(config: Config, tmp_path: pathlib.Path) -> None:
    """A cache lacking deployments (as before a CRD install) is refreshed on the miss, then it resolves."""
    async with rest.RESTClient(config) as rc:
        await discovery.DiscoveryClient(rc, cache_dir=tmp_path).resources()
        apps = tmp_path / "apps" / "v1" / "serverresources.json"
        doc = orjson.loads(apps.read_bytes())
        doc["resources"] = [r for r in doc["resources"] if not r["name"].startswith("deployments")]
        apps.write_bytes(orjson.dumps(doc))
        dc = discovery.DiscoveryClient(rc, cache_dir=tmp_path)
        m = mapper.RESTMapper(dc)
        assert not any(r.plural == "deployments" for r in await dc.resources())
        assert await m.resolve("deploy") == DEPLOY
        assert dc.fresh
