"""Secrets at rest: with ``--encryption-provider-config``, ``state.db`` holds no Secret value in clear,
the stored value carries upstream's ``k8s:enc:<provider>:v1:<key>:`` prefix, and kubectl reads the
Secret back, before and after a restart and a key rotation."""

from __future__ import annotations

import base64
import os
import sqlite3
from pathlib import Path

import pytest

from tests.e2e.conftest import requires_kubectl, start_server

pytestmark = requires_kubectl

_VALUE = "correct-horse-battery-staple-0451"


def _config(path: Path, providers: str) -> Path:
    path.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\n"
        "kind: EncryptionConfiguration\n"
        "resources:\n"
        "  - resources: [secrets]\n"
        f"    providers:\n{providers}"
    )
    return path


def _key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def _rows(db: Path) -> list[bytes]:
    conn = sqlite3.connect(db)
    try:
        return [bytes(v) for (v,) in conn.execute("SELECT value FROM log WHERE value IS NOT NULL")]
    finally:
        conn.close()


@pytest.mark.parametrize("provider", ["aescbc", "aesgcm", "secretbox"])
def test_secret_not_in_clear_in_state_db(tmp_path: Path, provider: str) -> None:
    """A Secret created through kubectl is stored encrypted (prefix as upstream) and read back in clear."""
    cfg = _config(
        tmp_path / "enc.yaml",
        f"      - {provider}:\n          keys:\n            - name: key1\n              secret: {_key()}\n"
        "      - identity: {}\n",
    )
    srv = start_server(tmp_path / "data", "--encryption-provider-config", str(cfg))
    try:
        srv.kubectl("create", "secret", "generic", "s1", f"--from-literal=password={_VALUE}")
        srv.kubectl("create", "configmap", "c1", "--from-literal=plain=visible-config-value")
        out = srv.kubectl("get", "secret", "s1", "-o", "jsonpath={.data.password}").stdout
        assert base64.b64decode(out).decode() == _VALUE
    finally:
        srv.stop()
    raw = b"".join(f.read_bytes() for f in (tmp_path / "data").glob("state.db*"))
    assert _VALUE.encode() not in raw
    rows = b"\n".join(_rows(tmp_path / "data" / "state.db"))
    encoded = base64.b64encode(_VALUE.encode())
    assert _VALUE.encode() not in rows and encoded not in rows
    assert f"k8s:enc:{provider}:v1:key1:".encode() in rows
    assert b"visible-config-value" in rows  # only the configured resources are encrypted

    srv = start_server(tmp_path / "data", "--encryption-provider-config", str(cfg))
    try:
        out = srv.kubectl("get", "secret", "s1", "-o", "jsonpath={.data.password}").stdout
        assert base64.b64decode(out).decode() == _VALUE
    finally:
        srv.stop()


def test_key_rotation_as_documented(tmp_path: Path) -> None:
    """README's rotation: add the new key second, restart, make it first, rewrite, drop the old one."""
    old, new = _key(), _key()
    cfg = tmp_path / "enc.yaml"

    def keys(*named: tuple[str, str]) -> str:
        body = "".join(f"            - name: {n}\n              secret: {k}\n" for n, k in named)
        return f"      - aescbc:\n          keys:\n{body}"

    _config(cfg, keys(("old", old)))
    data = tmp_path / "data"
    srv = start_server(data, "--encryption-provider-config", str(cfg))
    srv.kubectl("create", "secret", "generic", "s1", f"--from-literal=password={_VALUE}")
    srv.stop()
    _config(cfg, keys(("new", new), ("old", old)))
    srv = start_server(data, "--encryption-provider-config", str(cfg))
    try:
        current = srv.kubectl("get", "secrets", "-A", "-o", "json").stdout
        srv.kubectl("replace", "-f", "-", input=current)
    finally:
        srv.stop()
    _config(cfg, keys(("new", new)))
    srv = start_server(data, "--encryption-provider-config", str(cfg))
    try:
        out = srv.kubectl("get", "secret", "s1", "-o", "jsonpath={.data.password}").stdout
        assert base64.b64decode(out).decode() == _VALUE
    finally:
        srv.stop()
    # The newest row of s1 is under the new key.
    conn = sqlite3.connect(data / "state.db")
    try:
        (value,) = conn.execute(
            "SELECT value FROM log WHERE key LIKE '%/secrets/default/s1' ORDER BY rev DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    assert b"k8s:enc:aescbc:v1:new:" in bytes(value)


def test_bad_config_refuses_to_start(tmp_path: Path) -> None:
    """A key of the wrong size stops the server at start with a message naming the flag."""
    cfg = _config(
        tmp_path / "enc.yaml",
        "      - aescbc:\n          keys:\n            - name: k\n              secret: "
        + base64.b64encode(b"short").decode()
        + "\n",
    )
    with pytest.raises(RuntimeError, match="did not start"):
        start_server(tmp_path / "data", "--encryption-provider-config", str(cfg))
    assert "--encryption-provider-config" in (tmp_path / "data" / "server.log").read_text()
