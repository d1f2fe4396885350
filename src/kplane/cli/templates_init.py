# ruff: noqa: E501
"""Texts of the files ``kplane init`` writes (``string.Template``: ``$name`` substituted, ``$$`` a ``$``)."""

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "$project"
version = "0.1.0"
description = "A Kubernetes operator written with kplane"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["kplane"]

[project.optional-dependencies]
test = ["pytest>=8", "pytest-asyncio>=0.23"]

[tool.hatch.build.targets.wheel]
packages = ["$package"]

[tool.ruff]
line-length = 110

[tool.ruff.lint]
select = ["E", "F", "I", "UP", "B"]

[tool.ruff.lint.isort]
known-first-party = ["$package", "tests"]

[tool.pytest.ini_options]
testpaths = ["tests"]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""

PACKAGE_INIT = '''"""The $project operator (made with ``kplane init``)."""
'''

PACKAGE_MAIN = '''"""``python -m $package``: run the operator against the cluster of ``$$KUBECONFIG``."""

import asyncio

from kplane.runtime import log

from $package import main

log.configure()  # lines end with controller=... reconcileID=...; json=True writes JSON lines
asyncio.run(main.main())
'''

MAIN = '''"""The $project manager: one kplane ``Manager`` running every controller and webhook of this project.

``setup`` registers them; ``kplane create api`` and ``kplane create webhook`` add their lines at
the ``kplane:scaffold`` markers. ``main`` parses the flags, builds the manager and runs it until
SIGTERM or SIGINT (``python -m $package`` or ``make run``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from kplane import runtime
from kplane.runtime.webhook import WebhookServerOptions

# kplane:scaffold:imports

LEADER_ELECTION_ID = "$project.$domain"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The operator's flags."""
    p = argparse.ArgumentParser(prog="$package", description="Run the $project operator.")
    p.add_argument("--metrics-bind-address", default="0", help='address of /metrics ("0" turns it off)')
    p.add_argument("--health-probe-bind-address", default=":8081", help="address of /healthz and /readyz")
    p.add_argument("--leader-elect", action="store_true", help="run only while holding the Lease")
    p.add_argument("--leader-election-namespace", default="default")
    p.add_argument(
        "--webhook-host", default="", help='webhook listen address ("" is every interface, as in a pod)'
    )
    p.add_argument("--webhook-port", type=int, default=9443)
    p.add_argument("--webhook-cert-dir", type=Path, default=None, help="directory of tls.crt and tls.key")
    p.add_argument(
        "--webhook-self-signed", action="store_true", help="generate a self-signed certificate (development)"
    )
    return p.parse_args(argv)


def manager_options(args: argparse.Namespace) -> runtime.ManagerOptions:
    """The manager's options from the flags."""
    return runtime.ManagerOptions(
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        leader_election=args.leader_elect,
        leader_election_id=LEADER_ELECTION_ID,
        leader_election_namespace=args.leader_election_namespace,
        field_manager="$project",
        webhook=WebhookServerOptions(
            host=args.webhook_host,
            port=args.webhook_port,
            cert_dir=args.webhook_cert_dir,
            self_signed=args.webhook_self_signed,
        ),
    )


async def setup(manager: runtime.Manager) -> None:
    """Register every controller and webhook of this project with ``manager``."""
    # kplane:scaffold:setup


async def main(argv: Sequence[str] | None = None) -> None:
    """Run the operator until SIGTERM or SIGINT."""
    manager = runtime.Manager(options=manager_options(parse_args(argv)))
    try:
        await setup(manager)
        await manager.run()
    finally:
        await manager.api.close()
'''

SUBPACKAGE_INIT = '''"""$what of the $project operator."""
'''

TESTS_INIT = ""

