"""``kplane init`` / ``kplane create api|webhook``: a project whose own tests pass with no edits.

The acceptance test of kplane issue 10 item 8: scaffold a project in a temporary directory, then
run that project's pytest in a subprocess with this environment's Python (kplane is installed here;
nothing is fetched), the project's directory on ``sys.path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kplane.cli import main as cli
from kplane.cli import project


def kplane(*args: str) -> int:
    return cli.main(list(args))


def run_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def test_scaffolded_project_tests_pass(tmp_path: Path) -> None:
    root = tmp_path / "ship-ops"
    assert kplane("init", str(root), "--domain", "example.com") == 0
    assert kplane("create", "api", "--project-dir", str(root), "--group", "fleet", "--version", "v1",
                  "--kind", "FrigateShip") == 0  # fmt: skip
    assert kplane("create", "api", "--project-dir", str(root), "--group", "fleet", "--version", "v2",
                  "--kind", "FrigateShip", "--controller", "false") == 0  # fmt: skip
    assert kplane("create", "webhook", "--project-dir", str(root), "--group", "fleet", "--version", "v1",
                  "--kind", "FrigateShip", "--defaulting", "--programmatic-validation",
                  "--conversion", "--spoke", "v2") == 0  # fmt: skip
    pkg = root / "ship_ops"
    for rel in (
        "pyproject.toml",
        "Makefile",
        "Dockerfile",
        "README.md",
        "ship_ops/main.py",
        "ship_ops/api/v1/frigate_ship.py",
        "ship_ops/controllers/frigate_ship.py",
        "ship_ops/webhooks/v1/frigate_ship.py",
        "tests/test_main.py",
        "tests/test_frigate_ship_controller.py",
        "tests/test_frigate_ship_webhook.py",
        "config/samples/fleet_v1_frigateship.yaml",
        "config/rbac/service_account.yaml",
        "config/rbac/role_binding.yaml",
        "config/rbac/leader_election_role.yaml",
        "config/webhook/service.yaml",
    ):
        assert (root / rel).is_file(), rel
    main_py = (pkg / "main.py").read_text()
    assert "await frigate_ship_controller.setup(manager)" in main_py
    assert "frigate_ship_v1_webhook.setup(manager)" in main_py

    result = run_in(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout  # main (2), controller, defaulting, validation, conversion
    # The generated code is lint-clean as generated (the project's own ruff settings).
    lint = run_in(root, "-m", "ruff", "check", "--no-cache", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    # ... and type-checks strictly, as the README promises.
    typed = run_in(root, "-m", "mypy", "--strict", "--no-incremental", "ship_ops", "tests")
    assert typed.returncode == 0, typed.stdout + typed.stderr

    # `make manifests`' commands: the CRD and the role come from the project's code.
    gen = [*("-m", "kplane.cli.main", "generate")]
    service = ["--conversion-service", "ship-ops-system/ship-ops-webhook-service"]
    assert run_in(root, *gen, "crds", "--paths", "ship_ops.api", *service).returncode == 0
    assert run_in(root, *gen, "rbac", "--paths", "ship_ops.controllers").returncode == 0
    crd = yaml.safe_load((root / "config/crd/bases/fleet.example.com_frigateships.yaml").read_text())
    assert crd["metadata"]["name"] == "frigateships.fleet.example.com"
    assert [(v["name"], v["storage"]) for v in crd["spec"]["versions"]] == [("v2", False), ("v1", True)]
    assert crd["spec"]["versions"][1]["subresources"] == {"status": {}}
    assert "@conversion.hub" in (pkg / "api/v1/frigate_ship.py").read_text()
    assert (
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"] == "ship-ops-webhook-service"
    )
    hooks = ["--service", "ship-ops-system/ship-ops-webhook-service", "--name-prefix", "ship-ops-"]
    assert run_in(root, *gen, "webhook", "--paths", "ship_ops.webhooks", *hooks).returncode == 0
    configs = list(yaml.safe_load_all((root / "config/webhook/manifests.yaml").read_text()))
    assert [
        (c["metadata"]["name"], [w["clientConfig"]["service"]["path"] for w in c["webhooks"]])
        for c in configs
    ] == [
        ("ship-ops-mutating-webhook-configuration", ["/mutate-fleet-example-com-v1-frigateship"]),
        ("ship-ops-validating-webhook-configuration", ["/validate-fleet-example-com-v1-frigateship"]),
    ]
    role = yaml.safe_load((root / "config/rbac/role.yaml").read_text())
    assert {
        "apiGroups": ["fleet.example.com"],
        "resources": ["frigateships/finalizers"],
        "verbs": ["update"],
    } in role["rules"]


def test_fresh_init_alone_passes(tmp_path: Path) -> None:
    assert kplane("init", str(tmp_path / "bare")) == 0
    result = run_in(tmp_path / "bare", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "p"
    assert (
        kplane("create", "api", "--project-dir", str(root), "--group", "g", "--version", "v1", "--kind", "K")
        == 1
    )
    assert "no PROJECT file" in capsys.readouterr().err
    assert kplane("init", str(root)) == 0
    assert kplane("init", str(root)) == 1
    assert "already holds a project" in capsys.readouterr().err
    args = ["create", "api", "--project-dir", str(root), "--version", "v1"]
    assert kplane(*args, "--group", "Bad_Group", "--kind", "K") == 1
    assert kplane(*args, "--group", "g", "--kind", "lower") == 1
    assert kplane(*args[:-1], "1", "--group", "g", "--kind", "K") == 1
    assert kplane(*args, "--group", "g", "--kind", "Thing", "--namespaced", "false") == 0
    assert 'scope="Cluster"' in (root / "p/api/v1/thing.py").read_text()
    assert kplane(*args, "--group", "g", "--kind", "Thing") == 1
    assert "already exists" in capsys.readouterr().err
    hook = ["create", "webhook", "--project-dir", str(root), "--group", "g", "--version", "v1"]
    assert kplane(*hook, "--kind", "Thing") == 1  # neither --defaulting nor --programmatic-validation
    assert kplane(*hook, "--kind", "Other", "--defaulting") == 1
    doc = yaml.safe_load((root / "PROJECT").read_text())
    assert doc["resources"][0]["kind"] == "Thing" and doc["resources"][0]["namespaced"] is False


def test_insert_at_marker(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("def f():\n    x = 1\n    # kplane:scaffold:setup\n")
    assert project.insert_at_marker(path, "setup", "y = 2")
    assert not project.insert_at_marker(path, "setup", "y = 2")  # once only
    assert path.read_text() == "def f():\n    x = 1\n    y = 2\n    # kplane:scaffold:setup\n"
    with pytest.raises(project.ScaffoldError, match="marker"):
        project.insert_at_marker(path, "imports", "import os")
    assert project.package_name("my-op.v2") == "my_op_v2"
    assert project.package_name("3d") == "op_3d"
    assert project.snake("WebApp") == "web_app"
