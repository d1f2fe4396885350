"""Optimistic concurrency under contention: 32 official-client threads increment one counter.

Each thread does 50 read-modify-write increments of ``data.counter`` guarded by the resourceVersion
it read, retrying on 409. If the server ever let two writers through on the same resourceVersion, an
increment would be lost and the final count would fall short of 1,600 (and two successful writes
would have stored the same value).
"""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.e2e import loadgen
from tests.e2e.conftest import Server

THREADS = 32
PER_THREAD = 50
NAMESPACE = "default"


def _conflict_status(name: str) -> dict[str, object]:
    """Upstream's exact 409 body for a stale resourceVersion on ConfigMap ``name``."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": (
            f'Operation cannot be fulfilled on configmaps "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again"
        ),
        "reason": "Conflict",
        "details": {"name": name, "kind": "configmaps"},
        "code": 409,
    }


@pytest.mark.slow
@pytest.mark.parametrize("via", ["put", "patch"], ids=["put-update", "merge-patch-with-rv"])
def test_concurrent_increments_lose_nothing(server: Server, via: str) -> None:
    """32 threads x 50 guarded increments end at exactly 1,600, with 409s in upstream's exact form."""
    name = f"counter-{via}-{uuid.uuid4().hex[:8]}"
    apis = [loadgen.core_api(server.kubeconfig) for _ in range(THREADS)]
    apis[0].create_namespaced_config_map(NAMESPACE, loadgen.counter_map(name), _headers=loadgen.JSON_HEADERS)

    started = time.monotonic()
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [
            pool.submit(loadgen.increment, api, namespace=NAMESPACE, name=name, times=PER_THREAD, via=via)
            for api in apis
        ]
        results = [f.result() for f in futures]
    elapsed = time.monotonic() - started

    final = apis[0].read_namespaced_config_map(name, NAMESPACE)
    written = sorted(v for r in results for v in r.written)
    bodies = [b for r in results for b in r.conflict_bodies]
    print(f"\n{via}: {len(written)} increments, {len(bodies)} conflicts in {elapsed:.1f}s")
    for api in apis:
        api.api_client.close()

    assert loadgen.counter(final) == THREADS * PER_THREAD
    # Every successful write stored a distinct value: no two writers won on the same read.
    assert written == list(range(1, THREADS * PER_THREAD + 1))
    assert len(bodies) > 0, "32 writers on one object never conflicted: the test exercised nothing"
    expected = _conflict_status(name)
    wrong = [b for b in bodies if json.loads(b) != expected]
    assert not wrong, (
        f"{len(wrong)} of {len(bodies)} conflict bodies differ from upstream's; first: {wrong[0]}"
    )
