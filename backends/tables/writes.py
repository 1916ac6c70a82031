"""Writing rows: the first write of CreateTable, InsertIntoTable and MergeInsertIntoTable,
done by pylance on the opened dataset; their commits (and those of UpdateTable and
DeleteFromTable, `backends.tables.updates`) marked, so that a lost answer is read back and a keyed
retry recognised."""

from __future__ import annotations

import datetime
import functools
import itertools
import json
import random
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import lance
import pyarrow as pa
from lance import LanceDataset
from lance.dataset import Transaction
from lance_namespace import (
    ConcurrentModificationError,
    InsertIntoTableResponse,
    InvalidInputError,
    MergeInsertIntoTableRequest,
    MergeInsertIntoTableResponse,
)

from backends.core.modes import WriteMode
from backends.tables.bodies import StreamedRows
from backends.tables.datasets import TableLocation, checkout, latest_dataset
from backends.tables.errors import lance_errors
from backends.tables.keys import KEY_MARK, KeyNote
from backends.tables.reach import check_no_links

# Lance's words for a commit whose answer was lost: its manifest may or may not be stored.
_UNKNOWN_COMMIT = re.compile(r"commit result for version (\d+) is unknown", re.IGNORECASE)
WRITE_MARK = "lance_adapter.write"
# A merge's counts, kept with its commit: a keyed retry is answered with them.
MERGE_COUNTS_MARK = "lance_adapter.merge_counts"
_MERGE_COUNTS = ("num_updated_rows", "num_inserted_rows", "num_deleted_rows")


def write_mark(key: str | None) -> dict[str, str]:
    """The transaction properties that tell this write's commit from any other's."""
    return {WRITE_MARK: uuid.uuid4().hex, **({KEY_MARK: key} if key else {})}


def _committed(
    table: TableLocation, mark: dict[str, str], commit: Callable[[], LanceDataset],
    rows: pa.Table | StreamedRows | None = None,
) -> LanceDataset:
    """`commit()`, whose transaction holds `mark`. A body whose reading failed fails the
    write with its own error, before anything is committed. A commit whose answer the storage
    lost is read back: answered as done when its version holds the mark, as not done when it
    does not (never a retryable error for a write that took effect)."""
    with lance_errors(table.location):
        try:
            return commit()
        except (OSError, RuntimeError, ValueError) as error:
            if isinstance(rows, StreamedRows) and rows.failed:
                raise rows.failure_or(error) from None
            unknown = _UNKNOWN_COMMIT.search(str(error))
            written = unknown and _read_back(table, int(unknown.group(1)), mark)
            if written is None:
                raise  # unknown still: answered so (`backends.tables.errors`), not retryable
            return written


def write_rows(
    rows: pa.Table | StreamedRows, target: TableLocation | LanceDataset, mode: str,
    table: TableLocation, key: str | None = None,
) -> LanceDataset:
    """Write `rows` (whole, or read from a body as it arrives) to a location (mode create /
    overwrite) or an opened dataset (append), marked (`_committed`); with its idempotency
    `key` in the mark too (`backends.tables.keys`)."""
    if isinstance(target, TableLocation):  # written without an open: never through a link
        check_no_links(table.id, table.location)
    uri = target.location if isinstance(target, TableLocation) else target
    mark = write_mark(key)
    data = rows.reader() if isinstance(rows, StreamedRows) else rows
    return _committed(table, mark, lambda: lance.write_dataset(
        data, uri, mode=mode, storage_options=table.options, session=table.session,
        transaction_properties=mark), rows)


def _read_back(table: TableLocation, version: int, mark: dict[str, str]) -> LanceDataset | None:
    """The table at `version` when that version's transaction holds `mark` (the write took
    effect); code 14 when another transaction holds it (it did not, and never will: a
    version is committed once); None when that cannot be told (no such version yet, or a
    storage that does not answer now)."""
    try:
        latest = lance.dataset(table.location, storage_options=table.options,
                               session=table.session)
        if latest.version < version:
            return None
        transaction = latest.read_transaction(version)
    except (OSError, RuntimeError, ValueError):
        return None
    if transaction is not None and transaction.transaction_properties == mark:
        return latest.checkout_version(version)
    raise ConcurrentModificationError(
        "the storage lost the answer to the write's commit, and reading it back shows that "
        "another write took its place: this write did not take effect; retry")


def insert_rows(
    table: TableLocation, dataset: LanceDataset | None, rows: pa.Table | StreamedRows,
    mode: WriteMode, key: str | None = None, branch: str | None = None,
) -> InsertIntoTableResponse:
    """Append or overwrite; a declared table without data gets its first version. With an
    idempotency `key` an earlier attempt committed, the write took effect already: answered
    as it was, not done again (`backends.tables.keys`)."""
    earlier = KeyNote(table, key, branch).claim(dataset) if key else None
    if earlier is not None:
        fragments = getattr(earlier.transaction.operation, "fragments", None) or []
        return InsertIntoTableResponse(
            version=earlier.version,
            num_inserted_rows=sum(fragment.physical_rows or 0 for fragment in fragments))
    if dataset is None:
        written = write_rows(rows, table, "create", table, key)
    else:
        written = write_rows(rows, dataset, mode.value, table, key)
    inserted = rows.rows if isinstance(rows, StreamedRows) else rows.num_rows
    return InsertIntoTableResponse(version=written.version, num_inserted_rows=inserted)


