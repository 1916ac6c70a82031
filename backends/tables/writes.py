"""Writing rows: the first write of CreateTable, InsertIntoTable, MergeInsertIntoTable,
UpdateTable and DeleteFromTable, done by pylance on the opened dataset."""

from __future__ import annotations

import datetime
import re
import uuid

import lance
import pyarrow as pa
from lance import LanceDataset
from lance_namespace import (
    ConcurrentModificationError,
    DeleteFromTableRequest,
    DeleteFromTableResponse,
    InsertIntoTableResponse,
    InvalidInputError,
    MergeInsertIntoTableRequest,
    MergeInsertIntoTableResponse,
    UpdateTableRequest,
    UpdateTableResponse,
)

from backends.core.modes import WriteMode
from backends.tables.bodies import StreamedRows
from backends.tables.datasets import TableLocation
from backends.tables.errors import lance_errors

# Lance's words for a commit whose answer was lost: its manifest may or may not be stored.
_UNKNOWN_COMMIT = re.compile(r"commit result for version (\d+) is unknown", re.IGNORECASE)
WRITE_MARK = "lance_adapter.write"
KEY_MARK = "lance_adapter.idempotency_key"
# How many of a table's latest commits a keyed write looks through for its key.
KEYED_WRITE_WINDOW = 64


def write_rows(
    rows: pa.Table | StreamedRows, target: TableLocation | LanceDataset, mode: str,
    table: TableLocation, key: str | None = None,
) -> LanceDataset:
    """Write `rows` (whole, or read from a body as it arrives) to a location (mode create /
    overwrite) or an opened dataset (append). A body whose reading failed fails the write
    with its own error, before anything is committed. Each write marks its transaction, so
    that a commit whose answer the storage lost is read back: answered as done when its
    version holds the mark, as not done when it does not (never a retryable error for a
    write that took effect). A write with an idempotency `key` holds it in its mark too
    (`keyed_write` finds it)."""
    uri = target.location if isinstance(target, TableLocation) else target
    mark = {WRITE_MARK: uuid.uuid4().hex, **({KEY_MARK: key} if key else {})}
    data = rows.reader() if isinstance(rows, StreamedRows) else rows
    with lance_errors(table.location):
        try:
            return lance.write_dataset(data, uri, mode=mode, storage_options=table.options,
                                       session=table.session, transaction_properties=mark)
        except (OSError, RuntimeError, ValueError) as error:
            if isinstance(rows, StreamedRows) and rows.failed:
                raise rows.failure_or(error) from None
            unknown = _UNKNOWN_COMMIT.search(str(error))
            written = unknown and _read_back(table, int(unknown.group(1)), mark)
            if written is None:
                raise  # unknown still: answered so (`backends.tables.errors`), not retryable
            return written


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
    mode: WriteMode, key: str | None = None,
) -> InsertIntoTableResponse:
    """Append or overwrite; a declared table without data gets its first version. With an
    idempotency `key` that one of the table's latest commits holds, the write took effect
    already: answered as it was, not done again."""
    earlier = keyed_write(dataset, key) if key and dataset is not None else None
    if earlier is not None:
        return earlier
    if dataset is None:
        written = write_rows(rows, table, "create", table, key)
    else:
        written = write_rows(rows, dataset, mode.value, table, key)
    inserted = rows.rows if isinstance(rows, StreamedRows) else rows.num_rows
    return InsertIntoTableResponse(version=written.version, num_inserted_rows=inserted)


def keyed_write(dataset: LanceDataset, key: str) -> InsertIntoTableResponse | None:
    """The answer of the write among the table's latest `KEYED_WRITE_WINDOW` commits whose
    transaction holds the idempotency `key`; None if none does."""
    with lance_errors(dataset.uri):
        transactions = dataset.get_transactions(KEYED_WRITE_WINDOW)
    for back, transaction in enumerate(transactions):
        if transaction is None or (transaction.transaction_properties or {}).get(
                KEY_MARK) != key:
            continue
        fragments = getattr(transaction.operation, "fragments", None) or []
        return InsertIntoTableResponse(
            version=dataset.version - back,
            num_inserted_rows=sum(fragment.physical_rows or 0 for fragment in fragments))
    return None


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


def merge_insert(
    dataset: LanceDataset, request: MergeInsertIntoTableRequest, rows: pa.Table
) -> MergeInsertIntoTableResponse:
    """A merge; an action's filter alone asks for its action (as natively), and `timeout`
    bounds how long Lance retries the commit against concurrent writers."""
    if not request.on:
        raise InvalidInputError("MergeInsertIntoTable needs the key columns in 'on'")
    update_matched = bool(request.when_matched_update_all) or (
        request.when_matched_update_all_filt is not None)
    delete_unmatched = bool(request.when_not_matched_by_source_delete) or (
        request.when_not_matched_by_source_delete_filt is not None)
    if not (update_matched or request.when_not_matched_insert_all or delete_unmatched):
        raise InvalidInputError("MergeInsertIntoTable needs at least one when_* action")
    timeout = None if request.timeout is None else parse_duration(request.timeout, "timeout")
    with lance_errors(dataset.uri):
        builder = dataset.merge_insert(list(request.on))
        if update_matched:
            builder = builder.when_matched_update_all(request.when_matched_update_all_filt)
        if request.when_not_matched_insert_all:
            builder = builder.when_not_matched_insert_all()
        if delete_unmatched:
            builder = builder.when_not_matched_by_source_delete(
                request.when_not_matched_by_source_delete_filt
            )
        if request.use_index is not None:
            builder = builder.use_index(request.use_index)
        if timeout is not None:
            builder = builder.retry_timeout(timeout)
        counts = builder.execute(rows)
    return MergeInsertIntoTableResponse(
        num_updated_rows=counts["num_updated_rows"],
        num_inserted_rows=counts["num_inserted_rows"],
        num_deleted_rows=counts["num_deleted_rows"],
        version=dataset.version,
    )


def update_rows(dataset: LanceDataset, request: UpdateTableRequest) -> UpdateTableResponse:
    if request.properties:
        raise InvalidInputError(
            "UpdateTable stores no table properties here (Lance keeps none with an update); "
            "set them with AlterTable where the catalog keeps properties"
        )
    if not request.updates:
        raise InvalidInputError("UpdateTable needs at least one [column, expression] in updates")
    assignments = dict(request.updates)
    if len(assignments) != len(request.updates):
        raise InvalidInputError("UpdateTable names a column more than once in updates")
    with lance_errors(dataset.uri):
        result = dataset.update(assignments, where=request.predicate or None)
    return UpdateTableResponse(updated_rows=result["num_rows_updated"], version=dataset.version)


def delete_rows(dataset: LanceDataset, request: DeleteFromTableRequest) -> DeleteFromTableResponse:
    if not request.predicate or not request.predicate.strip():
        raise InvalidInputError("DeleteFromTable needs a predicate ('true' deletes every row)")
    with lance_errors(dataset.uri):
        dataset.delete(request.predicate)
    return DeleteFromTableResponse(version=dataset.version)
