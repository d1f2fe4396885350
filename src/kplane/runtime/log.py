"""Structured logs with the controller, the request and a reconcile id on every line of a reconcile.

Each reconcile runs with a ``logging.LoggerAdapter`` bound to ``controller``, ``namespace``, ``name``
and ``reconcileID`` (a fresh id per pass, as controller-runtime's); ``logger()`` returns it from
inside a reconciler (controller-runtime's ``log.FromContext(ctx)``), so a reconciler's lines carry
the same fields as the framework's. The fields travel on each record as ``record.kv``, beside the
message (which they do not change): ``logging``'s default formatter does not show them.
``configure()`` (controller-runtime's ``ctrl.SetLogger(zap.New())`` in a ``main``) installs a
handler that does: ``KeyValueFormatter`` writes them as ``key=value`` after the message,
``JSONFormatter`` one JSON object per line with them as keys.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import Mapping, MutableMapping
from typing import IO, Any

import orjson

_base = logging.getLogger("kplane.runtime")
_current: contextvars.ContextVar[logging.LoggerAdapter[logging.Logger] | None] = contextvars.ContextVar(
    "kplane_runtime_logger", default=None
)


DEFAULT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
"""``KeyValueFormatter``'s format in ``configure``; the bound fields follow it."""


class _Adapter(logging.LoggerAdapter[logging.Logger]):
    """Adds its fields to each record (``record.kv``)."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        fields: Mapping[str, object] = self.extra or {}
        # LogRecord reserves "name" and friends, so the fields travel as one attribute, ``kv``.
        kwargs["extra"] = {**(kwargs.get("extra") or {}), "kv": fields}
        return msg, kwargs


def bind(logger: logging.Logger | None = None, **fields: str) -> logging.LoggerAdapter[logging.Logger]:
    """A logger adding ``fields`` to every record it writes."""
    return _Adapter(logger or _base, fields)


def logger() -> logging.LoggerAdapter[logging.Logger]:
    """The current reconcile's logger (outside a reconcile: the runtime's, with no fields)."""
    current = _current.get()
    return current if current is not None else bind()


def set_current(adapter: logging.LoggerAdapter[logging.Logger]) -> contextvars.Token[Any]:
    """Make ``adapter`` what ``logger()`` returns in this task until ``reset_current``."""
    return _current.set(adapter)


def reset_current(token: contextvars.Token[Any]) -> None:
    _current.reset(token)


class JSONFormatter(logging.Formatter):
    """One JSON object per record: ``ts``, ``level``, ``logger``, ``msg``, the bound fields, ``error``."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": record.created,
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update(getattr(record, "kv", None) or {})
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return orjson.dumps(out).decode()


class KeyValueFormatter(logging.Formatter):
    """The standard format followed by the bound fields as ``key=value``."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        kv: Mapping[str, object] = getattr(record, "kv", None) or {}
        if not kv:
            return text
        head, sep, tail = text.partition("\n")
        pairs = " ".join(f"{k}={v}" for k, v in kv.items())
        return f"{head} {pairs}{sep}{tail}"


def configure(level: int | str = logging.INFO, *, json: bool = False, stream: IO[str] | None = None) -> None:
    """Send every log record to ``stream`` (standard error) at ``level`` and above, with the bound
    fields shown: ``key=value`` after the message, or JSON lines when ``json``. Replaces the root
    logger's handlers: call it once, in a program's ``main``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter() if json else KeyValueFormatter(DEFAULT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
