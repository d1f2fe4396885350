"""metav1.Time / MicroTime normalization (apimachinery time.go, micro_time.go)."""

from __future__ import annotations

import pytest

from kplane.api.schema import timestamps


@pytest.mark.parametrize(
    ("value", "seconds", "micros"),
    [
        ("2024-05-01T08:00:00Z", "2024-05-01T08:00:00Z", "2024-05-01T08:00:00.000000Z"),
        ("2024-05-01T10:00:00.5+02:00", "2024-05-01T08:00:00Z", "2024-05-01T08:00:00.500000Z"),
        ("2024-05-01T08:00:00.1234567Z", "2024-05-01T08:00:00Z", "2024-05-01T08:00:00.123456Z"),
        ("2024-12-31T23:30:00-01:00", "2025-01-01T00:30:00Z", "2025-01-01T00:30:00.000000Z"),
        ("2024-13-01T00:00:00Z", None, None),
        ("2024-05-01 08:00:00Z", None, None),
        ("yesterday", None, None),
    ],
    ids=["canonical", "offset-fraction", "nanos-cut", "year-wrap", "bad-month", "space", "text"],
)
def test_normalize(value: str, seconds: str | None, micros: str | None) -> None:
    """UTC, fractions cut (not rounded) to whole seconds or six digits; non-RFC 3339 is None."""
    assert timestamps.normalize(value, micro=False) == seconds
    assert timestamps.normalize(value, micro=True) == micros
