"""The JSON spellings of apimachinery's time and duration values, as Go's ``encoding/json`` writes them.

* ``metav1.Time``: RFC 3339 in UTC with whole seconds (``"2026-01-02T03:04:05Z"``); the zero
  time is ``null``.
* ``metav1.MicroTime``: the same with exactly six fractional digits (``"...05.000000Z"``).
* ``metav1.Duration``: Go's ``time.Duration.String()`` (``"1h0m0s"``, ``"1.5s"``, ``"300ms"``).
"""

from __future__ import annotations

import datetime

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_NS_PER_S = 1_000_000_000


def _utc(seconds: int, nanos: int) -> tuple[datetime.datetime, int]:
    """Normalize ``(seconds, nanos)`` as Go's ``time.Unix`` does; return the whole-second time and nanos.

    Raises ``OverflowError`` outside the years 1-9999, which Go's JSON encoder also refuses.
    """
    seconds += nanos // _NS_PER_S
    nanos %= _NS_PER_S
    return _EPOCH + datetime.timedelta(seconds=seconds), nanos


def rfc3339(seconds: int, nanos: int) -> str | None:
    """``metav1.Time`` as JSON: ``None`` for the zero time (both parts 0), else whole-second RFC 3339."""
    if seconds == 0 and nanos == 0:
        return None
    when, _ = _utc(seconds, nanos)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(seconds: int, nanos: int) -> str | None:
    """``metav1.MicroTime`` as JSON: ``None`` for the zero time, else RFC 3339 with microseconds."""
    if seconds == 0 and nanos == 0:
        return None
    when, frac = _utc(seconds, nanos)
    return when.strftime("%Y-%m-%dT%H:%M:%S") + f".{frac // 1000:06d}Z"


def _fraction(value: int, digits: int) -> tuple[str, int]:
    """Split ``value`` into its last ``digits`` decimal digits (as ``.ddd`` without trailing zeros)."""
    whole, frac = divmod(value, 10**digits)
    text = f"{frac:0{digits}d}".rstrip("0")
    return (f".{text}" if text else ""), whole


def go_duration(nanoseconds: int) -> str:
    """Format a duration of ``nanoseconds`` exactly like Go's ``time.Duration.String()``.

    Below one second the unit is ``ns``, ``µs`` or ``ms`` with a decimal fraction; from one
    second up it is ``[<h>h][<m>m]<s>[.<frac>]s``, where hours never roll over into days and a
    leading unit forces the smaller ones (``"1h0m0s"``). Zero is ``"0s"``.
    """
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    u = abs(nanoseconds)
    if u < 1000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        frac, whole = _fraction(u, 3)
        return f"{sign}{whole}{frac}µs"
    if u < _NS_PER_S:
        frac, whole = _fraction(u, 6)
        return f"{sign}{whole}{frac}ms"
    frac, secs = _fraction(u, 9)
    minutes, secs = divmod(secs, 60)
    out = f"{secs}{frac}s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        out = f"{minutes}m{out}"
        if hours:
            out = f"{hours}h{out}"
    return sign + out
