"""What admission webhooks cost a ConfigMap create, against any API server; prints one JSON line.

    python benchmarks/webhook_creates.py --kubeconfig PATH [--clients 8] [--duration 4] [--rounds 3]
        [--server-pid PID]

Serves an HTTPS webhook on 127.0.0.1 from this process (self-signed; its certificate is the
configurations' ``caBundle``), then alternates ``--rounds`` load runs in three modes on a fresh
namespace: ``none`` (no webhook configuration at all), ``validating`` (one ValidatingWebhook
allowing every ConfigMap create of the namespace) and ``mutating`` (one MutatingWebhook adding a
label with a JSONPatch). Each run: ``--clients`` connections each sending its next create as soon
as the previous one is answered, for ``--duration`` seconds. Reports creates/s per mode (every run
and the median), the webhook calls seen, and with ``--server-pid`` the server's CPU per create.
The server must reach 127.0.0.1 (a local kube-apiserver or kplane). Configurations and namespace
are deleted afterwards. The webhook server shares this process's CPU with the load generator.
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import ssl
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import _client as bench
from aiohttp import web

from kplane.runtime.webhook import certs

PATCH = base64.b64encode(b'[{"op":"add","path":"/metadata/labels","value":{"webhook":"yes"}}]').decode()
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
MODES = ("none", "validating", "mutating")


class Hooks:
    """The webhook server: ``/allow`` allows, ``/label`` patches; counts calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.port = 0
        cert, key = certs.self_signed(["127.0.0.1"])
        self.ca_bundle = base64.b64encode(cert).decode()
        tmp = Path(tempfile.mkdtemp())
        (tmp / "c.pem").write_bytes(cert)
        (tmp / "k.pem").write_bytes(key)
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(tmp / "c.pem", tmp / "k.pem")
        self.runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.calls += 1
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
        if request.path == "/label":
            response.update(patchType="JSONPatch", patch=PATCH)
        return web.json_response(
            {"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response}
        )

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=self.ctx)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def configuration(self, mode: str, name: str, namespace: str) -> dict[str, Any]:
        kind = "ValidatingWebhookConfiguration" if mode == "validating" else "MutatingWebhookConfiguration"
        path = "/allow" if mode == "validating" else "/label"
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name},
            "webhooks": [
                {
                    "name": f"{mode}.bench.kplane.dev",
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{self.port}{path}",
                        "caBundle": self.ca_bundle,
                    },
                    "rules": [
                        {
                            "operations": ["CREATE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["configmaps"],
                        }
                    ],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        }


def _body(namespace: str) -> bytes:
    name = f"cm-{uuid.uuid4().hex[:12]}"
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"k": "v"},
    }
    return json.dumps(obj).encode()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    target = bench.load_kubeconfig(args.kubeconfig, context=args.context)
    server = target.server
    hooks = Hooks()
    await hooks.start()
    namespace = f"bench-webhook-{uuid.uuid4().hex[:6]}"
    runs: dict[str, list[float]] = {m: [] for m in MODES}
    cpu: dict[str, list[float]] = {m: [] for m in MODES}
    calls: dict[str, int] = {m: 0 for m in MODES}
    url = f"{server}/api/v1/namespaces/{namespace}/configmaps"
    async with bench.session(target) as http:
        await bench.ensure_namespace(http, server, namespace)
        try:
            for _ in range(args.rounds):
                for mode in MODES:
                    config_path = ""
                    if mode != "none":
                        plural = f"{mode}webhookconfigurations"
                        name = f"bench-{uuid.uuid4().hex[:6]}"
                        body = json.dumps(hooks.configuration(mode, name, namespace)).encode()
                        await bench.request(
                            http, "POST", f"{server}{ADMISSION}/{plural}", body=body, ok=(201,)
                        )
                        config_path = f"{server}{ADMISSION}/{plural}/{name}"
                    try:
                        seen = hooks.calls
                        before = bench.process_cpu_seconds(args.server_pid) if args.server_pid else 0.0
                        start = time.monotonic()
                        count = await bench.closed_loop(
                            target,
                            url,
                            functools.partial(_body, namespace),
                            clients=args.clients,
                            duration=args.duration,
                        )
                        elapsed = time.monotonic() - start
                        runs[mode].append(count / elapsed)
                        calls[mode] += hooks.calls - seen
                        if args.server_pid and count:
                            cpu[mode].append(
                                (bench.process_cpu_seconds(args.server_pid) - before) / count * 1e6
                            )
                    finally:
                        if config_path:
                            await bench.request(http, "DELETE", config_path, ok=(200, 404))
        finally:
            await bench.delete_namespace(http, server, namespace)
            if hooks.runner is not None:
                await hooks.runner.cleanup()
    result: dict[str, Any] = {}
    for mode in MODES:
        figures = bench.create_rate_figures(mode, runs[mode], cpu[mode])
        figures[f"webhook_calls_{mode}"] = calls[mode]
        result |= figures
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context", default=None)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server-pid", type=int, default=None)
    print(json.dumps(bench.run(main(parser.parse_args()))))
