"""Overload protection end to end, with small limits given as flags: a burst beyond the in-flight
limit gets upstream's 429 (``Retry-After: 1``, ``Too many requests, please try again later.``:
apiserver ``filters/maxinflight.go`` tooManyRequests), watches take no seat, and a second user's
requests keep succeeding while the first floods."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Server, requires_kubectl, start_server
from tests.e2e.helpers import Kube

pytestmark = requires_kubectl


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(
        tmp_path_factory.mktemp("overload"),
        "--max-requests-inflight",
        "1",
        "--max-mutating-requests-inflight",
        "1",
        "--max-queued-requests-per-user",
        "3",
    )
    yield srv
    srv.stop()


def _token(server: Server, name: str, role: str) -> str:
    server.kubectl("create", "serviceaccount", name)
    server.kubectl(
        "create", "clusterrolebinding", name, f"--clusterrole={role}", f"--serviceaccount=default:{name}"
    )
    return server.kubectl("create", "token", name).stdout.strip()


def test_flood_gets_429_and_other_user_is_served(limited: Server, tmp_path: Path) -> None:
    """One user flooding with 24 concurrent creates (each waits for its commit, so they overlap)
    gets 429s with upstream's headers and body; the other user's sequential creates all succeed
    meanwhile (per-user queues)."""
    api = Kube.from_kubeconfig(limited.kubeconfig, tmp_path)
    noisy, quiet = _token(limited, "noisy", "edit"), _token(limited, "quiet", "edit")
    path = "/api/v1/namespaces/default/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "flood-"}}
    statuses: list[int] = []
    rejected: list[tuple[dict[str, str], bytes]] = []
    stop = threading.Event()

    def flood() -> None:
        while not stop.is_set():
            resp = api.post(path, body, auth=noisy, timeout=30)
            statuses.append(resp.status)
            if resp.status == 429:
                rejected.append((resp.headers, resp.body))

    threads = [threading.Thread(target=flood) for _ in range(24)]
    for t in threads:
        t.start()
    try:
        quiet_codes = [api.post(path, body, auth=quiet, timeout=30).status for _ in range(15)]
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert quiet_codes == [201] * 15
    assert rejected, f"no 429 among {len(statuses)} flood requests"
    headers, body = rejected[0]
    assert headers["retry-after"] == "1"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert body == b"Too many requests, please try again later.\n"
    assert set(statuses) <= {201, 429}
    metrics = api.get("/metrics").body.decode()
    assert (
        'apiserver_flowcontrol_rejected_requests_total{flow_schema="",priority_level="mutating",reason="queue-full"}'
        in (metrics)
    )
    assert 'code="429"' in metrics


def test_watches_take_no_seat(limited: Server, tmp_path: Path) -> None:
    """Open watches of a user do not count against the one-seat read limit."""
    api = Kube.from_kubeconfig(limited.kubeconfig, tmp_path)
    token = _token(limited, "watcher", "view")
    with contextlib.ExitStack() as stack:
        for _ in range(3):
            stream = stack.enter_context(
                api.watch("/api/v1/namespaces/default/configmaps", {"timeoutSeconds": 30}, auth=token)
            )
            assert stream.status == 200
        for _ in range(5):
            assert (
                api.get("/api/v1/namespaces/default/configmaps", query={"limit": 1}, auth=token).status == 200
            )
