"""Client-side load for the concurrency and crash tests: many clients against one real server.

Two kinds of client live here. ``Endpoint`` + ``create_until_broken`` drive aiohttp tasks over TLS
with the kubeconfig's client certificate (the crash test: as many creates as the server will take,
each acknowledgement recorded, until the server dies). ``increment`` is one thread's worth of
read-modify-write increments through the official ``kubernetes`` client (the concurrency test).

Contract of the recorded acknowledgements: an ``Ack`` is appended only after the client has read a
complete ``201 Created`` response and its body, so every ``Ack`` is a write the server promised.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

# --- TLS endpoint from a kubeconfig -------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """Where a server listens and how to reach it: URL and an ``ssl`` context with the client cert."""

    url: str
    ssl: ssl.SSLContext


def endpoint_from_kubeconfig(kubeconfig: Path, *, tmp_dir: Path) -> Endpoint:
    """Read the current context of ``kubeconfig``; write its CA, cert and key data under ``tmp_dir``.

    The ``ssl`` module loads certificates from files only, hence the files; ``tmp_dir`` should be a
    test's private temporary directory.
    """
    doc = yaml.safe_load(kubeconfig.read_text())
    ctx_name = doc["current-context"]
    ctx = next(c["context"] for c in doc["contexts"] if c["name"] == ctx_name)
    cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in doc["users"] if u["name"] == ctx["user"])
    tmp_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for key, fname in (
        ("certificate-authority-data", "ca.crt"),
        ("client-certificate-data", "client.crt"),
        ("client-key-data", "client.key"),
    ):
        source = cluster if key.startswith("certificate-authority") else user
        path = tmp_dir / fname
        path.write_bytes(base64.b64decode(source[key]))
        paths[key] = path
    context = ssl.create_default_context(cafile=str(paths["certificate-authority-data"]))
    context.load_cert_chain(str(paths["client-certificate-data"]), str(paths["client-key-data"]))
    return Endpoint(url=str(cluster["server"]).rstrip("/"), ssl=context)


def session(endpoint: Endpoint, *, connections: int) -> aiohttp.ClientSession:
    """An aiohttp session for ``endpoint`` with at most ``connections`` pooled connections.

    Call it inside a running event loop; the caller closes it (``async with``).
    """
    connector = aiohttp.TCPConnector(ssl=endpoint.ssl, limit=connections, force_close=False)
    return aiohttp.ClientSession(base_url=endpoint.url, connector=connector, raise_for_status=False)


# --- Create load until the server dies ------------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    """A create the server acknowledged with 201: the object's name and the resourceVersion it got."""

    name: str
    resource_version: str


@dataclass
class CreateLoad:
    """What a create load saw. ``acks`` are in the order the responses were read."""

    acks: list[Ack] = field(default_factory=list)
    unexpected: list[tuple[int, str]] = field(default_factory=list)
    """Responses other than 201 (status, body): none are expected from a healthy server."""
    transport_errors: int = 0
    """Requests that failed without a response (the server died under them)."""


