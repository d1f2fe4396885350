"""Exec credential plugins: environment, parsing, caching and clear errors."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import pytest

from kplane._util import clock
from kplane.client import exec_plugin, kubeconfig

V1 = "client.authentication.k8s.io/v1"


def _plugin(tmp_path: pathlib.Path, status: dict[str, Any], *, api_version: str = V1) -> str:
    """A plugin script that records its env and args, counts its runs and prints a credential."""
    script = tmp_path / "plugin.py"
    output = {"apiVersion": api_version, "kind": "ExecCredential", "status": status}
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, pathlib, sys\n"
        f"d = pathlib.Path({str(tmp_path)!r})\n"
        "runs = d / 'runs'\n"
        "runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))\n"
        "(d / 'seen.json').write_text(json.dumps({'info': os.environ.get('KUBERNETES_EXEC_INFO'),"
        " 'args': sys.argv[1:], 'x': os.environ.get('PLUGIN_X')}))\n"
        f"print(json.dumps({output!r}))\n"
    )
    script.chmod(0o755)
    return str(script)


def _runs(tmp_path: pathlib.Path) -> int:
    return int((tmp_path / "runs").read_text())


def _config(command: str, **kw: Any) -> kubeconfig.ExecConfig:
    return kubeconfig.ExecConfig(command=command, api_version=kw.pop("api_version", V1), **kw)


async def test_token_plugin_gets_exec_info_args_and_env(tmp_path: pathlib.Path) -> None:
    """The plugin runs with its args, extra env and KUBERNETES_EXEC_INFO; its token is returned."""
    cmd = _plugin(tmp_path, {"token": "s3cret"})
    auth = exec_plugin.ExecAuthenticator(
        _config(cmd, args=("--flag",), env=(("PLUGIN_X", "42"),), provide_cluster_info=True),
        cluster=kubeconfig.Cluster(server="https://h:6443", certificate_authority_data=b"CA"),
    )
    cred = await auth.credential()
    assert cred.token == "s3cret"
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["args"] == ["--flag"]
    assert seen["x"] == "42"
    info = json.loads(seen["info"])
    assert info["apiVersion"] == V1
    assert info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == "https://h:6443"
    assert info["spec"]["cluster"]["certificate-authority-data"] == "Q0E="


async def test_credential_is_cached_until_expiration(tmp_path: pathlib.Path) -> None:
    """The plugin is not rerun before expirationTimestamp, and is rerun after it."""
    fake = clock.FakeClock()  # Starts at 2026-01-01T00:00:00Z.
    cmd = _plugin(tmp_path, {"token": "t", "expirationTimestamp": "2026-01-01T00:10:00Z"})
    auth = exec_plugin.ExecAuthenticator(_config(cmd), clock=fake)
    first = await auth.credential()
    assert first.expiration is not None
    assert await auth.credential() is first
    fake.step(599)
    await auth.credential()
    assert _runs(tmp_path) == 1
    fake.step(1)
    await auth.credential()
    assert _runs(tmp_path) == 2


async def test_invalidate_forces_a_rerun(tmp_path: pathlib.Path) -> None:
    """After invalidate (a 401) the next call runs the plugin again."""
    auth = exec_plugin.ExecAuthenticator(_config(_plugin(tmp_path, {"token": "t"})))
    await auth.credential()
    await auth.credential()
    auth.invalidate()
    await auth.credential()
    assert _runs(tmp_path) == 2


async def test_v1beta1_client_certificate(tmp_path: pathlib.Path) -> None:
    """A v1beta1 plugin may return a client certificate and key instead of a token."""
    beta = "client.authentication.k8s.io/v1beta1"
    cmd = _plugin(tmp_path, {"clientCertificateData": "CERT", "clientKeyData": "KEY"}, api_version=beta)
    cred = await exec_plugin.ExecAuthenticator(_config(cmd, api_version=beta)).credential()
    assert (cred.token, cred.client_certificate_data, cred.client_key_data) == ("", b"CERT", b"KEY")


async def test_missing_command_names_it_with_install_hint(tmp_path: pathlib.Path) -> None:
    """A command that does not exist fails with its name and the install hint."""
    auth = exec_plugin.ExecAuthenticator(_config(str(tmp_path / "nope"), install_hint="brew install nope"))
    with pytest.raises(exec_plugin.ExecPluginError, match="not found\n\nbrew install nope"):
        await auth.credential()


async def test_failing_command_reports_exit_code_and_stderr(tmp_path: pathlib.Path) -> None:
    """A non-zero exit is an error carrying the exit code and the plugin's stderr."""
    script = tmp_path / "fail.py"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('boom')\nsys.exit(3)\n")
    script.chmod(0o755)
    auth = exec_plugin.ExecAuthenticator(_config(str(script)))
    with pytest.raises(exec_plugin.ExecPluginError, match="exit code 3: boom"):
        await auth.credential()


async def test_wrong_returned_api_version_is_rejected(tmp_path: pathlib.Path) -> None:
    """A plugin answering in another API version than configured is an error."""
    cmd = _plugin(tmp_path, {"token": "t"}, api_version="client.authentication.k8s.io/v1beta1")
    with pytest.raises(exec_plugin.ExecPluginError, match="configured to use API version"):
        await exec_plugin.ExecAuthenticator(_config(cmd)).credential()


def _out(kind: str = "ExecCredential", **fields: Any) -> str:
    return json.dumps({"apiVersion": V1, "kind": kind, **fields})


@pytest.mark.parametrize(
    ("output", "match"),
    [
        ("not json", "decoding stdout"),
        (_out(), "status"),
        (_out(status={}), "token or cert"),
        (_out(status={"clientKeyData": "K"}), "only certificate or key"),
        (_out("Other", status={"token": "t"}), "kind"),
        (_out(status={"token": "t", "expirationTimestamp": "soon"}), "expirationTimestamp"),
    ],
    ids=["not-json", "no-status", "empty-status", "key-only", "wrong-kind", "bad-expiry"],
)
def test_bad_output_is_rejected(output: str, match: str) -> None:
    """Malformed ExecCredential output raises ExecPluginError naming the problem."""
    with pytest.raises(exec_plugin.ExecPluginError, match=match):
        exec_plugin.parse_credential(output, expected_api_version=V1)


def test_unsupported_api_version_is_rejected() -> None:
    """Only v1 and v1beta1 are accepted in the kubeconfig."""
    with pytest.raises(exec_plugin.ExecPluginError, match="invalid apiVersion"):
        exec_plugin.ExecAuthenticator(_config("x", api_version="client.authentication.k8s.io/v1alpha1"))


async def test_interactive_always_is_refused() -> None:
    """A plugin that insists on a terminal cannot run non-interactively."""
    auth = exec_plugin.ExecAuthenticator(_config("x", interactive_mode="Always"))
    with pytest.raises(exec_plugin.ExecPluginError, match="interactive"):
        await auth.credential()
