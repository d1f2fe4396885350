"""``metav1.Time`` and ``metav1.MicroTime`` as the Go API types store them.

Upstream decodes a Time with ``time.Parse(RFC3339)`` (any offset, any fraction), a MicroTime with
``time.Parse(RFC3339Micro)`` (any offset, exactly six fractional digits), and encodes
it again in UTC: a ``Time`` as whole seconds (``2024-05-01T08:00:00Z``; the fraction is cut, not
rounded), a ``MicroTime`` with exactly six fractional digits (``2024-05-01T08:00:00.500000Z``). So a
value written with an offset or a fraction is read back normalized. ``normalize`` does that for
one string; the built-in schemas apply it to every field of either type.

Every stored object carries a few timestamps (``creationTimestamp``, one per managedFields entry)
and nearly all of them repeat: objects written in the same second share theirs. So the results for
short values are remembered (a bounded memo, cleared when full), and a repeated value costs one
dict lookup instead of a parse.
"""

from __future__ import annotations

import datetime
import re

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})\Z")
_SECONDS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")
_MICROS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z\Z")


_MEMO_SIZE = 4096
_MEMO_MAX_LENGTH = 40  # longer values (long fractions) are rare and not worth keeping
_memo: dict[tuple[str, bool], str | None] = {}
_MISSING = ""  # never a result: normalize gives a timestamp or None


def normalize(value: str, *, micro: bool) -> str | None:
    """``value`` in the canonical form of a Time (``micro=False``) or MicroTime, or None when Go
    would not parse it (``parse_error`` says why)."""
    if len(value) > _MEMO_MAX_LENGTH:
        return _normalize(value, micro)
    key = (value, micro)
    out = _memo.get(key, _MISSING)
    if out != _MISSING:
        return out
    out = _memo[key] = _normalize(value, micro)
    if len(_memo) > _MEMO_SIZE:
        _memo.clear()
    return out


def _normalize(value: str, micro: bool) -> str | None:
    m = _RFC3339.match(value)
    if m is None or (micro and len(m.group(7) or "") != 6):
        return None  # MicroTime's layout takes exactly six fractional digits
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


RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
# Layout elements in order: (element, kind); "lit" elements must match literally.
_ELEMENTS = (
    ("2006", "year"),
    ("-", "lit"),
    ("01", "month"),
    ("-", "lit"),
    ("02", "day"),
    ("T", "lit"),
    ("15", "hour"),
    (":", "lit"),
    ("04", "minute"),
    (":", "lit"),
    ("05", "second"),
)
_RANGES = {"month": (1, 12), "day": (1, 31), "hour": (0, 23), "minute": (0, 59), "second": (0, 59)}


def parse_error(value: str, *, micro: bool) -> str | None:
    """The error Go's ``time.Parse`` gives for ``value`` with the layout ``metav1.Time``
    (``time.RFC3339``) or ``MicroTime`` (``RFC3339Micro``) decodes with, or None when it parses.

    Follows Go's element-by-element parse: a mismatching element is ``cannot parse "<rest>" as
    "<element>"``, a number out of range ``<unit> out of range``, leftovers ``extra text``. A
    MicroTime needs exactly six fractional digits; a Time takes any fraction."""
    layout = RFC3339_MICRO if micro else RFC3339
    rest = value
    parts: dict[str, int] = {}

    def bad(elem: str) -> str:
        return (
            f"parsing time {_quote(value)} as {_quote(layout)}: cannot parse {_quote(rest)} as {_quote(elem)}"
        )

    for elem, kind in _ELEMENTS:
        if kind == "lit":
            if not rest.startswith(elem):
                return bad(elem)
            rest = rest[len(elem) :]
            continue
        width = 4 if kind == "year" else 2
        digits = rest[:width]
        # Go's hour accepts one digit; every other element here needs its full width.
        if kind == "hour" and len(digits) >= 1 and digits[:1].isdigit() and not digits[1:2].isdigit():
            digits = digits[:1]
        if len(digits) < (1 if kind == "hour" else width) or not digits.isdigit():
            return bad(elem)
        number = int(digits)
        low_high = _RANGES.get(kind)
        if low_high is not None and not low_high[0] <= number <= low_high[1]:
            return f"parsing time {_quote(value)}: {kind} out of range"
        parts[kind] = number
        rest = rest[len(digits) :]
    if micro:
        if len(rest) < 7 or rest[0] not in ".," or not rest[1:7].isdigit():
            return bad(".000000")
        rest = rest[7:]
    elif len(rest) >= 2 and rest[0] in ".," and rest[1].isdigit():
        i = 1
        while i < len(rest) and rest[i].isdigit():
            i += 1
        rest = rest[i:]
    if rest.startswith("Z"):
        rest = rest[1:]
    elif (
        len(rest) >= 6 and rest[0] in "+-" and rest[3] == ":" and rest[1:3].isdigit() and rest[4:6].isdigit()
    ):
        rest = rest[6:]
    else:
        return bad("Z07:00")
    if rest:
        return f"parsing time {_quote(value)}: extra text: {_quote(rest)}"
    try:
        datetime.date(parts["year"], parts["month"], parts["day"])
    except ValueError:
        return f"parsing time {_quote(value)}: day out of range"
    return None


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
