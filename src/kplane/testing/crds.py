"""Installing CustomResourceDefinitions into a test control plane and waiting until they are served.

``load`` turns sources (dicts, YAML files, directories) into CRD dicts; ``install`` creates or
replaces each through the API, then waits until the CRD's ``Established`` condition is true and
discovery lists its resource at every served version, as envtest's ``WaitForCRDs`` does. Anything
that produces CRD dicts plugs in by passing them; Python types declared with
``kplane.runtime.markers.kind`` are turned into CRDs by ``kplane.runtime.crdgen`` (the versions of
one kind, given as several types, make one CRD).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from kplane.api import errors
from kplane.client import typed
from kplane.testing import polling

CrdSource = Mapping[str, Any] | str | os.PathLike[str] | type
"""A CRD dict, the path of a YAML/JSON file or of a directory of them, or a type declared with
``kplane.runtime.markers.kind``."""

CRDS = "customresourcedefinitions.apiextensions.k8s.io"
_SUFFIXES = (".yaml", ".yml", ".json")


def load(sources: Iterable[CrdSource]) -> list[dict[str, Any]]:
    """The CRD documents of ``sources`` in order; empty YAML documents are skipped.

    Raises ``ValueError`` for a document that is not a ``CustomResourceDefinition``.
    """
    out: list[dict[str, Any]] = []
    types: list[type] = []
    for source in sources:
        if isinstance(source, type):
            types.append(source)
            continue
        if isinstance(source, Mapping):
            out.append(_checked(dict(source), "<dict>"))
            continue
        path = Path(source)
        files = sorted(p for p in path.iterdir() if p.suffix in _SUFFIXES) if path.is_dir() else [path]
        for file in files:
            for doc in yaml.safe_load_all(file.read_text()):
                if doc is not None:
                    out.append(_checked(doc, str(file)))
    if types:
        from kplane.runtime import crdgen  # only when types are given: it loads the runtime package

        if len(crdgen.root_types(types)) != len(types):
            raise ValueError("a type given as a CRD source must be declared with kplane.runtime.markers.kind")
        out.extend(crdgen.crds(types))
    return out


def _checked(doc: Any, where: str) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
        kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"{where}: expected a CustomResourceDefinition, got {kind!r}")
    return doc


async def install(
    client: typed.Client,
    crds: list[dict[str, Any]],
    *,
    timeout: float,  # noqa: ASYNC109 - a bound on polling, reported by eventually
) -> list[dict[str, Any]]:
    """Create or replace each CRD, then wait until all are established and discoverable."""
    api = client.dynamic.resource(CRDS)
    stored: list[dict[str, Any]] = []
    for crd in crds:
        try:
            stored.append(await api.create(crd))
        except errors.AlreadyExists:
            stored.append(await _replace(api, crd))
    for crd in stored:
        await polling.eventually(
            functools.partial(_served, client, crd), timeout=timeout, message=f"CRD {crd['metadata']['name']}"
        )
    client.discovery.invalidate()
    return stored


async def _replace(api: Any, crd: dict[str, Any]) -> dict[str, Any]:
    """Replace a stored CRD with ``crd``. The server's naming and establishing controllers write
    a new CRD's status just after its creation (as upstream's do), so a read-then-replace can meet
    a 409 Conflict: read again and retry (bounded)."""
    for attempt in range(8):
        current = await api.get(crd["metadata"]["name"])
        rv = current["metadata"]["resourceVersion"]
        try:
            result: dict[str, Any] = await api.update(
                {**crd, "metadata": {**crd["metadata"], "resourceVersion": rv}}
            )
            return result
        except errors.Conflict:
            if attempt == 7:
                raise
    raise AssertionError("unreachable")


async def _served(client: typed.Client, crd: dict[str, Any]) -> bool:
    """True when ``crd`` is Established and each served version's discovery lists its plural."""
    current = await client.dynamic.resource(CRDS).get(crd["metadata"]["name"])
    conditions = current.get("status", {}).get("conditions", [])
    if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
        return False
    spec = current["spec"]
    plural = spec["names"]["plural"]
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        doc = await client.rest.request("GET", f"/apis/{spec['group']}/{version['name']}")
        if not any(r.get("name") == plural for r in doc.get("resources", [])):
            return False
    return True
