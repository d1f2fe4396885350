"""The base of every generated model (generated: do not edit)."""

from __future__ import annotations

import msgspec


class Model(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """A Kubernetes API value: all fields optional, None fields omitted on the wire."""
