"""Go's JSON spellings of times and durations."""

from __future__ import annotations

import pytest

from kplane.api.protobuf import formats


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (999, "999ns"),
        (1_500, "1.5µs"),
        (1_000_000, "1ms"),
        (300_000_000, "300ms"),
        (1_000_000_000, "1s"),
        (1_500_000_000, "1.5s"),
        (90 * 10**9, "1m30s"),
        (300 * 10**9, "5m0s"),
        (3600 * 10**9, "1h0m0s"),
        (26 * 3600 * 10**9 + 1, "26h0m0.000000001s"),
        (-90 * 10**9, "-1m30s"),
    ],
)
def test_go_duration(nanoseconds: int, text: str) -> None:
    """Durations print exactly like Go's time.Duration.String()."""
    assert formats.go_duration(nanoseconds) == text


def test_rfc3339_whole_seconds_and_zero() -> None:
    """Time drops the fraction (normalizing nanos as time.Unix does); the zero time is None."""
    assert formats.rfc3339(1767323045, 999_999_999) == "2026-01-02T03:04:05Z"
    assert formats.rfc3339(1767323045, 1_000_000_000) == "2026-01-02T03:04:06Z"
    assert formats.rfc3339(0, 0) is None
    assert formats.rfc3339(-1, 0) == "1969-12-31T23:59:59Z"


def test_rfc3339_micro_has_six_digits() -> None:
    """MicroTime always prints six fractional digits, truncating nanoseconds."""
    assert formats.rfc3339_micro(1767323045, 0) == "2026-01-02T03:04:05.000000Z"
    assert formats.rfc3339_micro(1767323045, 123_456_789) == "2026-01-02T03:04:05.123456Z"
    assert formats.rfc3339_micro(0, 0) is None


def test_out_of_range_time_overflows() -> None:
    """Times outside years 1-9999 raise OverflowError (Go's JSON encoder refuses them too)."""
    with pytest.raises(OverflowError):
        formats.rfc3339(1 << 40, 0)
