"""Schema evolution: AlterTableAddColumns / AlterColumns / DropColumns and the schema's and
fields' metadata."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from lance import LanceDataset
from lance_namespace import (
    AlterTableAddColumnsRequest,
    AlterTableAlterColumnsRequest,
    AlterTableDropColumnsRequest,
    InvalidInputError,
    TableColumnNotFoundError,
    UnsupportedOperationError,
    UpdateFieldMetadataRequest,
    UpdateFieldMetadataResponse,
)

from backends.core.arrow_schema import arrow_type_from_json
from backends.tables.errors import lance_errors


def add_columns(dataset: LanceDataset, request: AlterTableAddColumnsRequest) -> int:
    """Add columns computed once from SQL expressions over the existing rows, or all-null
    columns of given types (one kind a request: Lance adds each kind in its own commit); the
    new version."""
    expressions: dict[str, str] = {}
    typed: list[pa.Field] = []
    for entry in request.new_columns or []:
        if entry.virtual_column is not None or entry.computed is not None:
            raise UnsupportedOperationError(
                f"column {entry.name}: computed and virtual columns need a backfill service; "
                "this adapter adds columns from SQL expressions or types only"
            )
        data_type = getattr(entry, "data_type", None)
        if (entry.expression is None) == (data_type is None):
            raise InvalidInputError(f"column {entry.name} needs an SQL expression or a data_type")
        if data_type is None:
            expressions[entry.name] = entry.expression
        else:
            typed.append(_typed_field(entry, data_type))
    if not expressions and not typed:
        raise InvalidInputError("AlterTableAddColumns needs at least one column in new_columns")
    if expressions and typed:
        raise InvalidInputError(
            "AlterTableAddColumns adds columns from SQL expressions or from types, not both in "
            "one request"
        )
    try:
        with lance_errors(dataset.uri):
            dataset.add_columns(expressions or pa.schema(typed))
    except TableColumnNotFoundError as error:  # an expression that does not bind, as a filter
        raise InvalidInputError(str(error)) from error
    return dataset.version


def _typed_field(entry: Any, data_type: dict[str, Any]) -> pa.Field:
    if getattr(entry, "nullable", None) is False:
        raise InvalidInputError(
            f"column {entry.name}: a column added to existing rows is all null, so nullable"
        )
    try:
        return pa.field(entry.name, arrow_type_from_json(data_type))
    except ValueError as error:
        raise InvalidInputError(f"column {entry.name}: {error}") from None


def _alteration(entry: Any) -> dict[str, Any]:
    if entry.virtual_column is not None:
        raise UnsupportedOperationError("virtual columns are not supported by this adapter")
    alteration: dict[str, Any] = {"path": entry.path}
    if entry.rename is not None:
        alteration["name"] = entry.rename
    if entry.nullable is not None:
        alteration["nullable"] = entry.nullable
    if entry.data_type is not None:
        try:
            alteration["data_type"] = arrow_type_from_json(entry.data_type)
        except ValueError as error:
            raise InvalidInputError(f"column {entry.path}: {error}") from None
    if len(alteration) == 1:
        raise InvalidInputError(f"column {entry.path}: name a rename, nullable or data_type")
    return alteration


def alter_columns(dataset: LanceDataset, request: AlterTableAlterColumnsRequest) -> int:
    """Rename, change nullability or cast columns in one commit; the new version."""
    alterations = [_alteration(entry) for entry in request.alterations or []]
    if not alterations:
        raise InvalidInputError("AlterTableAlterColumns needs at least one alteration")
    with lance_errors(dataset.uri):
        dataset.alter_columns(*alterations)
    return dataset.version


def drop_columns(dataset: LanceDataset, request: AlterTableDropColumnsRequest) -> int:
    if not request.columns:
        raise InvalidInputError("AlterTableDropColumns needs at least one column")
    with lance_errors(dataset.uri):
        dataset.drop_columns(list(request.columns))
    return dataset.version


def update_schema_metadata(dataset: LanceDataset, metadata: dict[str, str] | None) -> dict:
    """Merge `metadata` into the schema's; the schema's metadata afterwards."""
    with lance_errors(dataset.uri):
        return dict(dataset.update_schema_metadata(dict(metadata or {})))


def _field(schema: pa.Schema, path: str) -> pa.Field:
    """The field at a dot-separated path; struct children are reached through their parent."""
    container: pa.Schema | pa.StructType | None = schema
    found: pa.Field | None = None
    for name in path.split("."):
        index = container.get_field_index(name) if container is not None else -1
        if index < 0:
            raise TableColumnNotFoundError(f"field {path} does not exist")
        found = container.field(index)
        container = found.type if pa.types.is_struct(found.type) else None
    assert found is not None  # the path has at least one name
    return found


def _metadata(field: pa.Field) -> dict[str, str]:
    return {key.decode(): value.decode() for key, value in (field.metadata or {}).items()}


def update_field_metadata(
    dataset: LanceDataset, request: UpdateFieldMetadataRequest
) -> UpdateFieldMetadataResponse:
    """Merge (or replace) each field's metadata; a null value removes its key."""
    if not request.updates:
        raise InvalidInputError("UpdateFieldMetadata needs at least one update")
    for entry in request.updates:
        _field(dataset.schema, entry.path)  # every path checked before anything changes
    with lance_errors(dataset.uri):
        for entry in request.updates:
            dataset.update_field_metadata(
                {entry.path: dict(entry.metadata)}, replace=bool(entry.replace)
            )
    schema = dataset.schema
    fields = {entry.path: _metadata(_field(schema, entry.path)) for entry in request.updates}
    return UpdateFieldMetadataResponse(version=dataset.version, fields=fields)
