"""The public surface of ``kplane.runtime``: exactly the names ``__all__`` promises, all importable."""

from __future__ import annotations

import kplane.runtime as runtime


def test_public_surface() -> None:
    """``__all__`` is sorted, complete for the documented entry points, and every name resolves."""
    assert list(runtime.__all__) == sorted(runtime.__all__)
    for name in runtime.__all__:
        assert getattr(runtime, name) is not None, name
    for name in ("Manager", "ManagerOptions", "Builder", "Request", "Result", "Reconciler", "TerminalError",
                 "GenerationChanged", "create_or_update", "set_controller_reference", "logger"):  # fmt: skip
        assert name in runtime.__all__, name
