"""What the directory backend tells the server (`backends.hooks`): a local root must be a
writable directory, at start and for readiness; a root on object storage must list at start;
on a local root the metadata cache validates hits by directories' modification times
(`backends.directory.stamps`)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from lance_namespace import ListTablesRequest

from backends.core.messages import readable
from backends.core.settings import ConfigurationError
from backends.directory.entries import RememberedEntries
from backends.directory.settings import DirectorySettings
from backends.directory.stamps import directory_stamper
from backends.hooks import ServerHooks, Stamper


def check_writable(root: Path) -> None:
    """Creates and removes a file in `root`, or in its nearest existing ancestor if the
    backend has not created it yet: a root the server cannot write to is not ready."""
    existing = root.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(f"{existing} is not a directory")
    with tempfile.NamedTemporaryFile(dir=existing, prefix=".lance-adapter-ready-"):
        pass


class DirectoryHooks(ServerHooks):
    """The hooks of `DirectoryBackend` (which sets `_local_root`, `_configured_root` and
    `_entries`)."""

    _local_root: Path | None = None
    _configured_root = ""
    _entries: RememberedEntries | None = None
    list_tables: object

    @classmethod
    def check_properties_at_start(cls, properties: Mapping[str, str]) -> None:
        """A local root that is (or lies under) a file, or that cannot be made or written,
        is refused before the backend opens it."""
        root = DirectorySettings.from_properties(properties).local_root()
        if root is None:
            return
        for path in (root, *root.absolute().parents):
            if path.exists():
                if not path.is_dir():
                    raise ConfigurationError(f"root {str(root)!r}: {path} is not a directory")
                break
        try:
            check_writable(root)
        except OSError as error:
            raise ConfigurationError(
                f"root {str(root)!r} cannot be created or written: {error.strerror or error}"
            ) from None

    def check_reachable_at_start(self) -> None:
        """A root on object storage is listed once: a wrong endpoint, bucket or key is refused
        at start, whether or not the manifest already touched the storage."""
        if self._local_root is not None:
            return
        try:
            self.list_tables(ListTablesRequest(id=[], limit=1))  # type: ignore[operator]
        except Exception as error:  # any failure: the storage cannot be listed
            reason = readable(str(error)) or type(error).__name__
            raise ConfigurationError(
                f"cannot reach the root {self._configured_root!r}: {reason}") from None

    def readiness_checks(self) -> list[tuple[str, Callable[[], None]]]:
        root = self._local_root
        return [] if root is None else [("root_writable", lambda: check_writable(root))]

    def cache_stamper(self) -> Stamper | None:
        if self._local_root is None:
            return None
        return directory_stamper(self._local_root, self.remembered_location)

    def remembered_location(self, table_id: list[str]) -> str | None:
        """Where the table is, when its catalog entry is remembered and current (the
        metadata cache's stamps of counts ask, on the event loop: never a lookup)."""
        entries = self._entries
        entry = None if entries is None else entries.remembered(table_id)
        return None if entry is None else entry.location
