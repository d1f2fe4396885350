"""Cron schedules as robfig/cron's ParseStandard reads them (upstream's CronJob parser;
reference/cluster.md §7.4)."""

from __future__ import annotations

import datetime

import pytest

from kplane.controllers import cronsched

UTC = datetime.UTC


def at(*args: int) -> datetime.datetime:
    return datetime.datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("spec", "after", "expected"),
    [
        ("*/5 * * * *", at(2026, 3, 1, 10, 2, 30), at(2026, 3, 1, 10, 5)),
        ("*/5 * * * *", at(2026, 3, 1, 10, 5), at(2026, 3, 1, 10, 10)),  # strictly after
        ("@hourly", at(2026, 3, 1, 10, 0, 1), at(2026, 3, 1, 11, 0)),
        ("@daily", at(2026, 12, 31, 23, 59), at(2027, 1, 1, 0, 0)),
        ("@monthly", at(2026, 1, 31, 0, 0), at(2026, 2, 1, 0, 0)),
        ("@weekly", at(2026, 3, 2, 0, 0), at(2026, 3, 8, 0, 0)),  # Sundays
        ("30 9 * jan-mar mon-fri", at(2026, 3, 6, 10, 0), at(2026, 3, 9, 9, 30)),  # Fri → Mon
        # Both days restricted: either matches (the 13th, or any Friday).
        ("0 0 13 * fri", at(2026, 3, 1, 0, 0), at(2026, 3, 6, 0, 0)),
        # Day of week unrestricted: only the 13th.
        ("0 0 13 * *", at(2026, 3, 1, 0, 0), at(2026, 3, 13, 0, 0)),
        ("0 0 13 * ?", at(2026, 3, 1, 0, 0), at(2026, 3, 13, 0, 0)),
        ("0 0 29 2 *", at(2026, 3, 1, 0, 0), at(2028, 2, 29, 0, 0)),
        ("5,10-12/2 * * * *", at(2026, 3, 1, 10, 5), at(2026, 3, 1, 10, 10)),
        ("0 12 * * *", at(2026, 3, 1, 12, 0), at(2026, 3, 2, 12, 0)),
        # The zone's wall clock: noon in Paris is 11:00 UTC in winter, 10:00 in summer.
        ("TZ=Europe/Paris 0 12 * * *", at(2026, 3, 1, 0, 0), at(2026, 3, 1, 11, 0)),
        ("CRON_TZ=Europe/Paris 0 12 * * *", at(2026, 7, 1, 0, 0), at(2026, 7, 1, 10, 0)),
    ],
)
def test_next(spec: str, after: datetime.datetime, expected: datetime.datetime) -> None:
    assert cronsched.parse(spec).next_after(after) == expected


def test_zone_argument() -> None:
    sched = cronsched.parse("0 12 * * *", cronsched.load_zone("America/New_York"))
    assert sched.next_after(at(2026, 1, 1)) == at(2026, 1, 1, 17, 0)


def test_never() -> None:
    assert cronsched.parse("0 0 30 2 *").next_after(at(2026, 1, 1)) is None


@pytest.mark.parametrize(
    "spec",
    [
        "* * * *",
        "60 * * * *",
        "* * 0 * *",
        "5-1 * * * *",
        "*/0 * * * *",
        "@often",
        "x * * * *",
        "TZ=Nowhere/X * * * * *",
    ],
)
def test_invalid(spec: str) -> None:
    with pytest.raises(cronsched.ScheduleError):
        cronsched.parse(spec)


def test_local_zone_refused() -> None:
    with pytest.raises(cronsched.ScheduleError):
        cronsched.load_zone("Local")
