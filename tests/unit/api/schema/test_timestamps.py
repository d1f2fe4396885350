"""metav1.Time / MicroTime normalization and Go's parse errors (apimachinery time.go, micro_time.go)."""

from __future__ import annotations

import pytest

from kplane.api.schema import timestamps


@pytest.mark.parametrize(
    ("value", "seconds", "micros"),
    [
        ("2024-05-01T08:00:00Z", "2024-05-01T08:00:00Z", None),
        ("2024-05-01T10:00:00.5+02:00", "2024-05-01T08:00:00Z", None),
        ("2024-05-01T10:00:00.500000+02:00", "2024-05-01T08:00:00Z", "2024-05-01T08:00:00.500000Z"),
        ("2024-05-01T08:00:00.1234567Z", "2024-05-01T08:00:00Z", None),
        ("2024-12-31T23:30:00.000001-01:00", "2025-01-01T00:30:00Z", "2025-01-01T00:30:00.000001Z"),
        ("2024-13-01T00:00:00Z", None, None),
        ("2024-05-01 08:00:00Z", None, None),
        ("yesterday", None, None),
    ],
    ids=["seconds", "offset-fraction", "offset-micros", "nanos", "year-wrap", "bad-month", "space", "text"],
)
def test_normalize(value: str, seconds: str | None, micros: str | None) -> None:
    """UTC; a Time's fraction is cut; a MicroTime needs exactly six digits (else None)."""
    assert timestamps.normalize(value, micro=False) == seconds
    assert timestamps.normalize(value, micro=True) == micros
    # asked again (answered from the memo this time): the same answers
    assert timestamps.normalize(value, micro=False) == seconds
    assert timestamps.normalize(value, micro=True) == micros


def test_normalize_memo_stays_bounded() -> None:
    """Many distinct values never grow the memo past its size; long values are not kept at all."""
    for i in range(timestamps._MEMO_SIZE + 10):
        value = f"2024-05-01T08:00:00.{i:06d}Z"
        assert timestamps.normalize(value, micro=True) == value
        assert len(timestamps._memo) <= timestamps._MEMO_SIZE
    long = "2024-05-01T08:00:00." + "1" * 100 + "Z"
    assert timestamps.normalize(long, micro=False) == "2024-05-01T08:00:00Z"
    assert (long, False) not in timestamps._memo


@pytest.mark.parametrize(
    ("value", "micro", "error"),
    [
        ("2024-05-01T08:00:00Z", False, None),
        (
            "2024-05-01T08:00:00Z",
            True,
            'as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
        ),
        ("2024-05-01T08:00:00.123456789Z", True, 'cannot parse "789Z" as "Z07:00"'),
        ("yesterday", False, 'as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
        ("2024-05-01T08:00:00", False, 'cannot parse "" as "Z07:00"'),
        ("2024-02-30T00:00:00Z", False, ": day out of range"),
        ("2024-05-01T25:00:00Z", False, ": hour out of range"),
        ("2024-05-01T08:00:00Zx", False, ': extra text: "x"'),
    ],
)
def test_parse_error(value: str, micro: bool, error: str | None) -> None:
    """Go's time.Parse error text for the Time and MicroTime layouts."""
    got = timestamps.parse_error(value, micro=micro)
    if error is None:
        assert got is None
    else:
        assert got is not None and got.startswith(f'parsing time "{value}"') and got.endswith(error)
