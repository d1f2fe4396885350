from __future__ import annotations

import asyncio
import base64
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kplane.server.auth import certs, kubeconfig

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH")


def _write(tmp_path: Path, *, embed: bool = True) -> tuple[certs.PKI, Path, dict[str, Any]]:
    pki = certs.ensure_pki(tmp_path / "data")
    path = tmp_path / "data" / "kubeconfig"
    kubeconfig.write_admin_kubeconfig(pki, "https://127.0.0.1:6443", path, embed=embed)
    return pki, path, yaml.safe_load(path.read_text())


def test_embedded_fields(tmp_path: Path) -> None:
    """The embedded kubeconfig inlines CA, admin cert, key and token, with context kplane current."""
    pki, _, cfg = _write(tmp_path)
    assert (cfg["apiVersion"], cfg["kind"], cfg["current-context"]) == ("v1", "Config", "kplane")
    [cluster] = cfg["clusters"]
    assert cluster["name"] == "kplane"
    assert cluster["cluster"]["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == pki.ca_pem()
    [user] = cfg["users"]
    assert user["name"] == "kplane-admin"
    assert base64.b64decode(user["user"]["client-certificate-data"]) == pki.admin_cert_file.read_bytes()
    assert base64.b64decode(user["user"]["client-key-data"]) == pki.admin_key_file.read_bytes()
    assert user["user"]["token"] == pki.admin_token()
    [context] = cfg["contexts"]
    assert context == {
        "name": "kplane",
        "context": {"cluster": "kplane", "user": "kplane-admin", "namespace": "default"},
    }


def test_file_references(tmp_path: Path) -> None:
    """Without embedding, the kubeconfig points at the PKI files by absolute path."""
    pki, _, cfg = _write(tmp_path, embed=False)
    assert cfg["clusters"][0]["cluster"]["certificate-authority"] == str(pki.ca_cert_file.resolve())
    user = cfg["users"][0]["user"]
    assert user == {
        "client-certificate": str(pki.admin_cert_file.resolve()),
        "client-key": str(pki.admin_key_file.resolve()),
        "tokenFile": str(pki.admin_token_file.resolve()),
    }


def test_mode_and_atomic_rewrite(tmp_path: Path) -> None:
    """The file is 0600, a rewrite replaces it whole, and no temporary file is left behind."""
    pki, path, _ = _write(tmp_path)
    path.chmod(0o644)
    kubeconfig.write_admin_kubeconfig(pki, "https://localhost:7443", path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"] == "https://localhost:7443"
    assert sorted(p.name for p in path.parent.iterdir()) == ["kubeconfig", "pki"]


@pytest.mark.kubectl
@needs_kubectl
def test_kubectl_reads_it(tmp_path: Path) -> None:
    """kubectl parses the file and finds the server, namespace and credentials in it."""
    pki, path, _ = _write(tmp_path)

    def view(jsonpath: str) -> str:
        argv = [str(KUBECTL), "config", "view", "--kubeconfig", str(path), "--raw", "--minify"]
        return subprocess.run(
            [*argv, "-o", f"jsonpath={jsonpath}"], check=True, capture_output=True, text=True
        ).stdout

    assert view("{.clusters[0].cluster.server}") == "https://127.0.0.1:6443"
    assert view("{.contexts[0].context.namespace}") == "default"
    assert view("{.users[0].user.token}") == pki.admin_token()


@pytest.mark.kubectl
@needs_kubectl
async def test_kubectl_sends_cert_and_token(tmp_path: Path) -> None:
    """Against a TLS server from the PKI, kubectl presents the admin cert and sends the token too."""
    pki = certs.ensure_pki(tmp_path / "data")
    seen: list[tuple[object, bytes]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append((writer.get_extra_info("peercert"), head))
        body = b'{"major":"1","minor":"32","gitVersion":"v1.32.0"}'
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=pki.ssl_server_context())
    port = server.sockets[0].getsockname()[1]
    path = tmp_path / "kubeconfig"
    kubeconfig.write_admin_kubeconfig(pki, f"https://127.0.0.1:{port}", path)
    try:
        proc = await asyncio.create_subprocess_exec(
            str(KUBECTL), "--kubeconfig", str(path), "get", "--raw", "/version",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 20)
    finally:
        server.close()
        await server.wait_closed()
    assert proc.returncode == 0, err
    assert b"v1.32.0" in out
    assert seen
    for peer, head in seen:
        assert isinstance(peer, dict)
        assert (("commonName", "kplane-admin"),) in peer["subject"]
        assert f"Authorization: Bearer {pki.admin_token()}".encode() in head
