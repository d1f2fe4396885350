"""Modules loaded on first use, to keep ``kplane serve`` start-up short.

``lazy_module("kplane.api.protobuf")`` returns the module object at once but runs its code only when
an attribute is first read (the standard library's ``importlib.util.LazyLoader``). Callers keep
precise types by importing the module normally under ``typing.TYPE_CHECKING``::

    if TYPE_CHECKING:
        from kplane.api import protobuf
    else:
        protobuf = lazy_module("kplane.api.protobuf")
"""

from __future__ import annotations

import importlib.util
import sys
import types


def lazy_module(name: str) -> types.ModuleType:
    """``name``, imported now if it already was, else loaded on first attribute access."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
