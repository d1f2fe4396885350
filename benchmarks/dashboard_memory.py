"""The dashboard tab's memory with 1,000 pods live-updated; one JSON line.

    python benchmarks/dashboard_memory.py --kubeconfig PATH [--pods 1000] [--timeout 300] [--keep]

Against ``kplane serve`` (the dashboard is kplane's; run it with ``--nodes 10`` or more so 1,000 pods
fit, 110 a node) whose kubeconfig carries a bearer token (the admin kubeconfig does). Headless
Chromium (``kplane.testing.browser``: Debian's chromium and chromedriver) signs in with that token
and opens the Nodes & pods view of a fresh namespace; then a Deployment of ``--pods`` replicas is
created (each pod is added, scheduled, started and turns Ready: several watch events each) and,
once every pod shows Ready in the page, restarted (``kubectl rollout restart``'s template annotation:
every pod replaced, 2 x ``--pods`` more pods through the page). Figures, in MiB:

* ``heap_peak_mib``: the largest JSHeapUsedSize (CDP ``Performance.getMetrics``) sampled every
  second while the pods roll in and roll over (no forced GC: what the tab really held);
* ``heap_after_gc_mib``: JSHeapUsedSize after a forced GC, all pods Ready, after the restart;
* ``renderer_pss_mib``: the tab's renderer process's proportional set size (``/proc/PID/smaps_rollup``),
  all of the page's memory (heap, DOM, layout, paint, its share of Chromium's code), at the same
  moment, and ``renderer_private_mib`` its private part (what the tab alone costs, as Chromium's task
  manager counts a tab's footprint); ``*_empty_mib``: the same on the empty view, before any pod;
* ``dom_nodes``, and the seconds until the page showed all pods Ready (``ready_s``, ``restart_ready_s``).

Target: the tab under 100 MiB. The namespace is deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
import uuid
from typing import Any

import _client

from kplane.testing import browser as browser_mod

MIB = 1024 * 1024


def deployment(name: str, replicas: int) -> bytes:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.0"}]},
                },
            },
        }
    ).encode()


async def _call(
    target: _client.Target, method: str, path: str, body: bytes | None, ok: tuple[int, ...]
) -> None:
    async with _client.session(target) as http:
        if method == "PATCH":
            headers = {"Content-Type": "application/strategic-merge-patch+json"}
            async with http.patch(target.server + path, data=body, headers=headers) as resp:
                if resp.status not in ok:
                    raise _client.HTTPError(method, path, resp.status, await resp.read())
            return
        await _client.request(http, method, target.server + path, body=body, ok=ok)


def renderer_memory(driver_pid: int) -> list[tuple[int, int]]:
    """(PSS, private) bytes of each renderer process under chromedriver's process ``driver_pid``,
    largest first (the page's; Chromium keeps a spare renderer that holds no page)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    below = {driver_pid}
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in below and pid not in below:
                below.add(pid)
                changed = True
    sizes = []
    for pid in below:
        try:
            if b"--type=renderer" not in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            fields = {}
            for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
                key, _, value = line.partition(":")
                fields[key] = int(value.split()[0]) * 1024
        except (OSError, ValueError, IndexError):
            continue
        sizes.append((fields.get("Pss", 0), fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)))
    return sorted(sizes, reverse=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    target = _client.load_kubeconfig(args.kubeconfig, context=args.context, auth="token")
    auth = target.headers.get("Authorization", "")
    if not auth.startswith("Bearer "):
        raise SystemExit("the kubeconfig's user has no bearer token: the dashboard signs in with one")
    ns = f"dash-mem-{uuid.uuid4().hex[:6]}"
    name = "mem"
    deploy = f"/apis/apps/v1/namespaces/{ns}/deployments"
    _client.run(
        _call(target, "POST", "/api/v1/namespaces", b'{"metadata":{"name":"%s"}}' % ns.encode(), (201,))
    )
    result: dict[str, Any] = {"pods": args.pods}
    try:
        with browser_mod.Browser() as b:
            b.get(target.server + "/dashboard/")
            b.wait("the login form", lambda: b.find("#login").is_displayed())
            b.find("#token").send_keys(auth.removeprefix("Bearer "))
            b.find("#sign-in").click()
            b.wait("the signed-in page", lambda: b.find("#app").is_displayed())
            b.get(target.server + f"/dashboard/#/cluster?ns={ns}")
            b.wait("the pods view", lambda: b.find("#ready-count"))
            result["heap_empty_mib"] = round(b.heap_used() / MIB, 1)
            driver_pid = b.driver.service.process.pid
            empty = renderer_memory(driver_pid)[0]
            result["renderer_pss_empty_mib"] = round(empty[0] / MIB, 1)
            result["renderer_private_empty_mib"] = round(empty[1] / MIB, 1)
            peak = 0

            def ready_in_page() -> tuple[int, int]:
                """(Ready pods, pods) as the page counts them now, read in one script."""
                ready, rows = b.script(
                    "const e = document.getElementById('ready-count');"
                    " return [Number(e.dataset.ready), Number(e.dataset.total)]"
                )
                return int(ready), int(rows)

            def until_all_ready(what: str) -> float:
                nonlocal peak
                start = time.monotonic()
                while time.monotonic() - start < args.timeout:
                    peak = max(peak, b.heap_used(collect=False))
                    ready, total = ready_in_page()
                    if ready == args.pods and total == args.pods:
                        return round(time.monotonic() - start, 1)
                    time.sleep(1.0)
                raise SystemExit(
                    f"timed out waiting for {what}: the page shows {ready_in_page()} (ready, total)"
                )

            _client.run(_call(target, "POST", deploy, deployment(name, args.pods), (201,)))
            result["ready_s"] = until_all_ready(f"{args.pods} Ready pods")
            restart = {
                "spec": {
                    "template": {"metadata": {"annotations": {"kplane.dev/restartedAt": str(time.time())}}}
                }
            }
            _client.run(_call(target, "PATCH", f"{deploy}/{name}", json.dumps(restart).encode(), (200,)))
            time.sleep(2.0)  # the rollout has begun: old pods terminating, new ones coming
            result["restart_ready_s"] = until_all_ready(f"{args.pods} Ready pods after the restart")
            result["heap_peak_mib"] = round(peak / MIB, 1)
            result["heap_after_gc_mib"] = round(b.heap_used() / MIB, 1)
            renderers = renderer_memory(driver_pid)
            result["renderer_pss_mib"] = round(renderers[0][0] / MIB, 1)
            result["renderer_private_mib"] = round(renderers[0][1] / MIB, 1)
            result["other_renderers_pss_mib"] = [round(n / MIB, 1) for n, _ in renderers[1:]]
            metrics = b.metrics()
            result["dom_nodes"] = int(metrics.get("Nodes", 0))
            result["js_event_listeners"] = int(metrics.get("JSEventListeners", 0))
            severe = b.console("SEVERE")
            result["console_errors"] = len(severe)
    finally:
        if not args.keep:
            _client.run(_call(target, "DELETE", f"/api/v1/namespaces/{ns}", None, (200, 202, 404)))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    reason = browser_mod.missing()
    if reason is not None:
        raise SystemExit(f"dashboard_memory: {reason}")
    print(json.dumps({"benchmark": "dashboard_memory", **run(args)}), flush=True)


if __name__ == "__main__":
    main()
