"""Generic data operations for every backend, performed with pylance at the table location.

Catalog backends only keep metadata: a table's identifier, location and properties.
`with_data_operations` wraps such a backend so that CreateTable (with data),
InsertIntoTable, CountTableRows, QueryTable, ListTableVersions, DropTable and the
detailed metadata of DescribeTable work on it too: the location comes from the backend
(DeclareTable / DescribeTable) and pylance reads and writes the Lance table there.
Operations the backend implements itself are always passed through to it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

import lance
import pyarrow as pa
from lance.commit import CommitConflictError
from lance_namespace import (
    ConcurrentModificationError,
    CountTableRowsRequest,
    CountTableRowsResponse,
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    CreateTableRequest,
    CreateTableResponse,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DescribeTableResponse,
    DropTableRequest,
    DropTableResponse,
    InsertIntoTableRequest,
    InsertIntoTableResponse,
    InvalidInputError,
    InvalidTableStateError,
    LanceNamespace,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    NamespaceAlreadyExistsError,
    QueryTableRequest,
    QueryTableResponse,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableNotFoundError,
    TableSchemaValidationError,
    TableVersion,
    TableVersionNotFoundError,
    UnsupportedOperationError,
)

from backends.arrow_schema import arrow_schema_to_json
from backends.conventions import open_lance_table, request_mode
from backends.paging import paginate

logger = logging.getLogger(__name__)

_U64_MAX = 2**64 - 1
NAMESPACE_CREATE_MODES = ("create", "existok", "overwrite")


def _overrides(namespace: LanceNamespace, name: str) -> bool:
    return getattr(type(namespace), name) is not getattr(LanceNamespace, name)


@contextlib.contextmanager
def lance_errors(location: str) -> Iterator[None]:
    """Translate pylance's exceptions into the spec's errors."""
    try:
        yield
    except CommitConflictError as error:
        raise ConcurrentModificationError(f"concurrent commit on {location}: {error}") from error
    except (ValueError, OSError, RuntimeError) as error:
        message = str(error)
        lowered = message.lower()
        if "version" in lowered and "not found" in lowered:
            raise TableVersionNotFoundError(message) from error
        if "not found" in lowered or "does not exist" in lowered:
            raise InvalidTableStateError(f"no Lance table data at {location}: {message}") from error
        if "schema" in lowered and any(w in lowered for w in ("match", "different", "compatib")):
            raise TableSchemaValidationError(message) from error
        if isinstance(error, ValueError) or "invalid user input" in lowered:
            raise InvalidInputError(message) from error
        if "conflict" in lowered or "retryable" in lowered:
            raise ConcurrentModificationError(message) from error
        raise


def _context(request: Any) -> dict[str, Any]:
    return {"identity": request.identity, "context": request.context}


def _describe(namespace: LanceNamespace, request: Any) -> DescribeTableResponse:
    described = namespace.describe_table(DescribeTableRequest(id=request.id, **_context(request)))
    if not described.location:
        raise InvalidTableStateError(f"table {request.id} has no location")
    return described


def _open(location: str, options: dict[str, str] | None, version: int | None = None):
    with lance_errors(location):
        return lance.dataset(location, version=version, storage_options=options or None)


def _read_stream(data: bytes) -> pa.RecordBatchReader:
    try:
        return pa.ipc.open_stream(data)
    except (pa.ArrowInvalid, OSError) as error:
        raise InvalidInputError(f"data is not an Arrow IPC stream: {error}") from None


def _table_exists(namespace: LanceNamespace, request: Any) -> bool:
    try:
        namespace.table_exists(TableExistsRequest(id=request.id, **_context(request)))
    except TableNotFoundError:
        return False
    return True


def _write(data: bytes, location: str, mode: str, options: dict[str, str] | None):
    with lance_errors(location):
        return lance.write_dataset(
            _read_stream(data), location, mode=mode, storage_options=options or None
        )


def _has_data(location: str, options: dict[str, str] | None) -> bool:
    return open_lance_table(location, options) is not None


def _remove_data(location: str, options: dict[str, str] | None) -> None:
    with contextlib.suppress(ValueError, OSError):
        lance.LanceDataset.drop(location, storage_options=options or None, ignore_not_found=True)


def create_table(
    namespace: LanceNamespace, request: CreateTableRequest, data: bytes
) -> CreateTableResponse:
    mode = request.mode or "create"
    if _table_exists(namespace, request):
        if mode == "create":
            raise TableAlreadyExistsError(f"table {request.id} already exists")
        described = _describe(namespace, request)
        options = {**(described.storage_options or {}), **(request.storage_options or {})}
        if mode == "exist_ok" and _has_data(described.location, options):
            dataset = _open(described.location, options)
        else:
            dataset = _write(data, described.location, "overwrite", options)
        return CreateTableResponse(
            location=described.location,
            version=dataset.version,
            storage_options=described.storage_options,
            properties=described.properties,
        )
    declared = namespace.declare_table(
        DeclareTableRequest(id=request.id, properties=request.properties, **_context(request))
    )
    if not declared.location:
        raise InvalidTableStateError(f"the backend declared {request.id} without a location")
    options = {**(declared.storage_options or {}), **(request.storage_options or {})}
    try:
        dataset = _write(data, declared.location, "create", options)
    except BaseException:
        _undeclare(namespace, request, declared.location, options)
        raise
    return CreateTableResponse(
        location=declared.location,
        version=dataset.version,
        storage_options=declared.storage_options,
        properties=declared.properties,
    )


def _undeclare(
    namespace: LanceNamespace, request: Any, location: str, options: dict[str, str]
) -> None:
    """Undo a declaration whose first write failed, so nothing is left half-created."""
    try:
        namespace.deregister_table(DeregisterTableRequest(id=request.id, **_context(request)))
    except Exception:
        logger.exception("could not deregister %s after a failed write", request.id)
    _remove_data(location, options)


def insert_into_table(
    namespace: LanceNamespace, request: InsertIntoTableRequest, data: bytes
) -> InsertIntoTableResponse:
    mode = request.mode or "append"
    if mode not in ("append", "overwrite"):
        raise InvalidInputError(f"mode must be append or overwrite, got {mode!r}")
    described = _describe(namespace, request)
    options = described.storage_options
    existing = open_lance_table(described.location, options)
    if existing is None:
        mode = "create"
    before = existing.count_rows() if existing is not None and mode == "append" else 0
    dataset = _write(data, described.location, mode, options)
    return InsertIntoTableResponse(
        version=dataset.version, num_inserted_rows=dataset.count_rows() - before
    )


def count_table_rows(
    namespace: LanceNamespace, request: CountTableRowsRequest
) -> CountTableRowsResponse:
    described = _describe(namespace, request)
    dataset = _open(described.location, described.storage_options, request.version)
    with lance_errors(described.location):
        return CountTableRowsResponse(count=dataset.count_rows(filter=request.predicate))


def _vector_column(dataset: Any, requested: str | None) -> str:
    if requested:
        return requested
    for field in dataset.schema:
        if pa.types.is_fixed_size_list(field.type) and pa.types.is_floating(field.type.value_type):
            return field.name
    raise InvalidInputError("the table has no vector column; name one in vector_column")


def _nearest(dataset: Any, request: QueryTableRequest, vector: list[float]) -> dict[str, Any]:
    nearest: dict[str, Any] = {
        "column": _vector_column(dataset, request.vector_column),
        "q": vector,
        "k": request.k,
        "use_index": not request.bypass_vector_index,
    }
    optional = {
        "metric": request.distance_type,
        "nprobes": request.nprobes,
        "minimum_nprobes": request.minimum_nprobes,
        "maximum_nprobes": request.maximum_nprobes,
        "refine_factor": request.refine_factor,
        "ef": request.ef,
    }
    nearest.update({key: value for key, value in optional.items() if value is not None})
    return nearest


def _columns(request: QueryTableRequest) -> list[str] | dict[str, str] | None:
    if request.columns is None:
        return None
    if request.columns.column_aliases:
        return dict(request.columns.column_aliases)
    return request.columns.column_names


def _query_vectors(request: QueryTableRequest) -> list[list[float]]:
    vector = request.vector
    if vector is None:
        return []
    if vector.single_vector:
        return [vector.single_vector]
    return list(vector.multi_vector or [])


def _run_query(dataset: Any, request: QueryTableRequest, vector: list[float] | None) -> pa.Table:
    arguments: dict[str, Any] = {
        "columns": _columns(request),
        "filter": request.filter,
        "offset": request.offset,
        "with_row_id": bool(request.with_row_id),
        "prefilter": bool(request.prefilter),
    }
    if vector is None:
        arguments["limit"] = request.k or None
    else:
        arguments["nearest"] = _nearest(dataset, request, vector)
    return dataset.to_table(**{k: v for k, v in arguments.items() if v is not None})


def _with_query_index(table: pa.Table, index: int) -> pa.Table:
    return table.append_column("query_index", pa.array([index] * table.num_rows, pa.int32()))


def _arrow_file(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def query_table(namespace: LanceNamespace, request: QueryTableRequest) -> QueryTableResponse:
    if request.full_text_query is not None:
        raise UnsupportedOperationError("full-text queries are not supported by this adapter")
    described = _describe(namespace, request)
    dataset = _open(described.location, described.storage_options, request.version)
    vectors = _query_vectors(request)
    with lance_errors(described.location):
        if len(vectors) <= 1:
            result = _run_query(dataset, request, vectors[0] if vectors else None)
        else:
            result = pa.concat_tables(
                _with_query_index(_run_query(dataset, request, vector), index)
                for index, vector in enumerate(vectors)
            )
    return QueryTableResponse(data=_arrow_file(result))


def _manifest_path(location: str, version: int) -> str:
    return f"{location.rstrip('/')}/_versions/{_U64_MAX - version:020d}.manifest"


def list_table_versions(
    namespace: LanceNamespace, request: ListTableVersionsRequest
) -> ListTableVersionsResponse:
    described = _describe(namespace, request)
    dataset = _open(described.location, described.storage_options)
    with lance_errors(described.location):
        history = {entry["version"]: entry for entry in dataset.versions()}
    ordered = sorted(history, reverse=bool(request.descending))
    keys = [f"{number:020d}" for number in ordered]
    token = f"{int(request.page_token):020d}" if request.page_token else None
    page, next_token = _page_versions(keys, token, request.limit, bool(request.descending))
    versions = [
        TableVersion(
            version=number,
            manifest_path=_manifest_path(described.location, number),
            timestamp_millis=int(history[number]["timestamp"].timestamp() * 1000),
            metadata={k: str(v) for k, v in (history[number].get("metadata") or {}).items()},
        )
        for number in page
    ]
    return ListTableVersionsResponse(versions=versions, page_token=next_token)


def _page_versions(
    keys: list[str], token: str | None, limit: int | None, descending: bool
) -> tuple[list[int], str | None]:
    if descending:
        # paginate works on ascending order: page over the complemented keys.
        flipped = [f"{_U64_MAX - int(key):020d}" for key in keys]
        flipped_token = f"{_U64_MAX - int(token):020d}" if token else None
        page, next_key = paginate(flipped, flipped_token, limit)
        numbers = [_U64_MAX - int(key) for key in page]
        return numbers, str(_U64_MAX - int(next_key)) if next_key else None
    page, next_key = paginate(keys, token, limit)
    return [int(key) for key in page], str(int(next_key)) if next_key else None


def drop_table(namespace: LanceNamespace, request: DropTableRequest) -> DropTableResponse:
    described = _describe(namespace, request)
    namespace.deregister_table(DeregisterTableRequest(id=request.id, **_context(request)))
    _remove_data(described.location, described.storage_options)
    return DropTableResponse(id=request.id, location=described.location)


GENERIC_OPERATIONS: dict[str, Callable[..., Any]] = {
    "create_table": create_table,
    "insert_into_table": insert_into_table,
    "count_table_rows": count_table_rows,
    "query_table": query_table,
    "list_table_versions": list_table_versions,
    "drop_table": drop_table,
}


class DataOperationsNamespace(LanceNamespace):
    """A backend completed with the generic data operations; everything else is delegated."""

    def __init__(self, inner: LanceNamespace) -> None:
        self.inner = inner

    def namespace_id(self) -> str:
        return self.inner.namespace_id()

    def __repr__(self) -> str:
        return f"DataOperationsNamespace({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        try:
            return self.inner.create_namespace(request)
        except NamespaceAlreadyExistsError:
            if request_mode(request.mode, NAMESPACE_CREATE_MODES, "create") != "existok":
                raise
        described = self.inner.describe_namespace(
            DescribeNamespaceRequest(id=request.id, **_context(request))
        )
        return CreateNamespaceResponse(properties=described.properties)

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        described = self.inner.describe_table(request)
        if request.with_table_uri and described.location and not described.table_uri:
            described.table_uri = described.location
        needs_dataset = request.load_detailed_metadata and described.version is None
        if request.check_declared and described.is_only_declared is None:
            described.is_only_declared = not _has_data(
                described.location, described.storage_options
            )
        if needs_dataset and described.location:
            self._add_detailed_metadata(request, described)
        return described

    @staticmethod
    def _add_detailed_metadata(
        request: DescribeTableRequest, described: DescribeTableResponse
    ) -> None:
        dataset = _open(described.location, described.storage_options, request.version)
        described.version = dataset.version
        described.var_schema = arrow_schema_to_json(dataset.schema)
        described.table = request.id[-1]
        described.namespace = list(request.id[:-1])


def _operation_method(name: str) -> Callable[..., Any]:
    generic = GENERIC_OPERATIONS[name]

    def method(self: DataOperationsNamespace, *arguments: Any) -> Any:
        if _overrides(self.inner, name):
            return getattr(self.inner, name)(*arguments)
        return generic(self.inner, *arguments)

    method.__name__ = name
    return method


def _delegating_method(name: str) -> Callable[..., Any]:
    def method(self: DataOperationsNamespace, *arguments: Any) -> Any:
        return getattr(self.inner, name)(*arguments)

    method.__name__ = name
    return method


for _name, _member in vars(LanceNamespace).items():
    if _name.startswith("_") or not callable(_member) or _name in vars(DataOperationsNamespace):
        continue
    factory = _operation_method if _name in GENERIC_OPERATIONS else _delegating_method
    setattr(DataOperationsNamespace, _name, factory(_name))


def with_data_operations(namespace: LanceNamespace) -> LanceNamespace:
    """`namespace` completed with the generic data operations (idempotent)."""
    if isinstance(namespace, DataOperationsNamespace):
        return namespace
    return DataOperationsNamespace(namespace)
