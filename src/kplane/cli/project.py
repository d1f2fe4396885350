"""An operator project made by ``kplane init``: its ``PROJECT`` file, names, and how files are added.

``PROJECT`` (YAML, at the project's root) records what the scaffolding commands need later: the
layout, the domain, the project and package names, and every resource added (group, version,
kind, plural, scope, and which of api/controller/webhooks exist), as kubebuilder's PROJECT file
does. Files are written from ``string.Template`` texts; code is added to existing modules only at
``# kplane:scaffold:<name>`` marker lines (the line goes just above the marker, indented as it is).
"""

from __future__ import annotations

import dataclasses
import keyword
import re
import string
from pathlib import Path
from typing import Any

import yaml

from kplane.runtime import naming

LAYOUT = "kplane.dev/v1"
PROJECT_FILE = "PROJECT"


class ScaffoldError(Exception):
    """A scaffolding command that cannot proceed; its text is shown to the user."""


@dataclasses.dataclass
class Project:
    """The contents of ``PROJECT`` and the directory it sits in."""

    root: Path
    domain: str
    name: str
    package: str
    resources: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @classmethod
    def load(cls, root: Path) -> Project:
        path = root / PROJECT_FILE
        if not path.exists():
            raise ScaffoldError(f"{path}: no PROJECT file; run `kplane init` first")
        doc = yaml.safe_load(path.read_text()) or {}
        if doc.get("layout") != LAYOUT:
            raise ScaffoldError(f"{path}: layout {doc.get('layout')!r} is not {LAYOUT}")
        return cls(
            root,
            str(doc.get("domain", "")),
            str(doc["projectName"]),
            str(doc["package"]),
            list(doc.get("resources") or []),
        )

    def save(self) -> None:
        doc = {
            "layout": LAYOUT,
            "domain": self.domain,
            "projectName": self.name,
            "package": self.package,
            "resources": self.resources,
        }
        (self.root / PROJECT_FILE).write_text(yaml.safe_dump(doc, sort_keys=False))

    def resource(self, group: str, version: str, kind: str) -> dict[str, Any] | None:
        for res in self.resources:
            if (res["group"], res["version"], res["kind"]) == (group, version, kind):
                return res
        return None

    def full_group(self, group: str) -> str:
        return f"{group}.{self.domain}" if self.domain else group


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_VERSION = re.compile(r"^v\d+((alpha|beta)\d+)?$")
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def package_name(name: str) -> str:
    """A Python package name for project ``name`` (lowercase, ``-`` and ``.`` → ``_``)."""
    out = re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_")
    if not out or out[0].isdigit() or keyword.iskeyword(out):
        out = f"op_{out}"
    return out


def check_names(group: str, version: str, kind: str) -> None:
    """Refuse a group, version or kind Kubernetes would refuse (kubebuilder checks the same)."""
    if not all(_DNS_LABEL.match(part) for part in group.split(".")):
        raise ScaffoldError(f"group {group!r} must be DNS labels: lowercase letters, digits, '-' and '.'")
    if not _VERSION.match(version):
        raise ScaffoldError(f"version {version!r} must look like v1, v2beta1 or v1alpha2")
    if not _KIND.match(kind):
        raise ScaffoldError(f"kind {kind!r} must be CamelCase, starting with an uppercase letter")


def snake(kind: str) -> str:
    """``WebApp`` → ``web_app`` (module names)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", kind).lower()


def plural(kind: str) -> str:
    return naming.pluralize(kind.lower())


def render(template: str, **values: str) -> str:
    """``template`` with ``$name`` substituted (``$$`` is a literal ``$``); a missing name is a bug."""
    return string.Template(template).substitute(values)


def write_new(path: Path, text: str, *, force: bool = False) -> Path:
    """Write ``path`` (parents created); refuse to overwrite an existing file unless ``force``."""
    if path.exists() and not force:
        raise ScaffoldError(f"{path} already exists (use --force to overwrite)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def insert_at_marker(path: Path, marker: str, line: str, *, sorted_below: bool = False) -> bool:
    """Add ``line`` at ``# kplane:scaffold:<marker>`` in ``path`` unless already present: just above
    the marker, indented as it is; or, with ``sorted_below``, into the run of lines just below the
    marker, kept sorted (import blocks, so that isort-style linters accept them)."""
    tag = f"# kplane:scaffold:{marker}"
    lines = path.read_text().splitlines(keepends=True)
    if any(other.strip() == line.strip() for other in lines):
        return False
    for i, existing in enumerate(lines):
        if existing.strip() != tag:
            continue
        indent = existing[: len(existing) - len(existing.lstrip())]
        if sorted_below:
            end = i + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            lines[i + 1 : end] = sorted([*lines[i + 1 : end], f"{indent}{line}\n"])
        else:
            lines.insert(i, f"{indent}{line}\n")
        path.write_text("".join(lines))
        return True
    raise ScaffoldError(f"{path}: marker {tag!r} not found; add it where new lines should go")
