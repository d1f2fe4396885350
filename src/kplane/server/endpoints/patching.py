"""PATCH: turn a patch body into the registry ``Transform`` that applies it to the current object.

JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch (built-in kinds only;
merge keys and strategies come from the kind's schema). Apply patches (server-side apply) do not
come here: ``crud`` hands them to the field manager, which merges with field ownership.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.api import patch as patches
from kplane.api.catalog import ResourceRecord
from kplane.server.endpoints import negotiation
from kplane.server.registry.store import Transform

if TYPE_CHECKING:
    from kplane.api import schema
else:
    schema = lazy_module("kplane.api.schema")

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

        def apply_json(current: Object) -> Object:
            try:
                return _as_object(patches.json_patch(current, patch))
            except patches.PatchError as err:
                raise errors.APIError(
                    f"the server rejected our request due to an error in our request: {err}",
                    code=422,
                    reason="Invalid",
                ) from None

        return apply_json
    if content_type == negotiation.MERGE_PATCH:

        def apply_merge(current: Object) -> Object:
            return _as_object(patches.merge_patch(current, patch))

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


def _as_object(value: Any) -> Object:
    if not isinstance(value, dict):
        raise errors.BadRequest("the patched object must be a JSON object")
    return value
