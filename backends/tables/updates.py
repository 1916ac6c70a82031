"""UpdateTable and DeleteFromTable, each committed by the server as one transaction holding
the write's mark and idempotency key (and an update's count), which Lance's `update` and
`delete` calls cannot take: a lost answer is read back, a keyed retry is answered as it was,
a conflicting concurrent commit makes it run again on the latest version. An update is done
as Lance's own does it: the matched rows written again with their assignments applied, as
new fragments, and deleted where they were; read and written as a stream, so that memory
does not grow with the rows updated. A delete writes deletion files for the fragments
holding matched rows (found with the table's indexes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance import LanceDataset, LanceOperation
from lance.dataset import Transaction
from lance_namespace import (
    DeleteFromTableRequest,
    DeleteFromTableResponse,
    InvalidInputError,
    TableColumnNotFoundError,
    UpdateTableRequest,
    UpdateTableResponse,
)

from backends.core.messages import readable
from backends.tables.datasets import TableLocation
from backends.tables.errors import lance_errors
from backends.tables.keys import KeyNote
from backends.tables.writes import RETRY_TIMEOUT, commit_retrying, write_mark

# The rows an update matched, kept with its commit: a keyed retry is answered with them.
UPDATED_ROWS_MARK = "lance_adapter.updated_rows"
_ROW_ADDRESS = "_rowaddr"


def update_rows(
    table: TableLocation, dataset: LanceDataset, request: UpdateTableRequest,
    key: str | None = None,
) -> UpdateTableResponse:
    """Set the columns of `request.updates` to their SQL expressions in the rows matching
    `request.predicate` (every row without one)."""
    assignments = _assignments(dataset, request)
    if dataset.has_stable_row_ids:
        return _update_natively(dataset, assignments, request.predicate or None, key)
    earlier = KeyNote(table, key, request.branch).claim(dataset) if key else None
    if earlier is not None:
        return _updated(earlier.version, earlier.transaction.transaction_properties or {})

    def rewritten(dataset: LanceDataset) -> tuple[Transaction, dict[str, str]]:
        transaction, rows = _update_transaction(
            table, dataset, assignments, request.predicate or None)
        return transaction, {**write_mark(key), UPDATED_ROWS_MARK: str(rows)}

    version, mark = commit_retrying(table, dataset, request.branch, RETRY_TIMEOUT, rewritten)
    return _updated(version, mark)


def delete_rows(
    table: TableLocation, dataset: LanceDataset, request: DeleteFromTableRequest,
    key: str | None = None,
) -> DeleteFromTableResponse:
    """Delete the rows matching `request.predicate`."""
    predicate = (request.predicate or "").strip()
    if not predicate:
        raise InvalidInputError("DeleteFromTable needs a predicate ('true' deletes every row)")
    earlier = KeyNote(table, key, request.branch).claim(dataset) if key else None
    if earlier is not None:
        return DeleteFromTableResponse(version=earlier.version)

    def deleted(dataset: LanceDataset) -> tuple[Transaction, dict[str, str]]:
        with lance_errors(dataset.uri):
            removed, updated = _deleted_from_fragments(
                dataset, _matched_rows(dataset, predicate), predicate)
        operation = LanceOperation.Delete(
            updated_fragments=updated, deleted_fragment_ids=removed, predicate=predicate)
        return Transaction(read_version=dataset.version, operation=operation), write_mark(key)

    version, _ = commit_retrying(table, dataset, request.branch, RETRY_TIMEOUT, deleted)
    return DeleteFromTableResponse(version=version)


def _matched_rows(dataset: LanceDataset, predicate: str) -> dict[int, list[int]]:
    """The rows matching `predicate` (found with the table's indexes): each fragment's
    offsets of them."""
    matched: dict[int, list[int]] = {}
    scanner = dataset.scanner(columns=[], filter=predicate, with_row_address=True)
    for batch in scanner.to_reader():
        _add_offsets(batch, matched)
    return matched


def _add_offsets(batch: pa.RecordBatch, matched: dict[int, list[int]]) -> None:
    """Add the rows of `batch` (read with their row addresses: the fragment's id in the high
    32 bits, the row's offset in it in the low ones) to `matched`."""
    addresses = batch.column(_ROW_ADDRESS).to_numpy()
    fragments, offsets = addresses >> 32, addresses & 0xFFFFFFFF
    for fragment in np.unique(fragments).tolist():
        matched.setdefault(fragment, []).extend(offsets[fragments == fragment].tolist())


def _deleted_from_fragments(
    dataset: LanceDataset, matched: dict[int, list[int]], predicate: str | None,
) -> tuple[list[int], list[Any]]:
    """The `matched` rows (every row of their fragments when `predicate` is None) deleted:
    the ids of the fragments left without rows, and the metadata of the others (new deletion
    files). The rows are deleted by the offsets the scan found, not by the predicate again,
    which would read each fragment a second time (a 100-row delete: 9.0 ms against 3.1 for
    Lance's own delete, measured; by offsets: one read)."""
    removed, updated = [], []
    for fragment in dataset.get_fragments():
        offsets = matched.get(fragment.fragment_id)
        if offsets is None:
            continue
        remaining = None if predicate is None else fragment.delete_rows(offsets)
        if remaining is None:
            removed.append(fragment.fragment_id)
        else:
            updated.append(remaining)
    return removed, updated


def _assignments(dataset: LanceDataset, request: UpdateTableRequest) -> dict[str, str]:
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
    missing = [name for name in assignments if name not in dataset.schema.names]
    if missing:
        raise TableColumnNotFoundError(
            f"UpdateTable sets column {missing[0]!r}, which does not exist in the table")
    return assignments


def _update_natively(
    dataset: LanceDataset, assignments: dict[str, str], predicate: str | None,
    key: str | None,
) -> UpdateTableResponse:
    """A table with stable row ids keeps its rows' ids through an update: Lance's own
    update carries them over; it takes no transaction properties, hence no key."""
    if key:
        raise InvalidInputError(
            "UpdateTable takes no idempotency key on a table with stable row ids; read the "
            "table's version before sending the update again")
    with lance_errors(dataset.uri):
        result = dataset.update(assignments, where=predicate)
    return UpdateTableResponse(updated_rows=result["num_rows_updated"], version=dataset.version)


def _updated(version: int, mark: dict[str, str]) -> UpdateTableResponse:
    return UpdateTableResponse(version=version,
                               updated_rows=int(mark.get(UPDATED_ROWS_MARK) or 0))


def _update_transaction(
    table: TableLocation, dataset: LanceDataset, assignments: dict[str, str],
    predicate: str | None,
) -> tuple[Transaction, int]:
    """The Update transaction on `dataset`'s version, and how many rows it updates: the
    matched rows written again with their new values, then deleted where they were."""
    rows = _UpdatedRows(dataset, assignments, predicate)
    with lance_errors(dataset.uri):
        try:
            new_fragments = lance.fragment.write_fragments(
                rows.reader(), dataset, schema=dataset.schema, storage_options=table.options,
                data_storage_version=dataset.data_storage_version, session=table.session)
        except (OSError, RuntimeError, ValueError) as error:
            raise rows.failure or error from None
        removed, updated = _deleted_from_fragments(dataset, rows.matched, predicate)
    modified = [dataset.lance_schema.field(name).id() for name in assignments]
    operation = LanceOperation.Update(
        removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new_fragments,
        fields_for_preserving_frag_bitmap=modified, update_mode="rewrite_rows")
    return Transaction(read_version=dataset.version, operation=operation), rows.count


class _UpdatedRows:
    """The matched rows with their assignments applied, cast to the table's schema, read
    batch by batch; where they were (each fragment's offsets) and how many, once read."""

    def __init__(self, dataset: LanceDataset, assignments: dict[str, str],
                 predicate: str | None) -> None:
        self.schema = dataset.schema
        self.assignments = assignments
        projection = {name: assignments.get(name, f"`{name}`") for name in self.schema.names}
        with lance_errors(dataset.uri):
            self.scanner = dataset.scanner(
                columns=projection, filter=predicate, with_row_address=True)
        self.matched: dict[int, list[int]] = {}
        self.count = 0
        self.failure: InvalidInputError | None = None

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self._batches())

    def _batches(self) -> Iterator[pa.RecordBatch]:
        for batch in self.scanner.to_reader():
            _add_offsets(batch, self.matched)
            self.count += batch.num_rows
            yield self._cast(batch.drop_columns([_ROW_ADDRESS]))

    def _cast(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        columns = []
        for field in self.schema:
            column = batch.column(field.name)
            if pa.types.is_floating(column.type) and pa.types.is_integer(field.type):
                column = pc.trunc(column)  # as Lance's update: 1.5 sets an integer to 1
            try:
                columns.append(column.cast(field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                self.failure = InvalidInputError(
                    f"UpdateTable cannot set column {field.name!r} ({field.type}) to "
                    f"{self.assignments[field.name]!r}: {readable(str(error))}")
                raise self.failure from None
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)
