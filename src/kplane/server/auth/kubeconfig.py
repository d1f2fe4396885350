"""The admin kubeconfig that ``kplane serve`` writes next to its data.

The user entry carries both the admin client certificate and the admin bearer token. kubectl
accepts that (a certificate is not counted as a second "authentication method" by its config
validation) and uses both: it presents the certificate in the TLS handshake and sends the token in
``Authorization``. Either one alone authenticates as ``kplane-admin``; the certificate is checked
first, so it is what identifies the caller when both are present.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from kplane.server.auth import certs

CLUSTER_NAME = "kplane"
CONTEXT_NAME = "kplane"


def admin_kubeconfig(pki: certs.PKI, server_url: str, *, embed: bool = True) -> dict[str, Any]:
    """The admin kubeconfig as a dict (``apiVersion: v1``, ``kind: Config``).

    With ``embed`` the CA, certificate, key and token are inlined (``*-data`` fields and ``token``),
    so the file stands alone; without it the file refers to the PKI files by absolute path
    (``certificate-authority``, ``client-certificate``, ``client-key``, ``tokenFile``) and stays
    valid only as long as they do.
    """
    cluster: dict[str, Any] = {"server": server_url}
    user: dict[str, Any] = {}
    if embed:
        cluster["certificate-authority-data"] = _b64(pki.ca_pem())
        user["client-certificate-data"] = _b64(pki.admin_cert_file.read_bytes())
        user["client-key-data"] = _b64(pki.admin_key_file.read_bytes())
        user["token"] = pki.admin_token()
    else:
        cluster["certificate-authority"] = str(pki.ca_cert_file.resolve())
        user["client-certificate"] = str(pki.admin_cert_file.resolve())
        user["client-key"] = str(pki.admin_key_file.resolve())
        user["tokenFile"] = str(pki.admin_token_file.resolve())
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
        "users": [{"name": certs.ADMIN_USER, "user": user}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CLUSTER_NAME, "user": certs.ADMIN_USER, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT_NAME,
    }


def write_admin_kubeconfig(pki: certs.PKI, server_url: str, path: Path, *, embed: bool = True) -> None:
    """Write ``admin_kubeconfig(pki, server_url, embed=embed)`` as YAML to ``path``, mode 0600.

    Atomic: a reader (say, a kubectl started while the server boots) sees the previous file or the
    new one, never a partial one. The parent directory is created (mode 0700) if missing.
    """
    text = yaml.safe_dump(admin_kubeconfig(pki, server_url, embed=embed), sort_keys=False)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    certs.write_atomic(path, text.encode(), 0o600)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
