"""The dashboard tab's memory with 1,000 pods live-updated; one JSON line.

    python benchmarks/dashboard_memory.py --kubeconfig PATH [--pods 1000] [--churn 60] [--timeout 300]
        [--keep]

Against ``kplane serve`` (the dashboard is kplane's; run it with ``--nodes 10`` or more so 1,000 pods
fit, 110 a node) whose kubeconfig carries a bearer token (the admin kubeconfig does). Headless
Chromium (``kplane.testing.browser``: Debian's chromium and chromedriver) signs in with that token
and opens the Nodes & pods view of a fresh namespace. Then, all while the page shows them live:

1. a Deployment of ``--pods`` replicas is created (each pod is added, scheduled, started and turns
   Ready: several watch events each), until the page counts every pod Ready;
2. it is restarted (``kubectl rollout restart``'s template annotation): every pod replaced, 2 x
   ``--pods`` more pods through the page, until the page counts every new pod Ready;
3. for ``--churn`` seconds, 8 clients patch the pods' status in turn (a condition of their own
   flipping between True and False, through the ``status`` subresource), so status changes keep
   flowing into the page at the rate the server takes them.

What "the tab's memory" means here is what a user sees: the "Memory footprint" column of Chrome's
Task Manager, Chromium's *private memory footprint* of the tab's renderer process, which on Linux
is the process's resident anonymous memory plus its swap (``RssAnon + VmSwap`` of
``/proc/PID/status``; Chromium's ``CalculatePrivateFootprintKb``): everything the page holds (JS
heap, DOM, layout, paint, buffers) and nothing it shares with the browser (code, fonts). Figures,
in MiB:

* ``tab_footprint_mib``: that footprint at the end (no forced GC), ``tab_footprint_peak_mib`` the
  largest sampled every second through the three phases, ``tab_footprint_empty_mib`` on the empty
  view before any pod; the target is the peak under 100 MiB;
* ``js_heap_mib``: ``performance.memory.usedJSHeapSize`` at the end (what the page's JavaScript
  holds), ``js_heap_peak_mib`` the largest sampled, ``js_heap_after_gc_mib`` after a forced GC,
  ``js_heap_empty_mib`` on the empty view;
* for comparison with other tools, ``renderer_private_mib`` (``Private_Clean + Private_Dirty`` of
  ``smaps_rollup``: includes private file pages) and ``renderer_pss_mib`` (proportional set size:
  adds the renderer's share of Chromium's code and other pages shared with the browser process,
  which a user does not pay per tab);
* ``dom_nodes``, ``console_errors``, the seconds until the page showed all pods Ready
  (``ready_s``, ``restart_ready_s``) and the status patches the churn made (``churn_patches``,
  ``churn_patches_per_s``).

The namespace is deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import dataclasses
import json
import os
import pathlib
import threading
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


@dataclasses.dataclass(frozen=True)
class Renderer:
    """One renderer process's memory, in bytes (see the module docstring)."""

    footprint: int  # RssAnon + VmSwap: Chrome's Task Manager "Memory footprint"
    private: int  # Private_Clean + Private_Dirty
    pss: int


def _kib_fields(text: str) -> dict[str, int]:
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if len(parts) == 2 and parts[1] == "kB":
            fields[key] = int(parts[0]) * 1024
    return fields


def renderers(driver_pid: int) -> list[Renderer]:
    """The renderer processes under chromedriver's process ``driver_pid``, largest footprint first
    (the page's; Chromium may keep a spare renderer that holds no page)."""
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
    found = []
    for pid in below:
        try:
            if b"--type=renderer" not in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            status = _kib_fields(pathlib.Path(f"/proc/{pid}/status").read_text())
            rollup = _kib_fields(pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text())
        except OSError:
            continue
        found.append(
            Renderer(
                footprint=status.get("RssAnon", 0) + status.get("VmSwap", 0),
                private=rollup.get("Private_Clean", 0) + rollup.get("Private_Dirty", 0),
                pss=rollup.get("Pss", 0),
            )
        )
    return sorted(found, key=lambda r: r.footprint, reverse=True)


def js_heap_used(b: browser_mod.Browser) -> int:
    """``performance.memory.usedJSHeapSize``: the page's JavaScript heap in use, in bytes (exact:
    the browser runs with ``--enable-precise-memory-info``)."""
    return int(b.script("return performance.memory.usedJSHeapSize"))


