"""``kplane kubeconfig``: a kubeconfig for another user, with a client certificate from the
server's CA.

The certificate's common name is the user and each ``--group`` an organization, which is how the
server (like kube-apiserver) reads a client certificate; what the user may then do is up to RBAC.
The server URL and CA come from the admin kubeconfig in the data directory (``--server``
overrides the URL). The file is written atomically with mode 0600, or printed with ``-o -``.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import re
import sys
from pathlib import Path
from typing import Any

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "kubeconfig", help="write a kubeconfig for a user, with a certificate from the server's CA"
    )
    p.add_argument("--user", required=True, help="user name (the certificate's common name)")
    p.add_argument(
        "--group",
        action="append",
        default=[],
        help="a group of the user (repeatable; certificate organizations)",
    )
    p.add_argument(
        "--expiry", default="8760h", help="how long the certificate is valid, e.g. 24h, 30d (default 8760h)"
    )
    p.add_argument("--data-dir", type=Path, default=Path(".kplane"), help="the server's data directory")
    p.add_argument("--server", default="", help="server URL (default: the admin kubeconfig's)")
    p.add_argument(
        "-o",
        "--output",
        default="",
        help="file to write (default <data-dir>/<user>.kubeconfig; - for stdout)",
    )
    p.set_defaults(func=run)


def parse_duration(text: str) -> datetime.timedelta:
    """``1h30m``, ``24h``, ``30d``, ``90s``: a positive duration; ValueError otherwise."""
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not text or pos != len(text) or total <= 0:
        raise ValueError(f"invalid duration {text!r}: use e.g. 24h, 30d, 1h30m")
    return datetime.timedelta(seconds=total)


def build(
    data_dir: Path, user: str, groups: list[str], validity: datetime.timedelta, server: str
) -> dict[str, Any]:
    """A kubeconfig for ``user`` in ``groups`` with a fresh certificate (see the module docstring)."""
    return build_many(data_dir, [(f"{user}@kplane", user, groups)], validity, server)


def build_many(
    data_dir: Path,
    identities: list[tuple[str, str, list[str]]],
    validity: datetime.timedelta,
    server: str,
) -> dict[str, Any]:
    """One kubeconfig with a context, user and fresh certificate per ``(context, user, groups)``
    (the first is current); ``server`` defaults to the admin kubeconfig's."""
    import yaml

    from kplane.server.auth import certs

    admin = yaml.safe_load((data_dir / "kubeconfig").read_text()) if not server else None
    if admin is not None:
        server = admin["clusters"][0]["cluster"]["server"]
    pki = certs.PKI.at(data_dir)

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    users, contexts = [], []
    for context, user, groups in identities:
        cert, key = certs.issue_client_cert(pki, user, groups, validity=validity)
        users.append(
            {"name": user, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}
        )
        contexts.append(
            {"name": context, "context": {"cluster": "kplane", "user": user, "namespace": "default"}}
        )
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {"name": "kplane", "cluster": {"server": server, "certificate-authority-data": b64(pki.ca_pem())}}
        ],
        "users": users,
        "contexts": contexts,
        "current-context": identities[0][0],
    }


def run(args: argparse.Namespace) -> int:
    import yaml

    from kplane.server.auth import certs

    if not args.user or any(c.isspace() for c in args.user):
        print("kplane: --user must be a non-empty name without spaces", file=sys.stderr)
        return 2
    try:
        validity = parse_duration(args.expiry)
    except ValueError as e:
        print(f"kplane: --expiry: {e}", file=sys.stderr)
        return 2
    try:
        config = build(args.data_dir, args.user, list(dict.fromkeys(args.group)), validity, args.server)
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError) as e:
        print(f"kplane: cannot read the server's PKI or kubeconfig in {args.data_dir}: {e}", file=sys.stderr)
        return 1
    text = yaml.safe_dump(config, sort_keys=False)
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output) if args.output else args.data_dir / f"{args.user.replace(':', '_')}.kubeconfig"
    certs.write_atomic(out, text.encode(), 0o600)
    print(out)
    return 0
