"""The backend-agnostic ``Storage`` contract, as checks that any implementation must pass.

Each check is an ``async`` function taking a ``Factory`` (which opens a fresh, empty store; the
caller closes what it opened) and raising ``AssertionError`` on a violation. Revisions are counted
from the store's ``current_revision()`` when it is opened: 0 for memory and SQLite, etcd's revision
for a store on a shared etcd (each store then has its own key prefix). A test module runs
every check in ``CHECKS`` against every implementation::

    @pytest.mark.parametrize("check", contract.CHECKS, ids=contract.check_id)
    async def test_contract(check: fixtures.Check, factory: fixtures.Factory) -> None:
        await check(factory)

The checks live by area (``reading``, ``updating``, ``watching``, ``history``) and share
``fixtures``, which tests of a single backend use too.
"""

from __future__ import annotations

from kplane.server.storage.testing import fixtures, history, reading, updating, watching


def check_id(check: fixtures.Check) -> str:
    """A readable pytest id for a check."""
    return getattr(check, "__name__", "check").removeprefix("check_")


HISTORY_CHECKS: list[fixtures.Check] = [history.check_history, history.check_history_writers]
"""Checks of the optional ``History`` (run against the backends that keep one): ``check_history``
for reading the past, ``check_history_writers`` for the time and writer of each write."""

CHECKS: list[fixtures.Check] = [
    reading.check_create_then_get,
    reading.check_list_in_key_order,
    reading.check_prefix_isolation,
    reading.check_revision_is_global,
    reading.check_resource_version_stamping,
    reading.check_list_at_historical_revision,
    reading.check_list_paging,
    updating.check_concurrent_guaranteed_updates,
    updating.check_guaranteed_update_edge_cases,
    updating.check_cached_hint,
    updating.check_preconditions,
    updating.check_delete,
    watching.check_watch_events,
    watching.check_watch_from_current_revision,
    watching.check_watch_expired_after_compact,
    watching.check_too_large_revision,
    watching.check_slow_watcher_is_terminated,
    watching.check_close,
]
