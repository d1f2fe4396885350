"""Go's strconv.Quote, which upstream's strict decoding errors use for field names."""

from __future__ import annotations

import pytest

from kplane.api.errors import go_quote


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("spec.foo", '"spec.foo"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("a\x00b", '"a\\x00b"'),
        ("new\nline\ttab\r", '"new\\nline\\ttab\\r"'),
        ("\x7f\x1b", '"\\x7f\\x1b"'),
        ("zero\u200bwidth", '"zero\\u200bwidth"'),
        ("\U000e0001", '"\\U000e0001"'),
        ("é🙂", '"é🙂"'),
    ],
)
def test_go_quote_matches_strconv_quote(value: str, quoted: str) -> None:
    assert go_quote(value) == quoted
