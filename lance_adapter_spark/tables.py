"""Looking tables up through the namespace and handling their files on storage."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import lance
import pyarrow as pa
import pyarrow.fs as pafs
from lance_namespace import (
    DeclareTableRequest,
    DescribeTableRequest,
    DropTableRequest,
    LanceNamespace,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from lance_adapter_spark.filesystems import table_filesystem
from lance_adapter_spark.options import LanceOptions, LanceSourceError, connect


@dataclass(frozen=True)
class TableState:
    """Where a table lives and, when it holds data, its latest version and schema."""

    location: str
    storage_options: dict[str, str] | None
    managed_versioning: bool
    version: int | None = None
    schema: pa.Schema | None = None

    @property
    def has_data(self) -> bool:
        return self.version is not None


def inspect_table(
    options: LanceOptions, namespace: LanceNamespace | None = None
) -> TableState | None:
    """The table's state, or None when the namespace does not know the table."""
    namespace = namespace or connect(options)
    try:
        response = call_namespace(
            options, lambda: namespace.describe_table(DescribeTableRequest(id=options.table_id))
        )
    except TableNotFoundError:
        return None
    if not response.location:
        raise LanceSourceError(f"{options.namespace_description} gave no location for table")
    state = TableState(
        location=response.location,
        storage_options=response.storage_options or None,
        managed_versioning=response.managed_versioning is True,
    )
    return _with_data(state)


# Errors that mean another writer declared the table at the same moment.
DECLARED_BY_ANOTHER = (TableAlreadyExistsError, ConcurrentModificationError)
DECLARE_ATTEMPTS = 5


def declare_table(options: LanceOptions, namespace: LanceNamespace) -> tuple[TableState, bool]:
    """Declare the table; returns its state and whether this call declared it.

    When another writer declares it at the same moment (the namespace answers
    TableAlreadyExists, or ConcurrentModification from a catalog that noticed the race),
    this writer uses the table the other declared, and appends to it.
    """
    for _ in range(DECLARE_ATTEMPTS):
        try:
            response = call_namespace(
                options, lambda: namespace.declare_table(DeclareTableRequest(id=options.table_id))
            )
        except DECLARED_BY_ANOTHER:
            state = inspect_table(options, namespace)
            if state is not None:
                return state, False
            continue  # the other declaration was undone meanwhile: declare again
        state = TableState(
            location=response.location,
            storage_options=response.storage_options or None,
            managed_versioning=response.managed_versioning is True,
        )
        return state, True
    raise LanceSourceError(
        f"table '{options.table_name}' kept appearing and vanishing while declaring it "
        f"({DECLARE_ATTEMPTS} attempts); is another job creating and dropping it?"
    )


def drop_declared_table(options: LanceOptions) -> None:
    """Undo a declaration whose first commit never happened (best effort)."""
    # Cleanup must not mask the error that caused it.
    with contextlib.suppress(Exception):
        connect(options).drop_table(DropTableRequest(id=options.table_id))


def require_table(options: LanceOptions, namespace: LanceNamespace | None = None) -> TableState:
    state = inspect_table(options, namespace)
    if state is None:
        raise LanceSourceError(
            f"table '{options.table_name}' does not exist in {options.namespace_description}"
        )
    if not state.has_data:
        raise LanceSourceError(
            f"table '{options.table_name}' is declared in {options.namespace_description} "
            "but has no data yet"
        )
    return state


def call_namespace(options: LanceOptions, request):
    """Run a namespace request, turning transport failures into one clear error."""
    try:
        return request()
    except (TableNotFoundError, *DECLARED_BY_ANOTHER):
        raise
    except NamespaceNotFoundError as error:
        parent = ".".join(options.table_id[:-1]) or "(root)"
        raise LanceSourceError(
            f"namespace '{parent}' of table '{options.table_name}' does not exist in "
            f"{options.namespace_description}: {error}"
        ) from error
    except ServiceUnavailableError as error:
        raise LanceSourceError(
            f"cannot reach {options.namespace_description} (is the adapter running?): "
            f"{_first_line(error)}"
        ) from error
    except LanceNamespaceError as error:
        raise LanceSourceError(
            f"{options.namespace_description} refused the request for table "
            f"'{options.table_name}': {_first_line(error)}"
        ) from error
    except OSError as error:
        raise LanceSourceError(
            f"cannot reach {options.namespace_description} (is the adapter running?): {error}"
        ) from error


