"""``kplane generate crds|rbac|webhook``: manifests from a project's code (controller-gen's job).

* ``crds``: every class declared with ``kplane.runtime.markers.kind`` in the given modules becomes
  part of a CustomResourceDefinition, one file per CRD in ``--output-dir`` (default
  ``config/crd/bases``), named ``<group>_<plural>.yaml``;
* ``rbac``: the permissions declared with ``kplane.runtime.rbac.permission`` on the controllers of
  the given modules, merged into ``role.yaml`` in ``--output-dir`` (default ``config/rbac``): a
  ClusterRole named ``--role-name`` (default ``manager-role``), plus Roles for namespaced rules;
* ``webhook``: the admission webhooks that the modules' ``setup(manager)`` functions register
  (``kplane.runtime.webhook.manifests``), as ``manifests.yaml`` in ``--output-dir`` (default
  ``config/webhook``), reached through ``--service NAMESPACE/NAME[:PORT]``, the configurations'
  names after ``--name-prefix``.

Modules are named by ``--paths`` (dotted names, files or directories; see ``loading``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kplane.cli import loading
from kplane.runtime import crdgen, rbac, schemagen
from kplane.runtime.webhook import manifests


def add_parser(sub: Any) -> None:
    p = sub.add_parser("generate", help="write CRD and RBAC manifests from Python types and controllers")
    what = p.add_subparsers(dest="what", required=True)
    crds = what.add_parser("crds", help="CustomResourceDefinitions from types declared with markers.kind")
    _paths(crds)
    crds.add_argument("--output-dir", type=Path, default=Path("config/crd/bases"))
    crds.add_argument(
        "--allow-dangerous-types", action="store_true", help="map float to number (refused by default)"
    )
    crds.add_argument("--max-desc-len", type=int, default=None, help="truncate descriptions (0 drops them)")
    crds.add_argument(
        "--conversion-service",
        default="",
        metavar="NAMESPACE/NAME[:PORT]",
        help="give kinds with a @conversion.hub version a conversion webhook on this Service",
    )
    crds.set_defaults(func=run_crds)
    roles = what.add_parser("rbac", help="RBAC roles from permissions declared on controllers")
    _paths(roles)
    roles.add_argument("--output-dir", type=Path, default=Path("config/rbac"))
    roles.add_argument("--role-name", default="manager-role")
    roles.set_defaults(func=run_rbac)
    hooks = what.add_parser(
        "webhook", help="webhook configurations from the webhooks setup functions register"
    )
    _paths(hooks)
    hooks.add_argument("--output-dir", type=Path, default=Path("config/webhook"))
    hooks.add_argument(
        "--service",
        default="system/webhook-service",
        metavar="NAMESPACE/NAME[:PORT]",
        help="the Service in front of the webhook server (default system/webhook-service, kubebuilder's)",
    )
    hooks.add_argument("--name-prefix", default="", help="prefix of the two configurations' names")
    hooks.set_defaults(func=run_webhook)


def _paths(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--paths",
        nargs="+",
        default=["."],
        help="modules to read: dotted names, .py files or directories (default: the current directory)",
    )


def run_crds(args: argparse.Namespace) -> int:
    types = crdgen.root_types(loading.members(loading.import_targets(args.paths)))
    if not types:  # as controller-gen: nothing to write is not an error
        print("no types declared with kplane.runtime.markers.kind found", file=sys.stderr)
        return 0
    options = schemagen.Options(
        allow_dangerous_types=args.allow_dangerous_types, max_description_length=args.max_desc_len
    )
    try:
        docs = crdgen.crds(types, options, conversion=_service(args.conversion_service))
    except (crdgen.CRDError, schemagen.SchemaError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in crdgen.write(docs, args.output_dir):
        print(path)
    return 0


def _service(text: str, flag: str = "--conversion-service") -> crdgen.ConversionService | None:
    if not text:
        return None
    ref, _, port = text.partition(":")
    namespace, _, name = ref.partition("/")
    if not namespace or not name or (port and not port.isdigit()):
        raise SystemExit(f"{flag}: expected NAMESPACE/NAME[:PORT], got {text!r}")
    return crdgen.ConversionService(namespace, name, int(port or 443))


def run_rbac(args: argparse.Namespace) -> int:
    rules = rbac.declared(loading.members(loading.import_targets(args.paths)))
    args.output_dir.mkdir(parents=True, exist_ok=True)
    path = args.output_dir / "role.yaml"
    docs = rbac.roles(rules, args.role_name)
    path.write_text("".join(crdgen.dump(doc) for doc in docs))
    print(path)
    return 0


def run_webhook(args: argparse.Namespace) -> int:
    service = _service(args.service, "--service")
    assert service is not None
    setups = [
        fn
        for module in loading.import_targets(args.paths)
        if callable(fn := vars(module).get("setup")) and getattr(fn, "__module__", "") == module.__name__
    ]
    try:
        hooks = manifests.collect(setups)
    except manifests.WebhookManifestError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    target = manifests.Service(service.namespace, service.name, service.port)
    docs = manifests.configurations(hooks, target, name_prefix=args.name_prefix)
    if not docs:  # as controller-gen: nothing to write is not an error
        print("no admission webhooks registered by the setup functions found", file=sys.stderr)
        return 0
    args.output_dir.mkdir(parents=True, exist_ok=True)
    path = args.output_dir / "manifests.yaml"
    path.write_text("".join(crdgen.dump(doc) for doc in docs))
    print(path)
    return 0
