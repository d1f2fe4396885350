"""``kplane kubeconfig``: a 0600 kubeconfig whose client certificate names the user and groups and
is signed by the server's CA for the asked validity."""

from __future__ import annotations

import base64
import datetime
import os
import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from kplane.cli import kubeconfig, main
from kplane.server.auth import certs, write_admin_kubeconfig


@pytest.mark.parametrize(
    ("text", "seconds"), [("24h", 86400), ("30d", 30 * 86400), ("1h30m", 5400), ("90s", 90)]
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert kubeconfig.parse_duration(text) == datetime.timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "0h", "h", "10", "1y", "-1h", "1h 2m"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        kubeconfig.parse_duration(text)


def test_writes_user_certificate(tmp_path: Path) -> None:
    pki = certs.ensure_pki(tmp_path)
    write_admin_kubeconfig(pki, "https://127.0.0.1:6443", tmp_path / "kubeconfig")
    out = tmp_path / "alice.kc"
    argv = ["kubeconfig", "--user", "alice", "--group", "devs", "--group", "ops", "--expiry", "48h"]
    assert main.main([*argv, "--data-dir", str(tmp_path), "-o", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    cfg = yaml.safe_load(out.read_text())
    assert cfg["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
    cert = x509.load_pem_x509_certificate(
        base64.b64decode(cfg["users"][0]["user"]["client-certificate-data"])
    )
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == ["alice"]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "devs",
        "ops",
    ]
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert datetime.timedelta(hours=47) < lifetime <= datetime.timedelta(hours=49)
    ca = x509.load_pem_x509_certificate(pki.ca_pem())
    assert cert.issuer == ca.subject


def test_missing_data_dir_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["kubeconfig", "--user", "bob", "--data-dir", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err.startswith("kplane: cannot read the server's PKI or kubeconfig")
