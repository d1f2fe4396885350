"""The embedded SQLite backend: an append-only revision log in one file, with group commit.

``SQLiteStorage`` implements ``kplane.server.storage.Storage``; see ``backend`` for its design.
"""

from kplane.server.storage.sqlite.backend import SQLiteStorage

__all__ = ["SQLiteStorage"]
