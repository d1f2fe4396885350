"""Tests for kplane.api.duration: kubectl-style ages."""

from __future__ import annotations

import datetime

import pytest

from kplane.api import duration

_DAY = 86400


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(0, "0s", id="zero"),
        pytest.param(-1.5, "0s", id="small-skew"),
        pytest.param(-2, "<invalid>", id="future"),
        pytest.param(5.9, "5s", id="truncates"),
        pytest.param(119, "119s", id="seconds-up-to-2m"),
        pytest.param(120, "2m", id="two-minutes"),
        pytest.param(123, "2m3s", id="minutes-and-seconds"),
        pytest.param(599, "9m59s", id="under-10m"),
        pytest.param(600, "10m", id="ten-minutes"),
        pytest.param(179 * 60 + 59, "179m", id="minutes-up-to-3h"),
        pytest.param(3 * 3600, "3h", id="three-hours"),
        pytest.param(3 * 3600 + 5 * 60, "3h5m", id="hours-and-minutes"),
        pytest.param(8 * 3600 + 59 * 60, "8h", id="hours-only-from-8h"),
        pytest.param(47 * 3600, "47h", id="hours-up-to-2d"),
        pytest.param(2 * _DAY, "2d", id="two-days"),
        pytest.param(2 * _DAY + 3 * 3600, "2d3h", id="days-and-hours"),
        pytest.param(5 * _DAY, "5d", id="five-days"),
        pytest.param(8 * _DAY + 5 * 3600, "8d", id="days-only-from-8d"),
        pytest.param(729 * _DAY, "729d", id="days-up-to-2y"),
        pytest.param(730 * _DAY, "2y", id="two-years"),
        pytest.param((730 + 45) * _DAY, "2y45d", id="years-and-days"),
        pytest.param(9 * 365 * _DAY + 100 * _DAY, "9y", id="years-only-from-8y"),
    ],
)
def test_human_duration_matches_kubectl(seconds: float, text: str) -> None:
    """human_duration switches units at the same thresholds as apimachinery's HumanDuration."""
    assert duration.human_duration(seconds) == text


def test_age_parses_rfc3339_with_z_and_fraction() -> None:
    """age measures from RFC 3339 timestamps with a Z suffix and optional fractional seconds."""
    now = datetime.datetime(2026, 1, 1, 0, 10, tzinfo=datetime.UTC)
    assert duration.age("2026-01-01T00:00:00Z", now) == "10m"
    assert duration.age("2026-01-01T00:07:57.250000Z", now) == "2m2s"


@pytest.mark.parametrize("value", [None, "", "yesterday", 12])
def test_age_of_missing_or_bad_timestamp_is_unknown(value: object) -> None:
    """A missing or unparseable timestamp prints <unknown>, never raises."""
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    assert duration.age(value, now) == "<unknown>"


def test_parse_timestamp_treats_naive_as_utc() -> None:
    """A timestamp without a zone is read as UTC."""
    parsed = duration.parse_timestamp("2026-01-01T00:00:00")
    assert parsed == datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
