"""The root's `__manifest` table read directly, for the tables pylance's native lookup misses:
it looks for a root table's `<name>.lance` percent-encoded, so names with non-ASCII characters
or `%` are never found although the manifest holds them, and it lists only `<name>.lance`
directories at the root, not root tables registered at another location."""

from __future__ import annotations

from collections.abc import Mapping

from lance_namespace import DescribeTableResponse

from backends.core.names import joined_id
from backends.directory.layout import as_lance_opens, in_root
from backends.directory.orphans import manifest_tables


class RootManifest:
    """The manifest under `root` (a storage root), read with `storage_options`."""

    def __init__(self, root: str, storage_options: Mapping[str, str]) -> None:
        self._root, self._storage_options = root, dict(storage_options)

    def tables(self) -> dict[str, str] | None:
        """Each table's `$`-joined id and stored location; None without a readable manifest."""
        return manifest_tables(self._root, self._storage_options)

    def entry(self, table_id: list[str]) -> DescribeTableResponse | None:
        """The table's entry (its location as Lance opens it, the root's storage options), or
        None when the manifest does not hold it."""
        stored = (self.tables() or {}).get(joined_id(table_id))
        if stored is None:
            return None
        location = in_root(self._root, stored) if stored else stored
        return DescribeTableResponse(
            table=table_id[-1], namespace=table_id[:-1],
            location=as_lance_opens(self._root, location), table_uri=location,
            storage_options=self._storage_options or None,
        )
