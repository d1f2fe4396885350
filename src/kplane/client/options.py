"""What to list or watch as one value, ``ListOptions`` (metav1.ListOptions); ``ALL`` namespaces.

Every list, watch, page iteration, collection delete and ``ListWatch`` takes a ``ListOptions``
instead of repeating its keywords; ``query`` renders it as upstream's query parameters (only the
fields that differ from their defaults, so a request carries what was asked for and nothing else).

Namespaces. A namespaced resource addressed without a namespace uses the kubeconfig context's
namespace (``Config.namespace``), as kubectl, lightkube and kr8s do. Spanning every namespace is an
explicit choice: ``namespace=ALL``.
"""

from __future__ import annotations

import dataclasses
import enum


class AllNamespaces(enum.Enum):
    """The type of ``ALL``: a namespace argument meaning "every namespace"."""

    ALL = "all namespaces"


ALL = AllNamespaces.ALL
"""``namespace=ALL``: list, watch or delete across every namespace."""

Namespace = str | AllNamespaces | None
"""A namespace argument: a name, ``ALL``, or ``None`` (fall back to the next default)."""

DEFAULT_PAGE_SIZE = 500
"""client-go's pager page size."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ListOptions:
    """What a list or watch selects and from where; the defaults select everything, now.

    ``resource_version``/``resource_version_match``: upstream's semantics (``None``: most recent;
    ``"0"``: any, served from the cache). ``limit``/``continue_token`` page a list.
    ``timeout_seconds`` bounds a watch (or a list, on the server). ``allow_bookmarks`` and
    ``send_initial_events`` apply to watches only.
    """

    label_selector: str = ""
    field_selector: str = ""
    resource_version: str | None = None
    resource_version_match: str | None = None
    limit: int = 0
    continue_token: str = ""
    timeout_seconds: int | None = None
    allow_bookmarks: bool = True
    send_initial_events: bool | None = None

    def query(self, *, watch: bool = False) -> dict[str, str | int | bool]:
        """The request's query parameters (``watch=true`` and the watch-only ones when ``watch``)."""
        q: dict[str, str | int | bool] = {"watch": True} if watch else {}
        if watch and self.allow_bookmarks:
            q["allowWatchBookmarks"] = True
        if self.label_selector:
            q["labelSelector"] = self.label_selector
        if self.field_selector:
            q["fieldSelector"] = self.field_selector
        if self.resource_version is not None:
            q["resourceVersion"] = self.resource_version
        if self.resource_version_match is not None:
            q["resourceVersionMatch"] = self.resource_version_match
        if self.limit and not watch:
            q["limit"] = self.limit
        if self.continue_token and not watch:
            q["continue"] = self.continue_token
        if self.timeout_seconds is not None:
            q["timeoutSeconds"] = self.timeout_seconds
        if watch and self.send_initial_events is not None:
            q["sendInitialEvents"] = self.send_initial_events
        return q

    def selecting(self, scope: ListOptions) -> ListOptions:
        """These options with ``scope``'s selectors (a ``ListWatch`` narrows every request this way)."""
        return dataclasses.replace(
            self, label_selector=scope.label_selector, field_selector=scope.field_selector
        )