TESTS_SUPPORT = '''"""Helpers for this project's tests: a manager on the ``kplane`` test control plane."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import pkgutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kplane import runtime, testing
from kplane.client import typed
from kplane.runtime import crdgen
from kplane.runtime.webhook import WebhookServerOptions

from $package import api, main


def api_types() -> list[type[Any]]:
    """Every custom resource type of this project (the classes declared with ``markers.kind``)."""
    members: list[Any] = []
    for info in pkgutil.walk_packages(api.__path__, prefix=f"{api.__name__}."):
        members.extend(vars(importlib.import_module(info.name)).values())
    return crdgen.root_types(members)


def new_manager(cp: testing.ControlPlane, cert_dir: Path) -> runtime.Manager:
    """A manager as ``main`` builds it, on ``cp``, with its servers on free loopback ports."""
    assert cp.config is not None
    options = main.manager_options(main.parse_args(["--health-probe-bind-address=127.0.0.1:0"]))
    options = dataclasses.replace(
        options, webhook=WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=cert_dir, self_signed=True)
    )
    return runtime.Manager(options=options, api=typed.Client(cp.config))


@contextlib.asynccontextmanager
async def running(manager: runtime.Manager) -> AsyncIterator[None]:
    """Start ``manager``, wait until its controllers run, and stop it on exit."""
    task = asyncio.create_task(manager.start())

    async def started() -> bool:
        if task.done():
            task.result()  # raises what made the start fail
        return manager.is_leader()  # True once the controllers run

    try:
        await testing.eventually(started, timeout=10)
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await manager.api.close()
'''

TESTS_CONFTEST = '''"""Fixtures shared by this project's tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from kplane import testing

from tests import support


@pytest.fixture
def kplane_crds() -> Sequence[testing.CrdSource]:
    """The CRDs the ``kplane`` control plane starts with: every type of this project."""
    return support.api_types()
'''

TEST_MAIN = '''"""The manager starts on an in-process kplane control plane and reports ready."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from kplane import testing

from $package import main
from tests import support


async def test_manager_starts_and_is_ready(kplane: testing.ControlPlane, tmp_path: Path) -> None:
    manager = support.new_manager(kplane, tmp_path)
    await main.setup(manager)
    async with support.running(manager), aiohttp.ClientSession() as session:
        probes = manager.servers["probes"]

        async def ready() -> str:
            async with session.get(f"http://127.0.0.1:{probes.port}/readyz") as resp:
                assert resp.status == 200
                return await resp.text()

        assert await testing.eventually(ready, timeout=10) == "ok"


def test_flags() -> None:
    args = main.parse_args(["--leader-elect", "--webhook-port=8443"])
    options = main.manager_options(args)
    assert options.leader_election and options.leader_election_id == main.LEADER_ELECTION_ID
    assert options.webhook.port == 8443
'''

README = """# $project

A Kubernetes operator written in Python with [kplane](https://pypi.org/project/kplane/)'s runtime
(controller-runtime's model: a manager, controllers reconciling to the desired state, webhooks).

## Layout

- `$package/main.py`: the manager; `python -m $package` runs it against `$$KUBECONFIG`'s cluster.
- `$package/api/<version>/`: the custom resource types (msgspec Structs; schema constraints as
  `typing.Annotated` markers from `kplane.runtime.markers`).
- `$package/controllers/`: one reconciler per kind; RBAC needs declared with `@rbac.permission`.
- `$package/webhooks/`: defaulting and validating webhooks (`kplane create webhook`).
- `config/crd/bases/`, `config/rbac/role.yaml`, `config/webhook/manifests.yaml`: manifests generated
  from the code (`make manifests`).
- `config/rbac/`: also the manager's service account, its role binding and its leader-election role.
- `config/manager/`: the `$project-system` namespace and the manager's Deployment;
  `config/webhook/service.yaml` (`kplane create webhook`): the Service the API server calls. The
  webhook server's certificate (`--webhook-cert-dir`, a mounted Secret) and the configurations'
  `caBundle` are yours to provide, as cert-manager does in a kubebuilder project.
- `config/samples/`: one example object per kind.
- `tests/`: tests against kplane's in-process control plane (no cluster, starts in milliseconds).

## Everyday commands

```sh
kplane create api --group apps --version v1 --kind Widget   # a type, a controller and its test
kplane create webhook --group apps --version v1 --kind Widget --defaulting --programmatic-validation
make manifests    # CRDs and RBAC roles from the types and controllers
make test         # pytest
make run          # run against the current kubeconfig's cluster
make docker-build IMG=example.com/$project:0.1.0
make deploy IMG=example.com/$project:0.1.0   # CRDs, namespace, RBAC and the manager's Deployment
```
"""

