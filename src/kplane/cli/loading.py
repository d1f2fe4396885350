"""Importing a project's modules by name or path, for commands that read declarations from code.

A target is a dotted module name (a package is walked: every submodule is imported) or a path of
a ``.py`` file or a directory under the current directory (imported under the dotted name of its
path relative to it; directories are walked, skipping hidden ones, ``tests``, ``build``, virtual
environments and caches). The current directory goes first on ``sys.path``, as ``python -m`` does.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

_SKIP = frozenset({"tests", "test", "build", "dist", "venv", "__pycache__", "node_modules"})


def import_targets(targets: Iterable[str], cwd: Path | None = None) -> list[ModuleType]:
    """The modules of ``targets`` (see the module docstring), each imported once, in order."""
    root = (cwd or Path.cwd()).resolve()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    modules: dict[str, ModuleType] = {}
    for target in targets:
        for name in _module_names(target, root):
            if name not in modules:
                modules[name] = importlib.import_module(name)
    return list(modules.values())


def members(modules: Iterable[ModuleType]) -> list[Any]:
    """Every top-level value of ``modules`` (classes and functions declarations are read from)."""
    out: list[Any] = []
    for module in modules:
        out.extend(vars(module).values())
    return out


def _module_names(target: str, root: Path) -> Iterator[str]:
    path = Path(target)
    if path.exists():
        path = path.resolve()
        try:
            relative = path.relative_to(root)
        except ValueError:
            raise SystemExit(f"{target}: not under the current directory {root}") from None
        if path.is_file():
            yield _dotted(relative.with_suffix(""))
            return
        for file in sorted(path.rglob("*.py")):
            parts = file.relative_to(root).parts
            if any(p.startswith(".") or p in _SKIP for p in parts[:-1]):
                continue
            yield _dotted(file.relative_to(root).with_suffix(""))
        return
    module = importlib.import_module(target)
    yield target
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{target}."):
            yield info.name


def _dotted(relative: Path) -> str:
    parts = list(relative.parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not parts:
        raise SystemExit("the current directory itself is not a module: name a package or file")
    return ".".join(parts)