async def churn(target: _client.Target, ns: str, names: list[str], stop: threading.Event) -> int:
    """Patch the pods' status in turn (8 clients), a condition flipping each pass, until ``stop``;
    returns the patches made."""
    done = 0

    async def client(k: int) -> None:
        nonlocal done
        async with _client.session(target) as http:
            headers = {"Content-Type": "application/strategic-merge-patch+json"}
            n = k
            while not stop.is_set():
                name = names[n % len(names)]
                flip = "True" if (n // len(names)) % 2 == 0 else "False"
                body = json.dumps({"status": {"conditions": [{"type": "kplane.dev/Churn", "status": flip}]}})
                url = f"{target.server}/api/v1/namespaces/{ns}/pods/{name}/status"
                async with http.patch(url, data=body, headers=headers) as resp:
                    await resp.read()
                    if resp.status == 200:
                        done += 1
                n += 8

    await asyncio.gather(*(client(k) for k in range(8)))
    return done


async def pod_names(target: _client.Target, ns: str) -> list[str]:
    async with _client.session(target) as http:
        data = await _client.request(http, "GET", f"{target.server}/api/v1/namespaces/{ns}/pods")
    return [p["metadata"]["name"] for p in json.loads(data)["items"]]


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
            driver_pid = b.driver.service.process.pid
            time.sleep(2.0)  # the view settled
            empty = renderers(driver_pid)[0]
            result["tab_footprint_empty_mib"] = mib(empty.footprint)
            result["js_heap_empty_mib"] = mib(js_heap_used(b))
            peak = {"footprint": empty.footprint, "heap": 0}

            def sample() -> None:
                peak["footprint"] = max(peak["footprint"], renderers(driver_pid)[0].footprint)
                peak["heap"] = max(peak["heap"], js_heap_used(b))

            def ready_in_page() -> tuple[int, int]:
                """(Ready pods, pods) as the page counts them now, read in one script."""
                ready, rows = b.script(
                    "const e = document.getElementById('ready-count');"
                    " return [Number(e.dataset.ready), Number(e.dataset.total)]"
                )
                return int(ready), int(rows)

            def until_all_ready(what: str) -> float:
                start = time.monotonic()
                while time.monotonic() - start < args.timeout:
                    sample()
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
            if args.churn > 0:
                names = _client.run(pod_names(target, ns))
                stop = threading.Event()
                with concurrent.futures.ThreadPoolExecutor(1) as pool:
                    patches = pool.submit(_client.run, churn(target, ns, names, stop))
                    start = time.monotonic()
                    try:
                        while time.monotonic() - start < args.churn:
                            sample()
                            time.sleep(1.0)
                    finally:
                        stop.set()
                    result["churn_patches"] = patches.result()
                result["churn_patches_per_s"] = round(result["churn_patches"] / args.churn, 1)
            sample()
            final = renderers(driver_pid)
            result["tab_footprint_mib"] = mib(final[0].footprint)
            result["tab_footprint_peak_mib"] = mib(peak["footprint"])
            result["js_heap_mib"] = mib(js_heap_used(b))
            result["js_heap_peak_mib"] = mib(peak["heap"])
            result["renderer_private_mib"] = mib(final[0].private)
            result["renderer_pss_mib"] = mib(final[0].pss)
            result["other_renderers_footprint_mib"] = [mib(r.footprint) for r in final[1:]]
            metrics = b.metrics()
            result["dom_nodes"] = int(metrics.get("Nodes", 0))
            result["js_event_listeners"] = int(metrics.get("JSEventListeners", 0))
            result["js_heap_after_gc_mib"] = mib(b.heap_used())
            result["tab_footprint_after_gc_mib"] = mib(renderers(driver_pid)[0].footprint)
            result["console_errors"] = len(b.console("SEVERE"))
    finally:
        if not args.keep:
            _client.run(_call(target, "DELETE", f"/api/v1/namespaces/{ns}", None, (200, 202, 404)))
    return result


def mib(n: int) -> float:
    return round(n / MIB, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--churn", type=float, default=60.0, help="seconds of status patches at the end")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    reason = browser_mod.missing()
    if reason is not None:
        raise SystemExit(f"dashboard_memory: {reason}")
    print(json.dumps({"benchmark": "dashboard_memory", **run(args)}), flush=True)


if __name__ == "__main__":
    main()
