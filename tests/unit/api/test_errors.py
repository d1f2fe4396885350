"""Error text helpers: messages printed as upstream's Go helpers print them."""

from __future__ import annotations

from kplane.api import errors


def test_aggregate_prints_as_upstream() -> None:
    """One message as is; several distinct ones bracketed, each once (utilerrors.NewAggregate)."""
    assert errors.aggregate(["a"]) == "a"
    assert errors.aggregate(["a", "b", "a"]) == "[a, b]"
    assert errors.aggregate(["a", "a"]) == "a"
