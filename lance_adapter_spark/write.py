"""The write side of the `lance` data source.

The driver plans the write (resolves or declares the table, fixes the target schema and
the version the write is based on); each task writes Lance fragments straight to the
table's location and returns their metadata; the driver commits every fragment of the
job in one Lance transaction, so only fragments of successful task attempts ever count.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import lance
import pyarrow as pa
from lance.fragment import FragmentMetadata, write_fragments
from lance.progress import FragmentWriteProgress
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from lance_adapter_spark.options import LanceOptions, LanceSourceError, connect
from lance_adapter_spark.schema import (
    check_append_schema,
    conform_write_batch,
    is_float_array,
    lance_schema_for,
    vector_dimensions,
)
from lance_adapter_spark.shared_storage import refuse_unshared_local_storage
from lance_adapter_spark.tables import (
    TableState,
    declare_table,
    delete_data_files,
    drop_declared_table,
    forget_written,
    inspect_table,
    mark_written,
    missing_data_files,
    referenced_files,
    still_as_created,
    written_files,
)


@dataclass
class FragmentsMessage(WriterCommitMessage):
    """What one task wrote: fragment metadata as JSON, and the rows in them."""

    fragments: list[str] = field(default_factory=list)
    rows: int = 0

    def data_files(self) -> list[str]:
        return [
            data_file["path"] for text in self.fragments for data_file in json.loads(text)["files"]
        ]


@dataclass(frozen=True)
class WritePlan:
    """Everything tasks and the commit need, fixed once on the driver."""

    options: LanceOptions
    mode: str  # what the user asked: append, overwrite, errorifexists or ignore
    action: str  # what the write does: append, overwrite or skip
    table: TableState
    schema: pa.Schema
    created: bool = False  # this job created the (still empty) table
    job_id: str = field(default_factory=lambda: uuid.uuid4().hex)  # names the job's markers


def effective_mode(options: LanceOptions, overwrite: bool) -> str:
    return options.write_mode or ("overwrite" if overwrite else "append")


def plan_write(options: LanceOptions, spark_schema: StructType, overwrite: bool) -> WritePlan:
    """Decide what the write does to the table, creating the table when it is new."""
    mode = effective_mode(options, overwrite)
    namespace = connect(options)
    state = inspect_table(options, namespace)
    declared = False
    if state is None:
        state, declared = declare_table(options, namespace)
    try:
        refuse_unshared_local_storage(state.location, options.table_name, options.shared_storage)
    except LanceSourceError:
        if declared:
            drop_declared_table(options)
        raise
    created = False
    if not state.has_data:
        schema = lance_schema_for(spark_schema, _new_table_vectors(options))
        state, created = create_empty_table(options, state, schema)
    if created:
        return WritePlan(options, mode, "append", state, state.schema, created=True)
    if mode == "errorifexists":
        raise LanceSourceError(
            f"table '{options.table_name}' already exists in {options.namespace_description} "
            "(write mode errorifexists); use append, overwrite or ignore"
        )
    if mode == "ignore":
        return WritePlan(options, mode, "skip", state, state.schema)
    if mode == "append":
        check_append_schema(spark_schema, state.schema)
        schema = _append_schema(spark_schema, state.schema)
        return WritePlan(options, mode, "append", state, schema)
    vectors = _overwrite_vectors(options, spark_schema, state.schema)
    return WritePlan(options, mode, "overwrite", state, lance_schema_for(spark_schema, vectors))


def create_empty_table(
    options: LanceOptions, state: TableState, schema: pa.Schema
) -> tuple[TableState, bool]:
    """Make version 1 of a declared table: empty, with the job's schema.

    Lance writes a version only if it does not exist yet, and with no retries the
    creation is not rebased onto another writer's version 1 (it would land as an
    Overwrite at version 2, conflicting with the appends based on version 1): so of
    several jobs that start writing a new table at once exactly one creates it and all
    of them append. Returns the table's state and whether this call created it.
    """
    failure: Exception | None = None
    try:
        lance.LanceDataset.commit(
            state.location,
            lance.LanceOperation.Overwrite(schema, []),
            storage_options=state.storage_options,
            max_retries=0,
        )
    except (OSError, ValueError) as error:
        failure = error  # fine if another writer created it first; checked below
    refreshed = inspect_table(options)
    if refreshed is None or not refreshed.has_data:
        raise LanceSourceError(
            f"cannot create table '{options.table_name}' at {state.location}: {failure}"
        ) from failure
    return refreshed, failure is None


def _append_schema(spark_schema: StructType, table_schema: pa.Schema) -> pa.Schema:
    """The table's schema in the DataFrame's column order (fragments are matched by name)."""
    return pa.schema([table_schema.field(name) for name in spark_schema.fieldNames()])


def _given_vectors(options: LanceOptions) -> dict[str, int]:
    return {name: size for name, size in options.vector_columns.items() if size is not None}


def _overwrite_vectors(
    options: LanceOptions, spark_schema: StructType, table_schema: pa.Schema
) -> dict[str, int]:
    """Vector columns the table keeps across an overwrite, plus the ones the options name."""
    kept = {
        name: size
        for name, size in vector_dimensions(table_schema).items()
        if name in spark_schema.fieldNames() and is_float_array(spark_schema[name].dataType)
    }
    named = {name: kept.get(name) for name, size in options.vector_columns.items() if size is None}
    return {**kept, **_new_table_vectors(options, named)}


def _new_table_vectors(
    options: LanceOptions, known: dict[str, int | None] | None = None
) -> dict[str, int]:
    known = known or {}
    missing = [
        name
        for name, size in options.vector_columns.items()
        if size is None and known.get(name) is None
    ]
    if missing:
        raise LanceSourceError(
            f"vector column '{missing[0]}' needs its dimension for a new table: "
            f"write it as '{missing[0]}:<dimension>' in option vector_columns"
        )
    return {**_given_vectors(options), **{n: s for n, s in known.items() if s is not None}}


class FileTracker(FragmentWriteProgress):
    """Marks each data file Lance finishes as written by the job (see `mark_written`) and
    remembers it, so a failed task deletes it at once and the job's end deletes it
    whatever happened to the task."""

    def __init__(self, plan: WritePlan) -> None:
        super().__init__()
        self.plan = plan
        self.paths: list[str] = []

    def begin(self, fragment: FragmentMetadata, **kwargs: object) -> None:
        pass

    def complete(self, fragment: FragmentMetadata, **kwargs: object) -> None:
        self.mark_all(data_file.path for data_file in fragment.data_files())

    def mark_all(self, paths: Iterable[str]) -> None:
        table = self.plan.table
        for path in paths:
            if path not in self.paths:
                mark_written(table.location, self.plan.job_id, path, table.storage_options)
                self.paths.append(path)


class LanceWriter(DataSourceArrowWriter):
    """Writes the fragments of one task; commits or aborts the whole job on the driver."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FragmentsMessage:
        if self.plan.action == "skip":
            return FragmentsMessage()
        schema = self.plan.schema
        refused: list[LanceSourceError] = []

        def batches() -> Iterator[pa.RecordBatch]:
            for batch in iterator:
                if batch.num_rows:
                    try:
                        yield conform_write_batch(batch, schema)
                    except LanceSourceError as error:
                        refused.append(error)  # Lance reports it only as an Arrow error
                        raise

        tracker = FileTracker(self.plan)
        try:
            fragments = write_fragments(
                pa.RecordBatchReader.from_batches(schema, batches()),
                self.plan.table.location,
                schema=schema,
                mode=self.plan.action,
                max_rows_per_file=self.plan.options.max_rows_per_file,
                storage_options=self.plan.table.storage_options,
                progress=tracker,
            )
        except BaseException as error:
            delete_data_files(
                self.plan.table.location, tracker.paths, self.plan.table.storage_options
            )
            if refused:
                raise refused[0] from error
            raise
        message = FragmentsMessage(
            fragments=[json.dumps(fragment.to_json()) for fragment in fragments],
            rows=sum(fragment.num_rows for fragment in fragments),
        )
        tracker.mark_all(message.data_files())  # Lance does not report its last file
        return message

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.plan.action == "skip":
            return
        reported = reported_fragments(messages)
        self._refuse_files_out_of_sight(reported.data_files())
        fragments = [FragmentMetadata.from_json(text) for text in reported.fragments]
        if fragments or self.plan.action == "overwrite":  # an empty append changes nothing
            commit_fragments(self.plan, fragments)
        self._delete_uncommitted(set(reported.data_files()))

    def _refuse_files_out_of_sight(self, paths: list[str]) -> None:
        """Commit nothing when a data file a task reports is not at the table's location as
        the driver sees it: the version would reference files no reader finds."""
        location, storage = self.plan.table.location, self.plan.table.storage_options
        missing = missing_data_files(location, paths, storage)
        if not missing:
            return
        # Clean what can be reached; Spark then aborts the job (which drops a new table).
        delete_data_files(location, paths, storage)
        self._delete_uncommitted(set())
        raise LanceSourceError(
            f"{len(missing)} of the {len(paths)} data files the tasks wrote to table "
            f"'{self.plan.options.table_name}' are not at {location} as the driver sees it "
            f"(e.g. data/{missing[0]}): the executors write to storage the driver does not "
            "see, such as their own local disks. Nothing was committed. Use object storage "
            "or a file system mounted at the same path on the driver and every executor"
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # If the commit went through before the failure, its files are the table's now.
        committed = referenced_files(self.plan.table)
        reported = reported_fragments(messages).data_files()
        uncommitted = [p for p in reported if p not in committed]
        delete_data_files(self.plan.table.location, uncommitted, self.plan.table.storage_options)
        self._delete_uncommitted(committed)
        if self.plan.created and still_as_created(self.plan.table):
            drop_declared_table(self.plan.options)

    def _delete_uncommitted(self, committed: set[str]) -> None:
        """Delete every file an attempt of this job wrote that `committed` does not hold:
        those of failed, retried and speculative attempts, or all of a failed job's."""
        location, job_id = self.plan.table.location, self.plan.job_id
        storage = self.plan.table.storage_options
        written = written_files(location, job_id, storage)
        delete_data_files(location, sorted(written - committed), storage)
        forget_written(location, job_id, storage)


def reported_fragments(messages: list[WriterCommitMessage | None]) -> FragmentsMessage:
    """The commit messages of the job's successful task attempts, as one."""
    reports = [message for message in messages if isinstance(message, FragmentsMessage)]
    return FragmentsMessage(
        fragments=[text for report in reports for text in report.fragments],
        rows=sum(report.rows for report in reports),
    )


def commit_fragments(plan: WritePlan, fragments: list[FragmentMetadata]) -> lance.LanceDataset:
    """Commit all fragments of a job in one transaction; Lance retries concurrent appends."""
    operation, read_version = _operation(plan, fragments)
    try:
        return lance.LanceDataset.commit(
            plan.table.location,
            operation,
            read_version=read_version,
            storage_options=plan.table.storage_options,
            max_retries=plan.options.commit_retries,
            **_namespace_commit_arguments(plan),
        )
    except (OSError, ValueError, RuntimeError) as error:
        raise LanceSourceError(
            f"commit of {len(fragments)} fragments to table '{plan.options.table_name}' failed "
            f"(another writer may have changed the table in a conflicting way): {error}"
        ) from error


def _operation(plan: WritePlan, fragments: list[FragmentMetadata]):
    if plan.action == "overwrite":
        return lance.LanceOperation.Overwrite(plan.schema, fragments), plan.table.version
    return lance.LanceOperation.Append(fragments), plan.table.version


def _namespace_commit_arguments(plan: WritePlan) -> dict[str, object]:
    if not plan.table.managed_versioning:
        return {}
    return {
        "namespace_client": connect(plan.options),
        "table_id": plan.options.table_id,
        "namespace_client_managed_versioning": True,
    }
