"""PATCH: turn a patch body into the registry ``Transform`` that applies it to the current object.

JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch (built-in kinds only;
merge keys and strategies come from the kind's schema). Apply patches (server-side apply) do not
come here: ``crud`` hands them to the field manager, which merges with field ownership.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.api import patch as patches
from kplane.api.catalog import ResourceRecord
from kplane.api.patch import jsonpatch
from kplane.server.endpoints import negotiation
from kplane.server.registry.updating import Transform

if TYPE_CHECKING:
    from kplane.api import schema
    from kplane.api.schema import godecode
else:
    schema = lazy_module("kplane.api.schema")
    godecode = lazy_module("kplane.api.schema.godecode")

Object = dict[str, Any]


def supported_patch_types(record: ResourceRecord) -> list[str]:
    types = [negotiation.JSON_PATCH, negotiation.MERGE_PATCH]
    if not record.custom:
        types.append(negotiation.STRATEGIC_PATCH)
    types.append(negotiation.APPLY_PATCH)
    return types


def unsupported(record: ResourceRecord) -> errors.UnsupportedMediaType:
    return errors.UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(supported_patch_types(record))
    )


def schema_node(record: ResourceRecord) -> Any:
    """The navigator over the kind's schema for strategic merge (None when unknown)."""
    if record.custom:
        return None
    return schema.node_for_gvk(record.group, record.version, record.kind)


def transform_for(record: ResourceRecord, content_type: str, patch: Any) -> Transform:
    """A function that applies ``patch`` to a current object; errors are 4xx API errors."""
    if content_type == negotiation.JSON_PATCH:
        if isinstance(patch, list) and len(patch) > jsonpatch.MAX_OPERATIONS:
            # upstream handlers/patch.go: 413 before the patch is applied
            raise errors.RequestEntityTooLarge(
                "The allowed maximum operations in a JSON patch is "
                f"{jsonpatch.MAX_OPERATIONS}, got {len(patch)}"
            )

        def apply_json(current: Object) -> Object:
            try:
                patched = _as_object(patches.json_patch(current, patch))
            except patches.PatchError:
                # handlers/patch.go answers a failed JSON patch with NewGenericServerResponse(422):
                # upstream's fixed text, empty details, the patch library's own error dropped
                raise errors.Invalid(
                    "the server rejected our request due to an error in our request", details={}
                ) from None
            return _decoded(record, patched)

        return apply_json
    if content_type == negotiation.MERGE_PATCH:

        def apply_merge(current: Object) -> Object:
            # the current object decodes (it was stored so), so only what the patch set can fail
            touched = patch if isinstance(patch, dict) else None
            # ``current`` is the update's private copy. A custom resource's strategy changes no
            # nested value in place (the registry copies metadata, deep-copies before mutating
            # admission, and the schema step builds new containers), so the result may share the
            # subtrees the patch leaves alone: a status patch then copies little besides status.
            patched = patches.merge_patch(current, patch, share=record.custom)
            return _decoded(record, _as_object(patched), touched)

        return apply_merge
    if content_type == negotiation.STRATEGIC_PATCH:
        if record.custom:
            raise unsupported(record)
        node = schema_node(record)

        def apply_strategic(current: Object) -> Object:
            try:
                return _as_object(patches.strategic_merge(current, patch, node))
            except patches.PatchError as err:
                raise errors.BadRequest(str(err)) from None

        return apply_strategic
    raise unsupported(record)


def _decoded(record: ResourceRecord, patched: Object, touched: Object | None = None) -> Object:
    """``patched`` if it decodes into the built-in kind's Go type; else upstream's 422 (handlers/
    patch.go jsonPatcher: ``NewInvalid(GroupKind{}, "", [field.Invalid("patch", patchedJS,
    decodeErr)])``, whose empty kind and name leave the message starting ``' "" is invalid'``).
    Upstream quotes the patched JSON as json-patch marshals it (sorted keys where it touched the
    document); kplane quotes it with all keys sorted."""
    node = schema_node(record)
    if node is None:
        return patched
    found = godecode.decode_error(node, record.kind, patched, touched=touched)
    if found is None:
        return patched
    err = errors.invalid("patch", orjson.dumps(patched, option=orjson.OPT_SORT_KEYS).decode(), found)
    raise errors.Invalid(f' "" is invalid: {err}', details={"causes": [err.cause().to_dict()]})


def _as_object(value: Any) -> Object:
    if not isinstance(value, dict):
        raise errors.BadRequest("the patched object must be a JSON object")
    return value
