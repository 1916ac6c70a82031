"""The Lance session a backend opens its tables with, and the operation that relies on it.

One `lance.Session` per worker process holds Lance's index and metadata caches for every table
the worker opens (`app.config.lance_session` sizes it). Without one, each request would open
its dataset with a cache of its own and load a vector index again for every search. The cache
never makes an answer stale: every request still resolves the table's latest version from
storage, and cached entries are keyed by the files they were read from.

PrewarmTableIndex (LanceDB's `prewarm_index`) loads an index into that session ahead of the
first search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from backends.core.extensions import PrewarmTableIndexRequest, PrewarmTableIndexResponse
from backends.tables import indexes
from backends.tables.datasets import TableLocation
from backends.tables.latest import LatestVersions

if TYPE_CHECKING:
    from lance import Session


class SessionTables:
    """The session part of `MetadataNamespace` (which defines `open`)."""

    lance_session: Session | None = None
    latest_versions: LatestVersions | None = None
    open: Any

    def use_lance_session(self, session: Session | None) -> None:
        """Open every table with `session` from now on, and remember the latest version of
        each local one (`backends.tables.latest`); the server calls it once, before serving."""
        self.lance_session = session
        self.latest_versions = None if session is None else LatestVersions()

    def opened_table(
        self, table_id: list[str], location: str, storage_options: dict[str, str] | None = None,
        properties: dict[str, str] | None = None,
    ) -> TableLocation:
        """The table `table_id` at `location`, opened with this worker's session."""
        return TableLocation(
            id=list(table_id), location=location, storage_options=dict(storage_options or {}),
            properties=dict(properties or {}), session=self.lance_session,
            latest=self.latest_versions,
        )

    def prewarm_table_index(self, request: PrewarmTableIndexRequest) -> PrewarmTableIndexResponse:
        indexes.prewarm_index(self.open(request), request.index_name)
        return PrewarmTableIndexResponse()
