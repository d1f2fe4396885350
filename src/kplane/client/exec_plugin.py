"""client-go credential plugins (``users[].user.exec``): run a command, read an ``ExecCredential``.

The command runs with the kubeconfig's ``args`` and ``env`` added to this process's environment,
plus ``KUBERNETES_EXEC_INFO``: a JSON ``ExecCredential`` whose ``spec`` says the plugin is not
interactive (stdin is not connected) and, with ``provideClusterInfo``, describes the cluster. The
plugin prints an ``ExecCredential`` (``client.authentication.k8s.io/v1`` or ``v1beta1``, the version
the kubeconfig asked for) whose ``status`` holds a bearer ``token`` or a
``clientCertificateData``/``clientKeyData`` pair and an optional ``expirationTimestamp``.

The credential is cached until its expiration (forever without one) or until ``invalidate()``,
which a transport calls after a 401. Concurrent callers share one run of the plugin.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime
import json
import os
import subprocess
from typing import Any

from kplane._util import clock as clock_mod
from kplane.client import kubeconfig

SUPPORTED_API_VERSIONS = (
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
)
CLUSTER_EXTENSION = "client.authentication.k8s.io/exec"


class ExecPluginError(Exception):
    """The plugin could not be run, failed, or printed something that is not a valid credential."""


@dataclasses.dataclass(frozen=True, slots=True)
class ExecCredential:
    """What a plugin returned: a token, or client certificate and key PEM bytes, or both."""

    token: str = ""
    client_certificate_data: bytes = b""
    client_key_data: bytes = b""
    expiration: datetime.datetime | None = None


class ExecAuthenticator:
    """Runs one configured plugin and caches its credential (client-go ``plugin/pkg/client/auth/exec``).

    ``cluster`` is passed to the plugin when the config sets ``provideClusterInfo``.
    """

    def __init__(
        self,
        config: kubeconfig.ExecConfig,
        *,
        cluster: kubeconfig.Cluster | None = None,
        clock: clock_mod.Clock | None = None,
    ) -> None:
        if config.api_version not in SUPPORTED_API_VERSIONS:
            raise ExecPluginError(f'exec plugin: invalid apiVersion "{config.api_version}"')
        self.config = config
        self._cluster = cluster
        self._clock: clock_mod.Clock = clock or clock_mod.RealClock()
        self._cached: ExecCredential | None = None
        self._lock = asyncio.Lock()

    async def credential(self) -> ExecCredential:
        """The cached credential if still valid, else a fresh one from running the plugin."""
        cached = self._cached
        if cached is not None and self._valid(cached):
            return cached
        async with self._lock:
            cached = self._cached
            if cached is not None and self._valid(cached):
                return cached
            self._cached = await self._run()
            return self._cached

    def invalidate(self) -> None:
        """Forget the cached credential (the server rejected it); the next call reruns the plugin."""
        self._cached = None

    def _valid(self, cred: ExecCredential) -> bool:
        return cred.expiration is None or self._clock.now() < cred.expiration

    def exec_info(self) -> dict[str, Any]:
        """The ``KUBERNETES_EXEC_INFO`` document given to the plugin."""
        spec: dict[str, Any] = {"interactive": False}
        if self.config.provide_cluster_info and self._cluster is not None:
            c = self._cluster
            cluster: dict[str, Any] = {"server": c.server}
            if c.tls_server_name:
                cluster["tls-server-name"] = c.tls_server_name
            if c.insecure_skip_tls_verify:
                cluster["insecure-skip-tls-verify"] = True
            if c.certificate_authority_data:
                cluster["certificate-authority-data"] = base64.b64encode(
                    c.certificate_authority_data
                ).decode()
            if c.proxy_url:
                cluster["proxy-url"] = c.proxy_url
            if CLUSTER_EXTENSION in c.extensions:
                cluster["config"] = c.extensions[CLUSTER_EXTENSION]
            spec["cluster"] = cluster
        return {"apiVersion": self.config.api_version, "kind": "ExecCredential", "spec": spec}

    async def _run(self) -> ExecCredential:
        cfg = self.config
        if cfg.interactive_mode == "Always":
            raise ExecPluginError(
                "exec plugin cannot support interactive mode: standard input is not a terminal"
            )
        env = dict(os.environ)
        env.update(cfg.env)
        env["KUBERNETES_EXEC_INFO"] = json.dumps(self.exec_info())
        try:
            proc = await asyncio.create_subprocess_exec(
                cfg.command,
                *cfg.args,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
            hint = f"\n\n{cfg.install_hint}" if cfg.install_hint else ""
            what = "not found" if isinstance(e, FileNotFoundError) else "not executable"
            raise ExecPluginError(f"exec: executable {cfg.command} {what}{hint}") from e
        stdout, stderr = await proc.communicate()
        if proc.returncode != 0:
            detail = stderr.decode(errors="replace").strip()
            raise ExecPluginError(
                f"exec: executable {cfg.command} failed with exit code {proc.returncode}"
                + (f": {detail}" if detail else "")
            )
        return parse_credential(stdout, expected_api_version=cfg.api_version)


def parse_credential(output: bytes | str, *, expected_api_version: str) -> ExecCredential:
    """Decode and check a plugin's ``ExecCredential`` output."""
    try:
        doc = json.loads(output)
    except ValueError as e:
        raise ExecPluginError(f"decoding stdout: {e}") from e
    if not isinstance(doc, dict):
        raise ExecPluginError("decoding stdout: not a JSON object")
    if doc.get("kind") != "ExecCredential":
        raise ExecPluginError(f'exec plugin returned kind "{doc.get("kind")}", not ExecCredential')
    got = doc.get("apiVersion")
    if got != expected_api_version:
        raise ExecPluginError(
            f"exec plugin is configured to use API version {expected_api_version}, "
            f"plugin returned version {got}"
        )
    status = doc.get("status")
    if not isinstance(status, dict):
        raise ExecPluginError("exec plugin didn't return a status field")
    token = str(status.get("token") or "")
    cert = str(status.get("clientCertificateData") or "").encode()
    key = str(status.get("clientKeyData") or "").encode()
    if bool(cert) != bool(key):
        raise ExecPluginError("exec plugin returned only certificate or key, not both")
    if not token and not cert:
        raise ExecPluginError("exec plugin didn't return a token or cert/key pair")
    expiration = None
    if status.get("expirationTimestamp"):
        try:
            expiration = datetime.datetime.fromisoformat(str(status["expirationTimestamp"]))
        except ValueError as e:
            raise ExecPluginError(f"exec plugin returned a bad expirationTimestamp: {e}") from e
        if expiration.tzinfo is None:
            expiration = expiration.replace(tzinfo=datetime.UTC)
    return ExecCredential(
        token=token, client_certificate_data=cert, client_key_data=key, expiration=expiration
    )
