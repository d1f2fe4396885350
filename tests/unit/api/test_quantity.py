"""Quantities: exact parsing and upstream's canonical text."""

from __future__ import annotations

import pytest

from kplane.api import quantity


@pytest.mark.parametrize(
    ("text", "binary", "canonical"),
    [
        ("500m", False, "500m"),
        ("2000", False, "2k"),
        ("1.5", False, "1500m"),
        ("1Gi", True, "1Gi"),
        ("1536Mi", True, "1536Mi"),
        ("0", False, "0"),
        ("3", False, "3"),
    ],
)
def test_canonical(text: str, binary: bool, canonical: str) -> None:
    """A parsed quantity prints as upstream's Quantity.String() of its format."""
    value = quantity.parse(text)
    assert value is not None
    assert quantity.is_binary(text) is binary
    assert quantity.canonical(value, binary=binary) == canonical


def test_parse_refuses_garbage() -> None:
    """What is not a quantity parses to None."""
    assert quantity.parse("1.2.3") is None and quantity.parse("Gi") is None
