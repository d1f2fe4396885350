"""Cron schedules as the CronJob controller reads them (robfig/cron ``ParseStandard``, reference/cluster.md
§7.4): five fields (minute, hour, day of month, month, day of week) with ``*``, ``?``, lists, ranges,
steps and month/day names, or a descriptor (``@yearly``, ``@annually``, ``@monthly``, ``@weekly``,
``@daily``, ``@midnight``, ``@hourly``); an optional ``TZ=<zone>`` / ``CRON_TZ=<zone>`` prefix.

Days: when day of month or day of week is unrestricted (``*`` or ``?``), both must match; when both
are restricted, either may (cron's rule). Times are computed on the wall clock of the zone.
"""

from __future__ import annotations

import dataclasses
import datetime
import zoneinfo

_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 6),
)
_NAMES = [
    {},
    {},
    {},
    {
        m: i + 1
        for i, m in enumerate(
            ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        )
    },
    {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])},
]
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_SEARCH_YEARS = 5


class ScheduleError(ValueError):
    """The schedule cannot be parsed (message as the controller reports it)."""


@dataclasses.dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_star: bool
    weekdays_star: bool
    zone: datetime.tzinfo | None = None

    def next_after(self, after: datetime.datetime) -> datetime.datetime | None:
        """The first scheduled instant strictly after ``after`` (aware), in UTC; None if none within
        five years (e.g. ``0 0 30 2 *``)."""
        zone = self.zone or datetime.UTC
        t = after.astimezone(zone).replace(second=0, microsecond=0) + datetime.timedelta(minutes=1)
        limit = t.year + _SEARCH_YEARS
        while t.year <= limit:
            if t.month not in self.months:
                t = _first_of_next_month(t)
            elif not self._day_matches(t):
                t = (t + datetime.timedelta(days=1)).replace(hour=0, minute=0)
            elif t.hour not in self.hours:
                t = (t + datetime.timedelta(hours=1)).replace(minute=0)
            elif t.minute not in self.minutes:
                t = t + datetime.timedelta(minutes=1)
            else:
                return t.astimezone(datetime.UTC)
        return None

    def _day_matches(self, t: datetime.datetime) -> bool:
        dom = t.day in self.days
        dow = (t.isoweekday() % 7) in self.weekdays
        if self.days_star or self.weekdays_star:
            return dom and dow
        return dom or dow


def _first_of_next_month(t: datetime.datetime) -> datetime.datetime:
    year, month = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
    return t.replace(year=year, month=month, day=1, hour=0, minute=0)


def parse(spec: str, zone: datetime.tzinfo | None = None) -> Schedule:
    """Parse ``spec``; a ``TZ=``/``CRON_TZ=`` prefix overrides ``zone``."""
    text = spec.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        head, _, text = text.partition(" ")
        zone = load_zone(head.split("=", 1)[1])
        text = text.strip()
    if text.startswith("@"):
        if text not in _DESCRIPTORS:
            raise ScheduleError(f"unrecognized descriptor: {text}")
        text = _DESCRIPTORS[text]
    parts = text.split()
    if len(parts) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(parts)}: {text}")
    values: list[frozenset[int]] = []
    stars: list[bool] = []
    for i, (part, (_, lo, hi)) in enumerate(zip(parts, _FIELDS, strict=True)):
        got, star = _field(part, lo, hi, _NAMES[i])
        values.append(got)
        stars.append(star)
    minutes, hours, days, months, weekdays = values
    return Schedule(minutes, hours, days, months, weekdays, stars[2], stars[4], zone)


def load_zone(name: str) -> datetime.tzinfo:
    """The IANA zone ``name`` (``Local`` is refused, as for ``spec.timeZone``)."""
    try:
        if not name or name == "Local":
            raise zoneinfo.ZoneInfoNotFoundError(name)
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
        raise ScheduleError(f"unknown time zone {name}") from err


def _field(text: str, lo: int, hi: int, names: dict[str, int]) -> tuple[frozenset[int], bool]:
    out: set[int] = set()
    star = False
    for item in text.split(","):
        rng, _, step_text = item.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"bad step: {item}")
            step = int(step_text)
        if rng in ("*", "?"):
            start, end = lo, hi
            star = star or step == 1
        else:
            a, dash, b = rng.partition("-")
            start = _number(a, lo, hi, names)
            end = _number(b, lo, hi, names) if dash else (hi if step_text else start)
            if end < start:
                raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {item}")
        out.update(range(start, end + 1, step))
    return frozenset(out), star


def _number(text: str, lo: int, hi: int, names: dict[str, int]) -> int:
    value = names.get(text.lower())
    if value is None:
        if not text.isdigit():
            raise ScheduleError(f"failed to parse int from {text}")
        value = int(text)
    if not lo <= value <= hi:
        raise ScheduleError(f"value {value} out of range [{lo}, {hi}]")
    return value
