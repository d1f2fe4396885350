"""CustomResourceDefinitions from types declared with ``markers.kind``, as controller-gen writes them.

``crds(types)`` groups the root types by (group, kind): each group is one CRD whose versions are
the types' versions (reference/controllers.md §7.2-7.3):

* names: plural, singular, kind, listKind, shortNames, categories; scope; CRD name
  ``<plural>.<group>``; these must agree across the versions of one kind;
* storage: a single version is the storage version; with several, exactly one must say
  ``storage=True`` (controller-gen: "CRD for <kind> has no storage version");
* per version: ``served``, ``storage``, ``deprecated``/``deprecationWarning``, the schema
  (``schemagen``), ``subresources`` (status, scale) and ``additionalPrinterColumns``;
* versions ordered by Kubernetes version priority (v2 > v1 > v1beta1 > v1alpha1).

With ``conversion`` (a ``ConversionService``), a kind of several versions one of which is the
``@conversion.hub`` gets ``spec.conversion``: strategy Webhook, ConversionReview v1, the service's
``/convert`` (kubebuilder adds the same stanza through a kustomize patch; the CA bundle is left to
whoever issues the certificate).

``write(crds, directory)`` writes each to ``<group>_<plural>.yaml`` (controller-gen's
``config/crd/bases`` file names) as a ``---``-led YAML document with sorted keys.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from kplane.runtime import markers, schemagen
from kplane.runtime.webhook import conversion as conversion_mod

CRD = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ConversionService:
    """Where the API server reaches the conversion webhook: a Service and port, path ``/convert``."""

    namespace: str
    name: str
    port: int = 443
    path: str = "/convert"

    def stanza(self) -> dict[str, Any]:
        service = {"name": self.name, "namespace": self.namespace, "path": self.path, "port": self.port}
        return {
            "strategy": "Webhook",
            "webhook": {"clientConfig": {"service": service}, "conversionReviewVersions": ["v1"]},
        }


class CRDError(ValueError):
    """Declarations that do not make one valid CRD (no storage version, names that disagree...)."""


def root_types(candidates: Iterable[Any]) -> list[type[Any]]:
    """The classes among ``candidates`` declared with ``markers.kind`` (order kept, no duplicates)."""
    seen: list[type[Any]] = []
    for obj in candidates:
        if isinstance(obj, type) and markers.kind_info(obj) is not None and obj not in seen:
            seen.append(obj)
    return seen


def crds(
    types: Iterable[type[Any]],
    options: schemagen.Options = schemagen.DEFAULT_OPTIONS,
    *,
    conversion: ConversionService | None = None,
) -> list[CRD]:
    """One CRD per (group, kind) of ``types``, sorted by CRD name."""
    by_kind: dict[tuple[str, str], list[type[Any]]] = {}
    for cls in root_types(types):
        info = markers.kind_info(cls)
        assert info is not None
        by_kind.setdefault((info.group, info.kind), []).append(cls)
    out = []
    for classes in by_kind.values():
        crd = _crd(classes, options)
        if conversion is not None and len(classes) > 1 and any(conversion_mod.is_hub(c) for c in classes):
            crd["spec"]["conversion"] = conversion.stanza()
        out.append(crd)
    return sorted(out, key=lambda crd: str(crd["metadata"]["name"]))


def _crd(classes: list[type[Any]], options: schemagen.Options) -> CRD:
    infos = [markers.kind_info(cls) for cls in classes]
    pairs = sorted(
        ((info, cls) for info, cls in zip(infos, classes, strict=True) if info is not None),
        key=lambda p: version_priority(p[0].version),
    )
    first = pairs[0][0]
    for info, _ in pairs[1:]:
        for attr in ("plural", "singular", "scope", "short_names", "categories"):
            if getattr(info, attr) != getattr(first, attr):
                raise CRDError(
                    f"CRD for {first.kind}.{first.group}: versions {first.version} and {info.version} "
                    f"declare different {attr}"
                )
    versions = [info.version for info, _ in pairs]
    if len(set(versions)) != len(versions):
        raise CRDError(f"CRD for {first.kind}.{first.group}: version declared twice")
    storage = [info.version for info, _ in pairs if info.storage]
    if len(pairs) == 1:
        storage = [first.version]
    if not storage:
        raise CRDError(f"CRD for {first.kind}.{first.group} has no storage version")
    if len(storage) > 1:
        raise CRDError(f"CRD for {first.kind}.{first.group} has more than one storage version: {storage}")
    names: dict[str, Any] = {
        "kind": first.kind,
        "listKind": first.list_kind,
        "plural": first.plural,
        "singular": first.singular,
    }
    if first.short_names:
        names["shortNames"] = list(first.short_names)
    if first.categories:
        names["categories"] = list(first.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": first.crd_name},
        "spec": {
            "group": first.group,
            "names": names,
            "scope": first.scope,
            "versions": [_version(info, cls, info.version in storage, options) for info, cls in pairs],
        },
    }


def _version(
    info: markers.KindInfo, cls: type[Any], storage: bool, options: schemagen.Options
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": info.version,
        "schema": {"openAPIV3Schema": schemagen.root_schema(cls, options)},
        "served": info.served,
        "storage": storage,
    }
    subresources: dict[str, Any] = {}
    if info.status:
        subresources["status"] = {}
    if info.scale is not None:
        subresources["scale"] = info.scale.to_dict()
    if subresources:
        out["subresources"] = subresources
    if info.printer_columns:
        out["additionalPrinterColumns"] = [c.to_dict() for c in info.printer_columns]
    if info.deprecated or info.deprecation_warning:
        out["deprecated"] = True
        if info.deprecation_warning:
            out["deprecationWarning"] = info.deprecation_warning
    return out


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """A sort key putting higher-priority versions first (GA > beta > alpha, higher numbers first;
    versions not of the ``vN[alpha|betaM]`` form last, by name), as upstream's version ordering."""
    match = _VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


def file_name(crd: CRD) -> str:
    """controller-gen's file name: ``<group>_<plural>.yaml``."""
    spec = crd["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


def dump(doc: dict[str, Any]) -> str:
    """One YAML document as controller-gen writes them: ``---`` first, keys sorted, block style."""
    return "---\n" + yaml.safe_dump(doc, sort_keys=True, default_flow_style=False, width=1_000_000)


def write(docs: Iterable[CRD], directory: Path) -> list[Path]:
    """Write each CRD to ``directory/<group>_<plural>.yaml`` (created if missing); returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for crd in docs:
        path = directory / file_name(crd)
        path.write_text(dump(crd))
        paths.append(path)
    return paths