def open_dataset(state: TableState, version: int | None = None) -> lance.LanceDataset:
    return lance.dataset(state.location, version=version, storage_options=state.storage_options)


def _with_data(state: TableState) -> TableState:
    try:
        dataset = open_dataset(state)
    except (ValueError, OSError, FileNotFoundError):
        return state  # declared, or location empty: no version yet
    return TableState(
        location=state.location,
        storage_options=state.storage_options,
        managed_versioning=state.managed_versioning,
        version=dataset.version,
        schema=dataset.schema,
    )


def referenced_files(state: TableState) -> set[str]:
    """Data file paths that the latest version of the table uses."""
    try:
        dataset = open_dataset(state)
    except (ValueError, OSError):
        return set()
    return {
        data_file.path
        for fragment in dataset.get_fragments()
        for data_file in fragment.data_files()
    }


def still_as_created(state: TableState) -> bool:
    """True when nobody has committed to the table since `state` was taken."""
    try:
        return open_dataset(state).version == state.version
    except (ValueError, OSError):
        return False


StorageOptions = dict[str, str] | None


def delete_data_files(location: str, paths: list[str], storage: StorageOptions = None) -> int:
    """Delete data files (relative to the table's data/ folder); returns how many went away."""
    if not paths:
        return 0
    filesystem, root = table_filesystem(location, storage)
    deleted = 0
    for path in paths:
        try:
            filesystem.delete_file(f"{root.rstrip('/')}/data/{path}")
            deleted += 1
        except (FileNotFoundError, OSError):
            pass
    return deleted


def missing_data_files(
    location: str, paths: list[str], storage: StorageOptions = None
) -> list[str]:
    """The data files (relative to the table's data/ folder) not found at `location`."""
    if not paths:
        return []
    filesystem, root = table_filesystem(location, storage)
    infos = filesystem.get_file_info([f"{root.rstrip('/')}/data/{path}" for path in paths])
    return [
        path for path, info in zip(paths, infos, strict=True) if info.type != pafs.FileType.File
    ]


# Beside data/, one folder per write job, holding an empty marker per data file that any
# attempt of any of its tasks finished: the job's commit or abort deletes the files no
# commit uses, whichever attempt wrote them and whether or not it lived to report them.
WRITTEN_MARKERS = "_spark_written"


def mark_written(location: str, job_id: str, path: str, storage: StorageOptions = None) -> None:
    filesystem, root = table_filesystem(location, storage)
    folder = f"{root.rstrip('/')}/{WRITTEN_MARKERS}/{job_id}"
    if isinstance(filesystem, pafs.LocalFileSystem):  # object stores need no folders
        filesystem.create_dir(folder, recursive=True)
    with filesystem.open_output_stream(f"{folder}/{path}"):
        pass


def written_files(location: str, job_id: str, storage: StorageOptions = None) -> set[str]:
    """The data files (relative to data/) that attempts of the job marked as written."""
    filesystem, root = table_filesystem(location, storage)
    selector = pafs.FileSelector(
        f"{root.rstrip('/')}/{WRITTEN_MARKERS}/{job_id}", allow_not_found=True
    )
    return {info.base_name for info in filesystem.get_file_info(selector)}


def forget_written(location: str, job_id: str, storage: StorageOptions = None) -> None:
    """Remove the job's markers. Their parent folder stays (empty): removing it could race
    another job that is creating its own folder in it."""
    filesystem, root = table_filesystem(location, storage)
    with contextlib.suppress(FileNotFoundError, OSError):
        filesystem.delete_dir(f"{root.rstrip('/')}/{WRITTEN_MARKERS}/{job_id}")


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