# A duration as LanceDB and the spec write it: "30s", "5m", "1h30m", "250ms", "1.5s".
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|ms|s|m|h|d)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, field: str) -> datetime.timedelta:
    """The duration `text` names; InvalidInputError naming `field` if it names none."""
    cleaned = text.strip().replace(" ", "")
    parts = _DURATION_PART.findall(cleaned)
    if not cleaned or "".join(number + unit for number, unit in parts) != cleaned:
        raise InvalidInputError(
            f"{field} must be a duration such as 30s, 5m or 1h30m, got {text!r}"
        )
    return datetime.timedelta(
        seconds=sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    )


# How long a merge or an update is tried again on the then latest version when a concurrent
# commit conflicts with it (Lance's own default; a merge's `timeout` sets it), and how many
# times: more than Lance's own 10, which four clients upserting one table from two workers
# used up on 1% of their merges (soak runs S and T), each attempt taking long enough on a
# busy machine for another commit to land.
RETRY_TIMEOUT = datetime.timedelta(seconds=30)
_ATTEMPTS = 25


def commit_retrying(
    table: TableLocation, dataset: LanceDataset, branch: str | None,
    timeout: datetime.timedelta,
    prepare: Callable[[LanceDataset], tuple[Transaction, dict[str, str]]],
) -> tuple[int, dict[str, str]]:
    """Commit the transaction `prepare` makes on `dataset`, marked with the properties it
    gives (`_committed`); when a concurrent commit conflicts with it, prepared again on the
    then latest version of `branch` and committed, for up to `timeout`. The version committed
    and its mark."""
    deadline = time.monotonic() + timeout.total_seconds()
    for attempt in itertools.count(1):
        transaction, mark = prepare(dataset)
        transaction.transaction_properties = mark
        try:
            committed = _committed(table, mark, functools.partial(
                LanceDataset.commit, dataset, transaction, storage_options=table.options))
        except ConcurrentModificationError:
            if attempt >= _ATTEMPTS or time.monotonic() >= deadline:
                raise
            # Writers that conflicted once meet again if they retry at once: a random pause,
            # longer with each attempt, sets them apart.
            time.sleep(min(random.uniform(0, 0.02 * attempt),
                           max(0.0, deadline - time.monotonic())))
            dataset = checkout(table, latest_dataset(table), branch=branch)
        else:
            return committed.version, mark
    raise AssertionError("itertools.count never ends")


def merge_insert(
    table: TableLocation, dataset: LanceDataset, request: MergeInsertIntoTableRequest,
    rows: pa.Table, key: str | None = None,
) -> MergeInsertIntoTableResponse:
    """A merge; an action's filter alone asks for its action (as natively). Its commit is
    marked (`_committed`) and holds its counts, so that a retry with its idempotency `key`
    is answered as it was. A commit that conflicts with a concurrent one is merged again on
    the latest version, for up to `timeout`."""
    _check_merge(request)
    timeout = RETRY_TIMEOUT if request.timeout is None else parse_duration(
        request.timeout, "timeout")
    earlier = KeyNote(table, key, request.branch).claim(dataset) if key else None
    if earlier is not None:
        return _merged(earlier.version, earlier.transaction.transaction_properties or {})

    def merged(dataset: LanceDataset) -> tuple[Transaction, dict[str, str]]:
        with lance_errors(dataset.uri):
            transaction, counts = _merge_builder(dataset, request).execute_uncommitted(rows)
        return transaction, {**write_mark(key), MERGE_COUNTS_MARK: json.dumps(
            {name: int(counts[name]) for name in _MERGE_COUNTS})}

    version, mark = commit_retrying(table, dataset, request.branch, timeout, merged)
    return _merged(version, mark)


def _check_merge(request: MergeInsertIntoTableRequest) -> None:
    if not request.on:
        raise InvalidInputError("MergeInsertIntoTable needs the key columns in 'on'")
    if not (_updates_matched(request) or request.when_not_matched_insert_all
            or _deletes_unmatched(request)):
        # Embedded LanceDB's words (LanceDB's remote client shows them as they are).
        raise InvalidInputError("The merge insert job is not configured to change the data in "
                                "any way: MergeInsertIntoTable needs at least one when_* action")


def _updates_matched(request: MergeInsertIntoTableRequest) -> bool:
    return bool(request.when_matched_update_all) or (
        request.when_matched_update_all_filt is not None)


def _deletes_unmatched(request: MergeInsertIntoTableRequest) -> bool:
    return bool(request.when_not_matched_by_source_delete) or (
        request.when_not_matched_by_source_delete_filt is not None)


def _merge_builder(dataset: LanceDataset, request: MergeInsertIntoTableRequest) -> Any:
    builder = dataset.merge_insert(list(request.on))
    if _updates_matched(request):
        builder = builder.when_matched_update_all(request.when_matched_update_all_filt)
    if request.when_not_matched_insert_all:
        builder = builder.when_not_matched_insert_all()
    if _deletes_unmatched(request):
        builder = builder.when_not_matched_by_source_delete(
            request.when_not_matched_by_source_delete_filt)
    if request.use_index is not None:
        builder = builder.use_index(request.use_index)
    return builder


def _merged(version: int, mark: dict[str, str]) -> MergeInsertIntoTableResponse:
    """The answer to the merge committed as `version` with the properties `mark`."""
    counts = json.loads(mark.get(MERGE_COUNTS_MARK) or "{}")
    return MergeInsertIntoTableResponse(
        version=version, **{name: int(counts.get(name, 0)) for name in _MERGE_COUNTS})
