"""``metav1.Time`` and ``metav1.MicroTime`` as the Go API types store them.

Upstream decodes a timestamp with ``time.Parse(RFC3339)`` (any offset, any fraction) and encodes
it again in UTC: a ``Time`` as whole seconds (``2024-05-01T08:00:00Z``; the fraction is cut, not
rounded), a ``MicroTime`` with exactly six fractional digits (``2024-05-01T08:00:00.500000Z``). So a
value written with an offset or a fraction is read back normalized. ``normalize`` does that for
one string; the built-in schemas apply it to every field of either type.
"""

from __future__ import annotations

import datetime
import re

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})\Z")
_SECONDS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")
_MICROS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z\Z")


def normalize(value: str, *, micro: bool) -> str | None:
    """``value`` in the canonical form of a Time (``micro=False``) or MicroTime, or None when it
    is not an RFC 3339 timestamp Go parses (then the caller reports it)."""
    m = _RFC3339.match(value)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    fraction = (m.group(7) or "")[:6].ljust(6, "0")
    zone = m.group(8)
    if zone == "Z":
        tz = datetime.UTC
    else:
        sign = -1 if zone[0] == "-" else 1
        tz = datetime.timezone(sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        when = datetime.datetime(year, month, day, hour, minute, second, int(fraction), tzinfo=tz)
        utc = when.astimezone(datetime.UTC)
    except (ValueError, OverflowError):
        return None
    if (_MICROS if micro else _SECONDS).match(value):
        return value  # already canonical (and now known to be a valid date)
    if micro:
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")
