"""``kplane init``: a new operator project in a directory (kubebuilder's ``init``, in Python terms).

Writes ``PROJECT``, ``pyproject.toml`` (depending on kplane), ``README.md``, a ``Makefile`` (test,
run, manifests, install, docker-build), a ``Dockerfile``, the package (``main.py`` with the
Manager and its flags, ``api/``, ``controllers/``), ``config/`` (crd, rbac, manager, samples) and
``tests/`` whose test starts the manager on ``kplane.testing``. The directory may exist but must
not hold a project already; files are never overwritten unless ``--force``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kplane.cli import project as project_mod
from kplane.cli import templates_init as t


def add_parser(sub: Any) -> None:
    p = sub.add_parser("init", help="make a new operator project")
    p.add_argument("directory", nargs="?", type=Path, default=Path("."), help="where (default: here)")
    p.add_argument("--domain", default="example.com", help="suffix of the API groups (default example.com)")
    p.add_argument("--project-name", default="", help="default: the directory's name")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        root = init(args.directory, domain=args.domain, name=args.project_name, force=args.force)
    except project_mod.ScaffoldError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(
        f"made an operator project in {root}; next: kplane create api --group <g> --version v1 --kind <Kind>"
    )
    return 0


def init(directory: Path, *, domain: str = "example.com", name: str = "", force: bool = False) -> Path:
    """Write a new project into ``directory`` (module docstring); returns its resolved path."""
    root = directory.resolve()
    if (root / project_mod.PROJECT_FILE).exists() and not force:
        raise project_mod.ScaffoldError(f"{root} already holds a project (PROJECT exists)")
    name = name or root.name
    if domain and not all(project_mod._DNS_LABEL.match(part) for part in domain.split(".")):
        raise project_mod.ScaffoldError(f"domain {domain!r} must be DNS labels")
    package = project_mod.package_name(name)
    values = {"project": name, "package": package, "domain": domain}
    files = {
        "pyproject.toml": t.PYPROJECT,
        "README.md": t.README,
        "Makefile": t.MAKEFILE,
        "Dockerfile": t.DOCKERFILE,
        ".dockerignore": t.DOCKERIGNORE,
        ".gitignore": t.GITIGNORE,
        f"{package}/__init__.py": t.PACKAGE_INIT,
        f"{package}/__main__.py": t.PACKAGE_MAIN,
        f"{package}/main.py": t.MAIN,
        "tests/__init__.py": t.TESTS_INIT,
        "tests/support.py": t.TESTS_SUPPORT,
        "tests/conftest.py": t.TESTS_CONFTEST,
        "tests/test_main.py": t.TEST_MAIN,
        "config/manager/manager.yaml": t.MANAGER_YAML,
        "config/rbac/service_account.yaml": t.SERVICE_ACCOUNT_YAML,
        "config/rbac/role_binding.yaml": t.ROLE_BINDING_YAML,
        "config/rbac/leader_election_role.yaml": t.LEADER_ELECTION_ROLE_YAML,
    }
    for sub, what in (("api", "API types"), ("controllers", "Controllers"), ("webhooks", "Webhooks")):
        files[f"{package}/{sub}/__init__.py"] = project_mod.render(t.SUBPACKAGE_INIT, what=what, project=name)
    for rel, template in files.items():
        project_mod.write_new(root / rel, project_mod.render(template, **values), force=force)
    for keep in ("config/crd/bases", "config/samples"):
        (root / keep).mkdir(parents=True, exist_ok=True)
        (root / keep / ".gitkeep").touch()
    project_mod.Project(root, domain, name, package).save()
    return root
