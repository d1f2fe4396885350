"""``kplane create api|webhook``: add a kind, its controller and webhooks to a ``kplane init`` project.

* ``create api --group G --version V --kind K``: the type (``<pkg>/api/V/<kind>.py``: spec, status
  with conditions, ``markers.kind`` with the status subresource and printer columns), the
  controller (``<pkg>/controllers/<kind>.py``: a reconciler that reports Ready, its RBAC
  permissions, ``setup``) and its test against ``kplane.testing``, a sample object, and the
  controller's lines in ``main.py``. ``--namespaced false`` makes a cluster-scoped kind;
  ``--resource false``/``--controller false`` skip either half.
* ``create webhook --group G --version V --kind K [--defaulting] [--programmatic-validation]``:
  ``<pkg>/webhooks/V/<kind>.py`` (a ``Defaulter`` and/or a ``Validator`` on the typed object,
  ``setup``), its test, its line in ``main.py`` and, for the project's first webhook,
  ``config/webhook/service.yaml``. The kind must exist (``create api``).
  ``--conversion --spoke v2`` makes this version the hub (``@conversion.hub``) and gives each spoke
  version's type (made with ``create api --version v2 --controller false``) ``convert_to`` and
  ``convert_from`` through the hub (a field-for-field copy to edit), served on ``/convert``.

Adding a second version of a kind marks the first one the storage version, as a CRD of several
versions needs exactly one.

Run from the project's directory (or pass ``--project-dir``). Existing files are not overwritten.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kplane.cli import project as project_mod
from kplane.cli import templates_api as ta
from kplane.cli import templates_webhook as tw
from kplane.runtime.webhook import admission


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("create", help="add an API (type + controller) or webhooks to a project")
    what = p.add_subparsers(dest="what", required=True)
    api = what.add_parser("api", help="a custom resource type, its controller and tests")
    _gvk(api)
    api.add_argument("--namespaced", type=_bool, default=True, help="namespaced kind (default true)")
    api.add_argument("--plural", default="", help="default: the pluralized lowercase kind")
    api.add_argument("--resource", type=_bool, default=True, help="write the type (default true)")
    api.add_argument("--controller", type=_bool, default=True, help="write the controller (default true)")
    api.set_defaults(func=run_api)
    hook = what.add_parser("webhook", help="defaulting and validating webhooks of a kind")
    _gvk(hook)
    hook.add_argument("--defaulting", action="store_true", help="a mutating webhook with a Defaulter")
    hook.add_argument(
        "--programmatic-validation", action="store_true", help="a validating webhook with a Validator"
    )
    hook.add_argument(
        "--conversion", action="store_true", help="a conversion webhook: this version is the hub"
    )
    hook.add_argument(
        "--spoke", action="append", default=[], help="a version converted through the hub (repeatable)"
    )
    hook.set_defaults(func=run_webhook)


def _gvk(p: argparse.ArgumentParser) -> None:
    p.add_argument("--group", required=True, help="the group's first label (the domain is appended)")
    p.add_argument("--version", required=True, help="v1, v1beta1, ...")
    p.add_argument("--kind", required=True, help="CamelCase kind")
    p.add_argument("--project-dir", type=Path, default=Path("."), help="the project (default: here)")


def run_api(args: argparse.Namespace) -> int:
    return _report(
        lambda: create_api(
            args.project_dir,
            args.group,
            args.version,
            args.kind,
            namespaced=args.namespaced,
            plural=args.plural,
            resource=args.resource,
            controller=args.controller,
        )
    )


def run_webhook(args: argparse.Namespace) -> int:
    return _report(
        lambda: create_webhook(
            args.project_dir,
            args.group,
            args.version,
            args.kind,
            defaulting=args.defaulting,
            validation=args.programmatic_validation,
            conversion=args.conversion,
            spokes=args.spoke,
        )
    )


def _report(action: Any) -> int:
    try:
        written = action()
    except project_mod.ScaffoldError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


def _values(proj: project_mod.Project, group: str, version: str, kind: str, plural: str) -> dict[str, str]:
    return {
        "package": proj.package,
        "project": proj.name,
        "full_group": proj.full_group(group),
        "version": version,
        "kind": kind,
        "module": project_mod.snake(kind),
        "lower": kind.lower(),
        "plural": plural or project_mod.plural(kind),
    }


def create_api(
    root: Path,
    group: str,
    version: str,
    kind: str,
    *,
    namespaced: bool = True,
    plural: str = "",
    resource: bool = True,
    controller: bool = True,
) -> list[Path]:
    """Add a kind (module docstring); returns the files written or changed."""
    project_mod.check_names(group, version, kind)
    proj = project_mod.Project.load(root.resolve())
    if proj.resource(group, version, kind) is not None:
        raise project_mod.ScaffoldError(f"{kind} {group}/{version} already exists in this project")
    v = _values(proj, group, version, kind, plural)
    v["scope"] = "Namespaced" if namespaced else "Cluster"
    v["namespace_arg"] = ', namespace="default"' if namespaced else ""
    pkg = proj.root / proj.package
    written: list[Path] = []
    if resource:
        init = pkg / "api" / version / "__init__.py"
        if not init.exists():
            written.append(project_mod.write_new(init, project_mod.render(ta.VERSION_INIT, **v)))
        written.append(
            project_mod.write_new(init.parent / f"{v['module']}.py", project_mod.render(ta.TYPES, **v))
        )
        written.extend(_ensure_storage_version(proj, group, kind, v["module"]))
        sample = proj.root / "config" / "samples" / f"{group}_{version}_{v['lower']}.yaml"
        written.append(project_mod.write_new(sample, project_mod.render(ta.SAMPLE, **v)))
    if controller:
        module = v["module"]
        written.append(
            project_mod.write_new(
                pkg / "controllers" / f"{module}.py", project_mod.render(ta.CONTROLLER, **v)
            )
        )
        written.append(
            project_mod.write_new(
                proj.root / "tests" / f"test_{module}_controller.py",
                project_mod.render(ta.CONTROLLER_TEST, **v),
            )
        )
        main = pkg / "main.py"
        project_mod.insert_at_marker(
            main,
            "imports",
            f"from {proj.package}.controllers import {module} as {module}_controller",
            sorted_below=True,
        )
        project_mod.insert_at_marker(main, "setup", f"await {module}_controller.setup(manager)")
        written.append(main)
    proj.resources.append(
        {
            "group": group,
            "version": version,
            "kind": kind,
            "plural": v["plural"],
            "domain": proj.domain,
            "namespaced": namespaced,
            "api": resource,
            "controller": controller,
        }
    )
    proj.save()
    return written


def create_webhook(
    root: Path,
    group: str,
    version: str,
    kind: str,
    *,
    defaulting: bool,
    validation: bool,
    conversion: bool = False,
    spokes: Sequence[str] = (),
) -> list[Path]:
    """Add a kind's webhooks (module docstring); returns the files written or changed."""
    if not (defaulting or validation or conversion):
        raise project_mod.ScaffoldError(
            "say which webhooks: --defaulting, --programmatic-validation and/or --conversion"
        )
    if conversion != bool(spokes):
        raise project_mod.ScaffoldError(
            "--conversion needs at least one --spoke version, and --spoke needs --conversion"
        )
    project_mod.check_names(group, version, kind)
    proj = project_mod.Project.load(root.resolve())
    res = proj.resource(group, version, kind)
    if res is None or not res.get("api"):
        raise project_mod.ScaffoldError(
            f"{kind} {group}/{version} has no type here: run `kplane create api` first"
        )
    if res.get("webhooks"):
        raise project_mod.ScaffoldError(f"{kind} {group}/{version} already has webhooks")
    v = _values(proj, group, version, kind, str(res.get("plural", "")))
    v["mutate_path"] = admission.mutate_path(v["full_group"], version, kind)
    v["validate_path"] = admission.validate_path(v["full_group"], version, kind)
    chain = ""
    code = project_mod.render(tw.WEBHOOK_HEAD, **v)
    test = project_mod.render(tw.TEST_HEAD, **v)
    if defaulting:
        code += project_mod.render(tw.DEFAULTER, **v)
        test += project_mod.render(tw.TEST_DEFAULTER, **v)
        chain += f"\n        .with_defaulter({kind}Defaulter())"
    if validation:
        code += project_mod.render(tw.VALIDATOR, **v)
        test += project_mod.render(tw.TEST_VALIDATOR, **v)
        chain += f"\n        .with_validator({kind}Validator())"
    written: list[Path] = []
    if conversion:
        aliases = []
        for spoke in spokes:
            written.extend(_make_spoke(proj, group, version, kind, spoke, v))
            alias = f"{kind}{spoke.capitalize()}"
            aliases.append(alias)
            head_import = f"from {proj.package}.api.{version}.{v['module']} import {kind}, {kind}Spec\n"
            code = code.replace(
                head_import,
                head_import + f"from {proj.package}.api.{spoke}.{v['module']} import {kind} as {alias}\n",
                1,
            )
            test += project_mod.render(tw.TEST_CONVERSION, **v, spoke=spoke, spoke_alias=alias)
        written.append(_make_hub(proj, version, v))
        chain += f"\n        .with_conversion({', '.join(aliases)})"
        test = test.replace(
            f"from {proj.package}.webhooks.{version} import",
            "".join(
                f"from {proj.package}.api.{s}.{v['module']} import {kind} as {kind}{s.capitalize()}\n"
                for s in spokes
            )
            + f"from {proj.package}.webhooks.{version} import",
            1,
        )
    calls = chain.split("\n        ")[1:]
    builder = f"webhook.WebhookBuilder(manager, {kind})"
    if len(calls) == 1:
        body = f"return {builder}{calls[0]}.complete()"
    else:
        body = f"return (\n        {builder}{chain}\n        .complete()\n    )"
    code += project_mod.render(tw.SETUP, **v, body=body)
    pkg = proj.root / proj.package
    module = v["module"]
    for init in (pkg / "webhooks" / "__init__.py", pkg / "webhooks" / version / "__init__.py"):
        if not init.exists():
            written.append(project_mod.write_new(init, f'"""Webhooks of the {proj.name} operator."""\n'))
    written.append(project_mod.write_new(pkg / "webhooks" / version / f"{module}.py", code))
    service = proj.root / "config" / "webhook" / "service.yaml"
    if not service.exists():
        written.append(project_mod.write_new(service, project_mod.render(tw.SERVICE_YAML, **v)))
    written.append(project_mod.write_new(proj.root / "tests" / f"test_{module}_webhook.py", test))
    main = pkg / "main.py"
    alias = f"{module}_{version}_webhook"
    project_mod.insert_at_marker(
        main,
        "imports",
        f"from {proj.package}.webhooks.{version} import {module} as {alias}",
        sorted_below=True,
    )
    project_mod.insert_at_marker(main, "setup", f"{alias}.setup(manager)")
    written.append(main)
    res["webhooks"] = {"defaulting": defaulting, "validation": validation, "conversion": list(spokes)}
    proj.save()
    return written


