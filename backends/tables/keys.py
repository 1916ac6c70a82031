"""Idempotency keys of writes (InsertIntoTable, MergeInsertIntoTable): a keyed write holds its
key in its commit's transaction properties, and before committing notes beside the table the
version it started from. A retry with the same key reads that note, then the commits made
since that version, oldest first, until one holds the key: the earlier attempt took effect and
is answered as it was. None does: it did not, and the retry writes.

A key never seen costs one read of a missing note and one small write: there is no window of
latest commits that a busy writer could push the first attempt out of. The notes are in the
table's `_lance_adapter_keys` directory, one per key and branch (named by their SHA-256), and
are removed with the versions they point into (`remove_stale_notes`, by the maintenance
pass's cleanup)."""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
from dataclasses import dataclass

import pyarrow.fs as pafs
from lance import LanceDataset
from lance.dataset import Transaction
from lance_namespace import InvalidInputError

from backends.core.filesystems import table_filesystem
from backends.tables.datasets import TableLocation
from backends.tables.errors import lance_errors

KEY_MARK = "lance_adapter.idempotency_key"
NOTES_DIRECTORY = "_lance_adapter_keys"
# The most commits a retry looks through for its key (each one read of a transaction): a
# retry sent after more commits than this is refused rather than made slow.
MOST_COMMITS_LOOKED_THROUGH = 1000


@dataclass(frozen=True)
class EarlierWrite:
    """The commit of an earlier attempt with the key."""

    version: int
    transaction: Transaction


@dataclass(frozen=True)
class KeyNote:
    """The note of `key` on a table (and branch): the version its first attempt started from."""

    table: TableLocation
    key: str
    branch: str | None = None

    @functools.cached_property
    def _place(self) -> tuple[pafs.FileSystem, str]:
        """The file system and path of the note (made once: an S3 file system is not free)."""
        filesystem, root = table_filesystem(self.table.location, self.table.options)
        digest = hashlib.sha256(f"{self.branch or ''}\0{self.key}".encode()).hexdigest()
        return filesystem, f"{root.rstrip('/')}/{NOTES_DIRECTORY}/{digest}.json"

    def claim(self, dataset: LanceDataset | None) -> EarlierWrite | None:
        """The earlier attempt's commit (`earlier_write`), or None once this attempt is noted
        as starting from `dataset`'s version (0 for a table without data)."""
        earlier = self.earlier_write(dataset)
        if earlier is None:
            self.write(0 if dataset is None else dataset.version)
        return earlier

    def earlier_write(self, dataset: LanceDataset | None,
                      most: int = MOST_COMMITS_LOOKED_THROUGH) -> EarlierWrite | None:
        """The commit since the noted version whose transaction holds the key; None when
        there is no note (a new key) or no such commit (the earlier attempt did not take
        effect). `dataset` is the table at its latest version (None: it has no data)."""
        if dataset is None:
            return None
        started = self._started()
        if started is None:
            return None
        since = dataset.version - started
        if since > most:
            raise InvalidInputError(
                f"an earlier attempt with this idempotency key started {since} commits ago, "
                f"more than the {most} a retry looks through: read the table's version "
                "(DescribeTable) and send the write with a new key if it is not there")
        with lance_errors(self.table.location):
            for version in range(started + 1, dataset.version + 1):
                transaction = dataset.read_transaction(version)
                properties = (transaction.transaction_properties or {}) if transaction else {}
                if properties.get(KEY_MARK) == self.key:
                    return EarlierWrite(version, transaction)
        return None

    def _started(self) -> int | None:
        """The version the noted attempt started from; None without a note. A note cut short
        (its writer killed while writing it) is none: that attempt never reached its commit."""
        filesystem, path = self._place
        with lance_errors(self.table.location):
            try:
                with filesystem.open_input_stream(path) as stream:
                    text = stream.read()
            except FileNotFoundError:
                return None
        try:
            note = json.loads(text)
            return int(note["read_version"]) if note.get("key") == self.key else None
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def write(self, read_version: int) -> None:
        """Note that an attempt starts from `read_version` (before its commit)."""
        filesystem, path = self._place
        note = json.dumps({"key": self.key, "branch": self.branch, "read_version": read_version,
                           "started": datetime.datetime.now(datetime.UTC).isoformat()})
        with lance_errors(self.table.location):
            try:
                _write(filesystem, path, note.encode())
            except FileNotFoundError:  # a local table's first note: its directory is made
                filesystem.create_dir(path.rsplit("/", 1)[0], recursive=True)
                _write(filesystem, path, note.encode())


def _write(filesystem: pafs.FileSystem, path: str, data: bytes) -> None:
    with filesystem.open_output_stream(path) as stream:
        stream.write(data)


def remove_stale_notes(dataset: LanceDataset, older_than: datetime.timedelta) -> int:
    """Remove the key notes of the table `dataset` written longer ago than `older_than` (the
    versions they point into are removed then too); how many were removed."""
    filesystem, root = table_filesystem(dataset.uri, dataset.initial_storage_options)
    selector = pafs.FileSelector(f"{root.rstrip('/')}/{NOTES_DIRECTORY}", allow_not_found=True)
    oldest = datetime.datetime.now(datetime.UTC) - older_than
    removed = 0
    with lance_errors(dataset.uri):
        for info in filesystem.get_file_info(selector):
            written = info.mtime
            if written is not None and written.tzinfo is None:
                written = written.replace(tzinfo=datetime.UTC)
            if info.type == pafs.FileType.File and written is not None and written < oldest:
                filesystem.delete_file(info.path)
                removed += 1
    return removed