MAKEFILE = """PYTHON ?= python3
PACKAGE := $package
IMG ?= $project:latest
KPLANE := $$(PYTHON) -m kplane.cli.main

.PHONY: help test run manifests install deploy docker-build

help: ## This help
\t@grep -E '^[a-z-]+:.*## ' $$(MAKEFILE_LIST) | awk -F':.*## ' '{printf "%-14s %s\\n", $$$$1, $$$$2}'

test: ## Run the tests against an in-process kplane control plane
\t$$(PYTHON) -m pytest -q tests

manifests: ## Write CRDs (config/crd/bases), RBAC (config/rbac) and webhook configurations from the code
\t$$(KPLANE) generate crds --paths $$(PACKAGE).api --output-dir config/crd/bases \\
\t\t--conversion-service $project-system/$project-webhook-service
\t$$(KPLANE) generate rbac --paths $$(PACKAGE).controllers --output-dir config/rbac \\
\t\t--role-name $project-manager-role
\t$$(KPLANE) generate webhook --paths $$(PACKAGE).webhooks --output-dir config/webhook \\
\t\t--service $project-system/$project-webhook-service --name-prefix $project-

install: manifests ## Install the CRDs into the current kubeconfig's cluster
\tkubectl apply -f config/crd/bases

deploy: manifests ## Install the CRDs, the namespace, RBAC and the manager (image IMG)
\tkubectl apply -f config/crd/bases -f config/manager -f config/rbac $$(addprefix -f ,$$(wildcard config/webhook))
\tkubectl set image -n $project-system deployment/$project-controller-manager manager=$$(IMG)

run: manifests ## Run the operator against the current kubeconfig's cluster
\t$$(PYTHON) -m $$(PACKAGE)

docker-build: ## Build the operator's container image
\tdocker build -t $$(IMG) .
"""

DOCKERFILE = """FROM python:3.11-slim
WORKDIR /operator
COPY pyproject.toml README.md ./
COPY $package/ $package/
RUN pip install --no-cache-dir .
USER 65532:65532
ENTRYPOINT ["python", "-m", "$package"]
"""

DOCKERIGNORE = """.git
.venv
**/__pycache__
tests
config
"""

GITIGNORE = """__pycache__/
*.egg-info/
.venv/
.pytest_cache/
dist/
build/
"""

MANAGER_YAML = """apiVersion: v1
kind: Namespace
metadata:
  name: $project-system
  labels:
    app.kubernetes.io/name: $project
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $project-controller-manager
  namespace: $project-system
  labels:
    app.kubernetes.io/name: $project
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: $project
  template:
    metadata:
      labels:
        app.kubernetes.io/name: $project
    spec:
      serviceAccountName: $project-controller-manager
      containers:
      - name: manager
        image: $project:latest
        args: ["--leader-elect", "--leader-election-namespace=$project-system"]
        ports:
        - {name: webhook, containerPort: 9443}
        - {name: probes, containerPort: 8081}
        livenessProbe: {httpGet: {path: /healthz, port: 8081}}
        readinessProbe: {httpGet: {path: /readyz, port: 8081}}
"""

SERVICE_ACCOUNT_YAML = """apiVersion: v1
kind: ServiceAccount
metadata:
  name: $project-controller-manager
  namespace: $project-system
  labels:
    app.kubernetes.io/name: $project
"""

ROLE_BINDING_YAML = """# Grants the manager's service account the ClusterRole that `make manifests` writes (role.yaml).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: $project-manager-rolebinding
  labels:
    app.kubernetes.io/name: $project
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: $project-manager-role
subjects:
- kind: ServiceAccount
  name: $project-controller-manager
  namespace: $project-system
"""

LEADER_ELECTION_ROLE_YAML = """# What leader election (the Lease) and event recording need, in the manager's namespace.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: $project-leader-election-role
  namespace: $project-system
  labels:
    app.kubernetes.io/name: $project
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: $project-leader-election-rolebinding
  namespace: $project-system
  labels:
    app.kubernetes.io/name: $project
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: $project-leader-election-role
subjects:
- kind: ServiceAccount
  name: $project-controller-manager
  namespace: $project-system
"""
