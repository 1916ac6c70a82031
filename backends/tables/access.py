"""Reaching a table's data: where it lives, opening it once at the requested version, tag or
branch, and the Arrow IPC formats of request and response bodies."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace

import lance
import pyarrow as pa
from lance import LanceDataset
from lance_namespace import (
    InvalidInputError,
    InvalidTableStateError,
    ServiceUnavailableError,
    TableBranchNotFoundError,
)

from backends.core.arrow_schema import unstorable_columns
from backends.core.names import joined_id
from backends.tables.errors import lance_errors, translate


@dataclass(frozen=True)
class TableLocation:
    """What a catalog knows of a table: its identifier, where its data is and how to reach it."""

    id: list[str]
    location: str
    storage_options: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    # The worker's Lance session (index and metadata caches) the table is opened with.
    session: lance.Session | None = field(default=None, compare=False, repr=False)

    @property
    def options(self) -> dict[str, str] | None:
        return dict(self.storage_options) or None

    def with_options(self, storage_options: dict[str, str] | None) -> TableLocation:
        """The same table reached with `storage_options` too (a request's own)."""
        return replace(self, storage_options={**self.storage_options, **(storage_options or {})})


def latest_dataset(table: TableLocation) -> LanceDataset | None:
    """The table's dataset at its latest version, or None while it has no Lance data. A
    storage that does not answer is code 17, never taken for a table without data."""
    try:
        return lance.dataset(table.location, storage_options=table.options, session=table.session)
    except (OSError, ValueError, RuntimeError) as error:
        translated = translate(error, table.location)
        if isinstance(translated, ServiceUnavailableError):
            raise translated from error
        return None


def has_data(table: TableLocation) -> bool:
    return latest_dataset(table) is not None


def open_dataset(
    table: TableLocation,
    version: int | None = None,
    tag: str | None = None,
    branch: str | None = None,
) -> LanceDataset:
    """The table's dataset checked out at `tag`, or at `version` of `branch` (latest by default)."""
    return checkout(table, latest_dataset(table), version, tag, branch)


def checkout(
    table: TableLocation,
    latest: LanceDataset | None,
    version: int | None = None,
    tag: str | None = None,
    branch: str | None = None,
) -> LanceDataset:
    """`latest`, the table's dataset as opened (None: no data), at `tag` or at `version` of
    `branch`; it is not opened again for the latest version of the main branch."""
    if latest is None:
        raise InvalidTableStateError(f"table {joined_id(table.id)} has no Lance data yet")
    if tag is not None and (version is not None or branch is not None):
        raise InvalidInputError("name either a tag or a version and branch, not both")
    with lance_errors(table.location):
        if tag is not None:
            return latest.checkout_version(tag)
        if branch is not None and branch != "main":
            return _checkout_branch(latest, branch, version)
        if version is not None and version != latest.version:
            return latest.checkout_version(version)
    return latest


def _checkout_branch(dataset: LanceDataset, branch: str, version: int | None) -> LanceDataset:
    if branch not in dataset.branches.list():
        raise TableBranchNotFoundError(f"branch {branch} does not exist")
    return dataset.checkout_version((branch, version))


def remove_data(table: TableLocation) -> None:
    with contextlib.suppress(ValueError, OSError):
        LanceDataset.drop(table.location, storage_options=table.options, ignore_not_found=True)


# Lance (arrow-rs) panics on a buffer not aligned to its values, and its 128-bit values
# (decimals, month-day-nano intervals) need 16 bytes where a stream's buffers have 8: a body
# holding such a column is read into aligned memory; any other is read where it lies, its
# buffers aligned to their values where a stream's are not.
_ALIGNED = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.At64Byte)
_IN_PLACE = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.DataTypeSpecific)


def _needs_16_bytes(kind: pa.DataType) -> bool:
    if pa.types.is_decimal(kind) or pa.types.is_interval(kind):
        return True
    if pa.types.is_dictionary(kind):
        return _needs_16_bytes(kind.value_type)
    return any(_needs_16_bytes(kind.field(index).type) for index in range(kind.num_fields))


def _read_options(data: bytes) -> pa.ipc.IpcReadOptions:
    schema = pa.ipc.open_stream(data).schema
    return _ALIGNED if any(_needs_16_bytes(field.type) for field in schema) else _IN_PLACE


def read_arrow_stream(data: bytes | None) -> pa.Table:
    """A request body in the Arrow IPC stream format, read whole (it is in memory already)."""
    if not data:
        raise InvalidInputError("the request has no Arrow IPC stream body")
    try:
        return pa.ipc.open_stream(data, options=_read_options(data)).read_all()
    except (pa.ArrowInvalid, OSError) as error:
        raise InvalidInputError(f"data is not an Arrow IPC stream: {error}") from None


def stream_has_rows(data: bytes | None) -> bool:
    """Whether the Arrow IPC stream `data` holds a row (a schema alone holds none); a body
    that is not a stream has rows for this: the operation reading it says what is wrong."""
    try:
        reader = pa.ipc.open_stream(data or b"", options=_ALIGNED)
        return any(batch.num_rows for batch in reader)
    except (pa.ArrowInvalid, OSError):
        return True


def check_storable_stream(data: object) -> None:
    """Refuse a request body whose Arrow IPC stream has a column Lance cannot store, from its
    schema alone, before anything is written (Lance would fail mid-write with an internal
    error). A body that is not a stream is left to the operation, which says so."""
    if not isinstance(data, bytes | bytearray | memoryview) or not data:
        return
    try:
        schema = pa.ipc.open_stream(data).schema
    except (pa.ArrowInvalid, OSError):
        return
    refused = unstorable_columns(schema)
    if refused:
        raise InvalidInputError(
            f"Lance cannot store column{'s' if len(refused) > 1 else ''} {', '.join(refused)}: "
            "it stores no unions, intervals, list views, run-end encoded arrays or decimals "
            "narrower than 128 bits"
        )
