"""The three patch formats of the Kubernetes API, as pure functions over JSON-shaped values.

``json_patch`` (RFC 6902), ``merge_patch`` (RFC 7386) and ``strategic_merge`` (Kubernetes strategic
merge patch, driven by a ``kplane.api.schema.SchemaNode``). None of them modifies its inputs; all
raise ``PatchError`` (a ``ValueError``) for a patch that is malformed or does not apply.
"""

from kplane.api.patch._base import PatchError
from kplane.api.patch.jsonpatch import json_patch
from kplane.api.patch.mergepatch import merge_patch
from kplane.api.patch.strategic import strategic_merge

__all__ = ["PatchError", "json_patch", "merge_patch", "strategic_merge"]
