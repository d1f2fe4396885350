"""Integer query parameters read as strconv.ParseInt reads them, and warnings as upstream writes them."""

from __future__ import annotations

import pytest

from kplane.api import errors
from kplane.server.endpoints import params, scope


@pytest.mark.parametrize(("raw", "value"), [("0", 0), ("-5", -5), ("+7", 7), (str(2**63 - 1), 2**63 - 1)])
def test_int64_values(raw: str, value: int) -> None:
    assert params.parse_int64(raw) == value


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        # strconv.ParseInt's errors, answered as they are (runtime.Convert_Slice_string_To_int64)
        (str(2**63), 'strconv.ParseInt: parsing "9223372036854775808": value out of range'),
        (str(-(2**63) - 1), 'strconv.ParseInt: parsing "-9223372036854775809": value out of range'),
        ("abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
        ("1.5", 'strconv.ParseInt: parsing "1.5": invalid syntax'),
        (" 5", 'strconv.ParseInt: parsing " 5": invalid syntax'),
        ("0x10", 'strconv.ParseInt: parsing "0x10": invalid syntax'),
        ("1\x00", 'strconv.ParseInt: parsing "1\\x00": invalid syntax'),
    ],
)
def test_out_of_range_or_malformed_is_a_400(raw: str, message: str) -> None:
    with pytest.raises(errors.BadRequest) as info:
        params.parse_int64(raw)
    assert info.value.message == message


def test_warning_values_are_escaped_filtered_and_bounded() -> None:
    """apimachinery util/net NewWarningHeader: ``299 - "text"`` with \\ and " escaped, text with a
    control character refused; apiserver's recorder: duplicates once, 4 KiB in all, then 256 runes each."""
    assert scope.warning_values(['unknown field "a\\\\x00b"', "plain", "plain", "", "bad\x00text"]) == [
        '299 - "unknown field \\"a\\\\\\\\x00b\\""',
        '299 - "plain"',
    ]
    many = scope.warning_values([f"{i:04d}" + "x" * 1000 for i in range(100)])
    assert sum(len(v) for v in many) <= scope.WARNING_TOTAL_BYTES
    assert all(len(v) <= len('299 - ""') + scope.WARNING_ITEM_RUNES for v in many)
    assert many[0].startswith('299 - "0000')
