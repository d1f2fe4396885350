"""Human-readable durations, as kubectl and the API server print ages.

``human_duration`` keeps two to three significant figures and switches units at the same
thresholds as apimachinery's ``duration.HumanDuration`` (``"5s"``, ``"2m3s"``, ``"10m"``,
``"3h"``, ``"2d3h"``, ``"5d"``, ``"2y45d"``), so that a Table cell computed here reads exactly
like one computed by kube-apiserver. ``age`` is the same for "time since a timestamp".
"""

from __future__ import annotations

import datetime

_MINUTE = 60
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR


def human_duration(seconds: float) -> str:
    """Format a duration of ``seconds`` the way kubectl prints ages.

    Slightly negative durations (down to one second, clock skew) print ``"0s"``; anything
    more negative prints ``"<invalid>"``. Fractions of a second are truncated, never rounded.
    """
    whole = int(seconds)  # truncates toward zero, as Go's int(d.Seconds()) does
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 2 * _MINUTE:
        return f"{whole}s"
    minutes = whole // _MINUTE
    if minutes < 10:
        secs = whole % _MINUTE
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    if minutes < 3 * 60:
        return f"{minutes}m"
    hours = whole // _HOUR
    if hours < 8:
        mins = minutes % 60
        return f"{hours}h{mins}m" if mins else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def parse_timestamp(value: object) -> datetime.datetime | None:
    """Parse an RFC 3339 timestamp as Kubernetes writes it (``...Z``, optional fraction).

    Returns None for a missing, empty or malformed value. A timestamp without a zone is UTC.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed


def age(timestamp: object, now: datetime.datetime) -> str:
    """Time from ``timestamp`` (an RFC 3339 string) to ``now``; ``"<unknown>"`` if absent/invalid."""
    parsed = parse_timestamp(timestamp)
    if parsed is None:
        return "<unknown>"
    return human_duration((now - parsed).total_seconds())
