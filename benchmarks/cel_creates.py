"""What one CEL rule costs a custom resource create, against any API server; prints one JSON line.

    python benchmarks/cel_creates.py --kubeconfig PATH [--clients 8] [--duration 5] [--rounds 3]

Installs two CRDs of the same shape (``widgets`` without rules, ``ruledwidgets`` with one rule,
``self.replicas <= self.maxReplicas`` on ``spec``), waits until both are served, then alternates
``--rounds`` load runs on each (``--clients`` connections, each sending its next create as soon as
the previous one is answered, for ``--duration`` seconds) in a fresh namespace, and reports each
kind's creates/s (every run and the median). ``--server-pid`` adds the server's CPU per create
(read from /proc). The CRDs and the namespace are deleted afterwards. The in-process cost of the
rule alone is ``benchmarks/cel_bench.py``'s ``eval_one_rule_us``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import time
import uuid
from typing import Any

import _client as bench
import aiohttp

GROUP = "celbench.kplane.dev"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd(plural: str, kind: str, rules: list[dict[str, str]]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "image": {"type": "string"},
            "ports": {"type": "array", "items": {"type": "integer"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    if rules:
        spec["x-kubernetes-validations"] = rules
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


KINDS = {
    "none": _crd("widgets", "Widget", []),
    "one_rule": _crd(
        "ruledwidgets", "RuledWidget", [{"rule": "self.replicas <= self.maxReplicas", "message": "too many"}]
    ),
}


def _body(kind: str) -> bytes:
    """A new object of ``kind`` under a fresh name."""
    name = f"w-{uuid.uuid4().hex[:12]}"
    obj = {
        "apiVersion": f"{GROUP}/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "replicas": 3,
            "maxReplicas": 10,
            "image": "registry.example/web:1.2.3",
            "ports": [80, 443],
            "labels": {"tier": "frontend"},
        },
    }
    return json.dumps(obj).encode()


async def _served(http: aiohttp.ClientSession, server: str, plural: str, namespace: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        async with http.get(f"{server}/apis/{GROUP}/v1/namespaces/{namespace}/{plural}") as resp:
            await resp.read()
            if resp.status == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{plural} not served after 30 s")
        await asyncio.sleep(0.2)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    target = bench.load_kubeconfig(args.kubeconfig, context=args.context)
    server = target.server
    namespace = f"bench-cel-{uuid.uuid4().hex[:6]}"
    runs: dict[str, list[float]] = {k: [] for k in KINDS}
    cpu: dict[str, list[float]] = {k: [] for k in KINDS}
    async with bench.session(target) as http:
        for crd in KINDS.values():
            await bench.request(http, "POST", f"{server}{CRDS}", body=json.dumps(crd).encode(), ok=(201, 409))
        await bench.ensure_namespace(http, server, namespace)
        try:
            for crd in KINDS.values():
                await _served(http, server, crd["spec"]["names"]["plural"], namespace)
            for _ in range(args.rounds):
                for name, crd in KINDS.items():
                    plural, kind = crd["spec"]["names"]["plural"], crd["spec"]["names"]["kind"]
                    url = f"{server}/apis/{GROUP}/v1/namespaces/{namespace}/{plural}"
                    before = bench.process_cpu_seconds(args.server_pid) if args.server_pid else 0.0
                    start = time.monotonic()
                    count = await bench.closed_loop(
                        target,
                        url,
                        functools.partial(_body, kind),
                        clients=args.clients,
                        duration=args.duration,
                    )
                    elapsed = time.monotonic() - start
                    runs[name].append(count / elapsed)
                    if args.server_pid and count:
                        cpu[name].append((bench.process_cpu_seconds(args.server_pid) - before) / count * 1e6)
        finally:
            await bench.delete_namespace(http, server, namespace)
            for crd in KINDS.values():
                await bench.request(
                    http, "DELETE", f"{server}{CRDS}/{crd['metadata']['name']}", ok=(200, 404)
                )
    result: dict[str, Any] = {}
    for name in KINDS:
        result |= bench.create_rate_figures(name, runs[name], cpu[name])
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server-pid", type=int, default=None)
    print(json.dumps(bench.run(main(parser.parse_args()))))
