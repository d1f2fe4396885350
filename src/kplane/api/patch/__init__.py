"""The three patch formats of the Kubernetes API, as pure functions over JSON-shaped values.

``json_patch`` (RFC 6902), ``merge_patch`` (RFC 7386) and ``strategic_merge`` (Kubernetes strategic
merge patch, driven by a ``kplane.api.schema.SchemaNode``). None of them modifies its inputs; all
raise ``PatchError`` (a ``ValueError``) for a patch that is malformed or does not apply.

``strategic_merge`` loads on first use: it brings the schema package (~1.5 MiB resident), which a
client that only diffs or merge-patches (an operator's manager) never needs.
"""

from typing import TYPE_CHECKING, Any

from kplane.api.patch._base import PatchError
from kplane.api.patch.jsonpatch import json_patch
from kplane.api.patch.mergepatch import merge_patch

if TYPE_CHECKING:
    from kplane.api.patch.strategic import strategic_merge

__all__ = ["PatchError", "json_patch", "merge_patch", "strategic_merge"]


def __getattr__(name: str) -> Any:
    if name == "strategic_merge":
        from kplane.api.patch.strategic import strategic_merge

        return strategic_merge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