def _replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise project_mod.ScaffoldError(f"{path}: expected {old.strip()!r} (was the file edited?)")
    path.write_text(text.replace(old, new, 1))


def _make_hub(proj: project_mod.Project, version: str, v: dict[str, str]) -> Path:
    """Mark the ``version`` type the hub (``@conversion.hub``)."""
    path = proj.root / proj.package / "api" / version / f"{v['module']}.py"
    if "@conversion.hub" not in path.read_text():
        _replace_once(
            path,
            "from kplane.runtime import markers\n",
            "from kplane.runtime import markers\nfrom kplane.runtime.webhook import conversion\n",
        )
        _replace_once(path, "\n@markers.kind(", "\n@conversion.hub\n@markers.kind(")
    return path


def _make_spoke(
    proj: project_mod.Project, group: str, hub: str, kind: str, spoke: str, v: dict[str, str]
) -> list[Path]:
    """Give the ``spoke`` version's type ``convert_to``/``convert_from`` through the hub."""
    project_mod.check_names(group, spoke, kind)
    if spoke == hub:
        raise project_mod.ScaffoldError(f"the spoke {spoke} is the hub version itself")
    res = proj.resource(group, spoke, kind)
    if res is None or not res.get("api"):
        raise project_mod.ScaffoldError(
            f"{kind} {group}/{spoke} has no type here: run `kplane create api --version {spoke}` first"
        )
    path = proj.root / proj.package / "api" / spoke / f"{v['module']}.py"
    if "def convert_to" in path.read_text():
        raise project_mod.ScaffoldError(f"{path} already converts")
    _replace_once(
        path,
        f"from {proj.package}.api.{spoke} import GROUP, VERSION\n",
        f"from {proj.package}.api.{hub}.{v['module']} import {kind} as Hub{kind}\n"
        f"from {proj.package}.api.{spoke} import GROUP, VERSION\n",
    )
    path.write_text(path.read_text() + project_mod.render(tw.SPOKE_METHODS, **v, spoke=spoke))
    return [path]


def _ensure_storage_version(proj: project_mod.Project, group: str, kind: str, module: str) -> list[Path]:
    """With a second version of a kind, mark the first one the storage version (a CRD of several
    versions needs exactly one; the new version is served, not stored)."""
    versions = [
        r["version"] for r in proj.resources if (r["group"], r["kind"]) == (group, kind) and r.get("api")
    ]
    if not versions:
        return []
    paths = [proj.root / proj.package / "api" / ver / f"{module}.py" for ver in versions]
    if any("storage=True" in p.read_text() for p in paths if p.exists()):
        return []
    _replace_once(paths[0], "    status=True,\n", "    status=True,\n    storage=True,\n")
    return [paths[0]]