def config_map(name: str, *, payload: str = "x" * 64) -> dict[str, Any]:
    """A small ConfigMap manifest named ``name``."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"payload": payload}}


async def create_until_broken(
    http: aiohttp.ClientSession,
    *,
    namespace: str,
    clients: int,
    prefix: str,
    load: CreateLoad,
    on_ack: Callable[[CreateLoad], None] = lambda _: None,
) -> None:
    """Run ``clients`` tasks that each create ConfigMaps ``<prefix>-<client>-<n>`` back to back.

    Every 201 appends an ``Ack`` to ``load.acks`` and then calls ``on_ack(load)``; any other status
    is kept in ``load.unexpected`` and stops that task. A task also stops at its first transport error
    (counted in ``load.transport_errors``: the server is gone), so this returns once every task has
    met the dead server or an unexpected answer. Names never repeat, so a 409
    AlreadyExists can only mean the server lost track of its own state.
    """
    path = f"/api/v1/namespaces/{namespace}/configmaps"

    async def one_client(client: int) -> None:
        n = 0
        while True:
            name = f"{prefix}-{client}-{n}"
            n += 1
            try:
                async with http.post(path, json=config_map(name)) as resp:
                    body = await resp.read()
            except (TimeoutError, aiohttp.ClientError, ConnectionError):
                load.transport_errors += 1
                return
            if resp.status == 201:
                meta = json.loads(body)["metadata"]
                load.acks.append(Ack(meta["name"], meta["resourceVersion"]))
                on_ack(load)
            else:
                load.unexpected.append((resp.status, body.decode(errors="replace")))
                return

    await asyncio.gather(*(one_client(c) for c in range(clients)))


# --- Read-modify-write increments through the official client -------------------------------------

JSON_HEADERS = {"Content-Type": "application/json"}
"""Passed as ``_headers`` on POST and PUT: client 37 sends those without a Content-Type and ignores
``_content_type`` there."""


def core_api(kubeconfig: Path, *, connections: int = 1) -> k8s.CoreV1Api:
    """A ``CoreV1Api`` on its own ``ApiClient`` (own connection pool) loaded from ``kubeconfig``."""
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), client_configuration=configuration
    )
    configuration.connection_pool_maxsize = connections
    return k8s.CoreV1Api(k8s.ApiClient(configuration))


def counter_map(name: str) -> k8s.V1ConfigMap:
    """A ConfigMap ``name`` whose ``data.counter`` is ``"0"``."""
    return k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name), data={"counter": "0"})


def counter(cm: k8s.V1ConfigMap) -> int:
    """The ``data.counter`` of ``cm`` as an int."""
    assert cm.data is not None, cm
    return int(cm.data["counter"])


@dataclass
class IncrementStats:
    """One worker's record: the counter values its successful writes stored, and every 409 body."""

    written: list[int] = field(default_factory=list)
    conflict_bodies: list[str] = field(default_factory=list)


def increment(
    api: k8s.CoreV1Api,
    *,
    namespace: str,
    name: str,
    times: int,
    via: str,
    backoff_base: float = 0.02,
    backoff_cap: float = 1.0,
) -> IncrementStats:
    """Increment ``data.counter`` of ConfigMap ``name`` ``times`` times; retry each on 409 Conflict.

    Each attempt GETs the object and writes ``counter + 1`` guarded by the resourceVersion it read:
    ``via="put"`` replaces the whole object; ``via="patch"`` sends a JSON merge patch carrying
    ``metadata.resourceVersion`` as the precondition. After the k-th conflict in a row the thread
    sleeps a random time up to ``min(backoff_cap, backoff_base * 2**k)``. Any status other than 409
    propagates.
    """
    stats = IncrementStats()
    streak = 0
    while len(stats.written) < times:
        current = api.read_namespaced_config_map(name, namespace)
        value = counter(current) + 1
        try:
            if via == "put":
                current.data = {**(current.data or {}), "counter": str(value)}
                stored = api.replace_namespaced_config_map(name, namespace, current, _headers=JSON_HEADERS)
            else:
                assert current.metadata is not None
                patch = {
                    "metadata": {"resourceVersion": current.metadata.resource_version},
                    "data": {"counter": str(value)},
                }
                stored = api.patch_namespaced_config_map(
                    name, namespace, patch, _content_type="application/merge-patch+json"
                )
        except k8s.ApiException as err:
            if err.status != 409:
                raise
            stats.conflict_bodies.append(str(err.body))
            streak += 1
            # Full-jitter exponential backoff: without it 32 writers spend most of their requests
            # losing the same race again, and the test takes minutes instead of seconds.
            time.sleep(random.uniform(0, min(backoff_cap, backoff_base * 2**streak)))
            continue
        streak = 0
        assert counter(stored) == value, (stored.data, value)
        stats.written.append(value)
    return stats
