"""kubeconfig parsing and client-go's KUBECONFIG merge rules."""

from __future__ import annotations

import base64
import os
import pathlib

import pytest
import yaml

from kplane.client import kubeconfig


def _write(path: pathlib.Path, doc: dict[str, object]) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _doc(
    *,
    cluster: str = "c",
    server: str = "https://one:6443",
    user: str = "u",
    context: str = "ctx",
    current: str | None = "ctx",
    user_fields: dict[str, object] | None = None,
    cluster_fields: dict[str, object] | None = None,
) -> dict[str, object]:
    doc: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server, **(cluster_fields or {})}}],
        "users": [{"name": user, "user": user_fields or {"token": "t"}}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}],
    }
    if current is not None:
        doc["current-context"] = current
    return doc


def test_parse_every_field_and_decode_data() -> None:
    """All supported cluster, user and context fields are read; *-data is base64-decoded."""
    b64 = base64.b64encode
    text = yaml.safe_dump(
        {
            "clusters": [
                {
                    "name": "c",
                    "cluster": {
                        "server": "https://h:1",
                        "certificate-authority-data": b64(b"CA").decode(),
                        "insecure-skip-tls-verify": True,
                        "tls-server-name": "api.internal",
                        "proxy-url": "http://proxy:3128",
                    },
                }
            ],
            "users": [
                {
                    "name": "u",
                    "user": {
                        "client-certificate-data": b64(b"CERT").decode(),
                        "client-key-data": b64(b"KEY").decode(),
                        "token": "tok",
                        "username": "alice",
                        "password": "pw",
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": "plugin",
                            "args": ["a", "b"],
                            "env": [{"name": "X", "value": "1"}],
                            "installHint": "install it",
                            "provideClusterInfo": True,
                            "interactiveMode": "Never",
                        },
                    },
                }
            ],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "n"}}],
            "current-context": "x",
        }
    )
    cfg = kubeconfig.parse(text)
    name, ctx, cluster, user = cfg.context()
    assert (name, ctx.namespace) == ("x", "n")
    assert cluster.certificate_authority_data == b"CA"
    assert cluster.insecure_skip_tls_verify
    assert (cluster.tls_server_name, cluster.proxy_url) == ("api.internal", "http://proxy:3128")
    assert (user.client_certificate_data, user.client_key_data) == (b"CERT", b"KEY")
    assert (user.token, user.username, user.password) == ("tok", "alice", "pw")
    assert user.exec is not None
    assert user.exec.args == ("a", "b")
    assert user.exec.env == (("X", "1"),)
    assert user.exec.command == "plugin"  # A bare name is looked up on $PATH, not resolved.
    assert user.exec.provide_cluster_info
    assert user.exec.interactive_mode == "Never"


def test_relative_paths_resolve_against_the_declaring_file(tmp_path: pathlib.Path) -> None:
    """certificate-authority, client cert/key, tokenFile and exec paths are file-relative."""
    path = _write(
        tmp_path / "conf" / "kc.yaml",
        _doc(
            cluster_fields={"certificate-authority": "pki/ca.crt"},
            user_fields={
                "client-certificate": "pki/c.crt",
                "client-key": "/abs/c.key",
                "tokenFile": "tok",
                "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/p"},
            },
        ),
    )
    _, _, cluster, user = kubeconfig.load(path).context()
    base = tmp_path / "conf"
    assert cluster.certificate_authority == str(base / "pki/ca.crt")
    assert user.client_certificate == str(base / "pki/c.crt")
    assert user.client_key == "/abs/c.key"
    assert user.token_file == str(base / "tok")
    assert user.exec is not None
    assert user.exec.command == str(base / "bin/p")


def test_kubeconfig_list_merges_first_wins(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per name the first file wins; current-context comes from the first file that sets it."""
    first = _write(tmp_path / "a.yaml", _doc(server="https://first", current=None, context="shared"))
    second_doc = _doc(server="https://second", current="other", context="shared")
    second_doc["clusters"] = [
        {"name": "c", "cluster": {"server": "https://second"}},
        {"name": "c2", "cluster": {"server": "https://c2"}},
    ]
    second_doc["contexts"] = [
        {"name": "shared", "context": {"cluster": "c2", "user": "u"}},
        {"name": "other", "context": {"cluster": "c2", "user": "u"}},
    ]
    second = _write(tmp_path / "b.yaml", second_doc)
    missing = tmp_path / "missing.yaml"
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(missing), "", str(second)]))
    merged = kubeconfig.load()
    assert merged.current_context == "other"
    assert merged.clusters["c"].server == "https://first"
    assert merged.clusters["c2"].server == "https://c2"
    assert set(merged.contexts) == {"shared", "other"}
    assert merged.context("shared")[2].server == "https://first"


def test_current_context_of_first_file_wins(tmp_path: pathlib.Path) -> None:
    """When both files set current-context, the first one's is used."""
    a = kubeconfig.load_file(_write(tmp_path / "a.yaml", _doc(current="ctx")))
    b = kubeconfig.load_file(_write(tmp_path / "b.yaml", _doc(current="zzz")))
    assert kubeconfig.merge([a, b]).current_context == "ctx"


def test_default_path_is_home_kube_config(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without $KUBECONFIG the file read is ~/.kube/config."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kubeconfig.default_paths() == [tmp_path / ".kube" / "config"]
    assert kubeconfig.load().is_empty()
    _write(tmp_path / ".kube" / "config", _doc())
    assert kubeconfig.load().current_context == "ctx"


def test_explicit_missing_path_is_an_error(tmp_path: pathlib.Path) -> None:
    """An explicitly named kubeconfig must exist."""
    with pytest.raises(kubeconfig.KubeconfigError, match="no such file"):
        kubeconfig.load(tmp_path / "nope")


@pytest.mark.parametrize(
    ("text", "match"),
    [("clusters: [", "error loading"), ("- a\n- b\n", "not a mapping"), ("clusters: [{}]", "name")],
    ids=["bad-yaml", "not-mapping", "unnamed-entry"],
)
def test_malformed_files_raise(text: str, match: str) -> None:
    """Unparsable or ill-shaped kubeconfigs raise KubeconfigError."""
    with pytest.raises(kubeconfig.KubeconfigError, match=match):
        kubeconfig.parse(text)


def test_context_resolution_errors() -> None:
    """Missing current context, context or cluster each raise a clear error."""
    cfg = kubeconfig.parse(yaml.safe_dump(_doc(current=None)))
    with pytest.raises(kubeconfig.KubeconfigError, match="no configuration"):
        cfg.context()
    with pytest.raises(kubeconfig.KubeconfigError, match='"nope"'):
        cfg.context("nope")
    dangling = kubeconfig.parse(yaml.safe_dump({"contexts": [{"name": "x", "context": {"cluster": "gone"}}]}))
    with pytest.raises(kubeconfig.KubeconfigError, match='cluster "gone" not found'):
        dangling.context("x")
