"""Integer query parameters read as upstream's parameter codec reads them.

Upstream decodes ``limit``, ``timeoutSeconds`` and ``gracePeriodSeconds`` into ``int64`` fields
with ``strconv.ParseInt(s, 10, 64)`` (``runtime.Convert_Slice_string_To_int64``); a failure is a
400 whose message is ParseInt's own (``strconv.ParseInt: parsing "x": invalid syntax`` or
``... value out of range``). Negative values pass the codec: each endpoint decides what they mean.
"""

from __future__ import annotations

import re

from kplane.api import errors
from kplane.api.errors import go_quote

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def parse_int64(raw: str) -> int:
    """``raw`` as Go's ``strconv.ParseInt(raw, 10, 64)`` reads it; 400 with its message otherwise."""
    if not _DECIMAL.fullmatch(raw):
        raise errors.BadRequest(f"strconv.ParseInt: parsing {go_quote(raw)}: invalid syntax")
    value = int(raw)
    if not INT64_MIN <= value <= INT64_MAX:
        raise errors.BadRequest(f"strconv.ParseInt: parsing {go_quote(raw)}: value out of range")
    return value


def query_int64(query: object, name: str) -> int | None:
    """The first value of query parameter ``name`` as an int64, or None when absent or empty."""
    raw = query.get(name)  # type: ignore[attr-defined]
    if raw is None or raw == "":
        return None
    return parse_int64(str(raw))
