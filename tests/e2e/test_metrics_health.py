"""``/metrics``, ``/livez``, ``/readyz`` and ``/healthz`` through a real server and real kubectl,
compared with kube-apiserver 1.32's names and output (``k8s.io/apiserver/pkg/endpoints/metrics``,
``k8s.io/apiserver/pkg/server/healthz/healthz.go``)."""

from __future__ import annotations

import re

from tests.e2e import helpers
from tests.e2e.conftest import Server, requires_kubectl

NS = "default"


def _samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        m = re.fullmatch(name + r"\{(.*)\} (\S+)", line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            out.append((labels, float(m.group(2))))
    return out


@requires_kubectl
def test_kubectl_get_raw_metrics(server: Server, api: helpers.Kube) -> None:
    """kubectl get --raw /metrics shows upstream's request, latency, in-flight, storage, watch and
    process metrics, labelled as upstream labels them."""
    name = helpers.unique("m")
    api.ok("POST", f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": name}, "data": {"a": "b"}})
    api.post(f"/api/v1/namespaces/{NS}/configmaps?dryRun=All", {"metadata": {"name": name + "x"}})
    api.get(f"/api/v1/namespaces/{NS}/configmaps/nope")
    watch = api.get(f"/api/v1/namespaces/{NS}/configmaps?watch=true&timeoutSeconds=1")
    assert watch.status == 200
    text = server.kubectl("get", "--raw", "/metrics").stdout
    total = _samples(text, "apiserver_request_total")
    created = {
        "code": "201",
        "component": "apiserver",
        "dry_run": "",
        "group": "",
        "resource": "configmaps",
        "scope": "resource",
        "subresource": "",
        "verb": "POST",
        "version": "v1",
    }
    assert any(labels == created and value >= 1 for labels, value in total)
    assert any(labels.get("dry_run") == "All" and labels["code"] == "201" for labels, _ in total)
    assert any(labels["verb"] == "GET" and labels["code"] == "404" for labels, _ in total)
    assert any(labels["verb"] == "WATCH" and labels["scope"] == "namespace" for labels, _ in total)
    # upstream's buckets, 0.005 to 60 s, printed as Go prints floats (le="1", le="60")
    buckets = [
        labels["le"]
        for labels, _ in _samples(text, "apiserver_request_duration_seconds_bucket")
        if labels["verb"] == "POST" and labels["resource"] == "configmaps" and labels["dry_run"] == ""
    ]
    assert buckets[0] == "0.005" and buckets[-2:] == ["60", "+Inf"] and "1" in buckets and len(buckets) == 24
    kinds = {labels["request_kind"] for labels, _ in _samples(text, "apiserver_current_inflight_requests")}
    assert kinds == {"mutating", "readOnly"}
    stored = {labels["resource"]: value for labels, value in _samples(text, "apiserver_storage_objects")}
    assert stored["configmaps"] >= 1 and stored["apiservices.apiregistration.k8s.io"] >= 1
    assert any(
        labels["operation"] == "create" for labels, _ in _samples(text, "etcd_request_duration_seconds_count")
    )
    assert re.search(r"^process_cpu_seconds_total \S+$", text, re.M)
    assert re.search(r"^process_resident_memory_bytes \S+$", text, re.M)
    assert "# TYPE apiserver_watch_events_total counter" in text


def test_metrics_content_type(api: helpers.Kube) -> None:
    """Prometheus text format 0.0.4, as kube-apiserver serves it."""
    resp = api.get("/metrics")
    assert resp.status == 200 and resp.content_type.startswith("text/plain; version=0.0.4")


@requires_kubectl
def test_readyz_verbose_lists_checks(server: Server) -> None:
    """/readyz?verbose: one `[+]<check> ok` line per check, readyz's extra checks, then
    `readyz check passed`; /livez lacks the readiness-only checks; plain answers are `ok`."""
    ready = server.kubectl("get", "--raw", "/readyz?verbose").stdout.splitlines()
    assert ready[:3] == ["[+]ping ok", "[+]log ok", "[+]etcd ok"]
    assert "[+]etcd-readiness ok" in ready and "[+]informer-sync ok" in ready
    assert ready[-2:] == ["[+]shutdown ok", "readyz check passed"]
    assert all(line.startswith("[+]") for line in ready[:-1])
    live = server.kubectl("get", "--raw", "/livez?verbose").stdout.splitlines()
    assert live[-1] == "livez check passed" and "[+]shutdown ok" not in live
    assert "[+]poststarthook/crd-informer-synced ok" in live
    assert server.kubectl("get", "--raw", "/healthz").stdout == "ok"
    assert server.kubectl("get", "--raw", "/readyz").stdout == "ok"


def test_exclude_and_single_checks(api: helpers.Kube) -> None:
    """?exclude skips a check (`[+]log excluded: ok`) and warns about unknown names; /livez/etcd
    runs one check; an unknown check path is 404."""
    resp = api.get("/readyz?verbose&exclude=log&exclude=nope")
    lines = resp.body.decode().splitlines()
    assert "[+]log excluded: ok" in lines
    assert 'warn: some health checks cannot be excluded: no matches for "nope"' in lines
    assert resp.status == 200 and lines[-1] == "readyz check passed"
    assert resp.headers["x-content-type-options"] == "nosniff"
    for path in (
        "/livez/etcd",
        "/readyz/ping",
        "/readyz/shutdown",
        "/healthz/poststarthook/bootstrap-controller",
    ):
        got = api.get(path)
        assert (got.status, got.body) == (200, b"ok"), path
    assert api.get("/readyz/nope").status == 404
