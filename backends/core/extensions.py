"""Request and response models of the spec operations the official 0.13 clients lack, and
official request models extended by what Lance does and LanceDB's remote client sends.

The Lance Namespace spec (`namespace-spec.md`) names ListOperations, AlterNamespace and
AlterTable; the generated client has no model for them. These follow the official models'
conventions: `identity` and `context` on every request, `id` as a list of names, and
`to_dict` / `from_dict` like the generated models.

A model here named as an official one extends it (`app.spec` takes this one): its added
fields are options of Lance itself that the spec does not carry yet (a query's `order_by`, an
index's `replace` and full-text tokenizer options). A backend that cannot honour an added
field it is given refuses it (`extension_fields` names the ones set).
"""

from __future__ import annotations

from typing import Any, Self

import lance_namespace
from lance_namespace_urllib3_client import models
from lance_namespace_urllib3_client.models import Identity
from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, validate_assignment=True)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)

    @classmethod
    def from_dict(cls, payload: dict[str, Any] | None) -> Self | None:
        return None if payload is None else cls.model_validate(payload)


class ListOperationsRequest(_Model):
    identity: Identity | None = None
    context: dict[str, str] | None = None
    # On a server of several catalogs: the operations served for this id (its catalog's);
    # without it, those every catalog serves. One backend serves every id alike.
    id: list[str] | None = None


class ListOperationsResponse(_Model):
    """The operation ids the configured backend supports, sorted."""

    operations: list[str]
    context: dict[str, str] | None = None


class AlterNamespaceRequest(_Model):
    identity: Identity | None = None
    context: dict[str, str] | None = None
    id: list[str] | None = None
    set_properties: dict[str, str] | None = None
    unset_properties: list[str] | None = None


class AlterNamespaceResponse(_Model):
    """The namespace's properties after the change."""

    properties: dict[str, str] | None = None
    context: dict[str, str] | None = None


class AlterTableRequest(_Model):
    identity: Identity | None = None
    context: dict[str, str] | None = None
    id: list[str] | None = None
    set_properties: dict[str, str] | None = None
    unset_properties: list[str] | None = None


class AlterTableResponse(_Model):
    """The table's properties after the change."""

    properties: dict[str, str] | None = None
    context: dict[str, str] | None = None


class PrewarmTableIndexRequest(_Model):
    """LanceDB's `prewarm_index`: load the index `index_name` into the server's caches."""

    identity: Identity | None = None
    context: dict[str, str] | None = None
    id: list[str] | None = None
    index_name: str | None = None


class PrewarmTableIndexResponse(_Model):
    context: dict[str, str] | None = None


class CloneTableRequest(_Model):
    """LanceDB's `clone_table`: table `id` made a clone of the table whose data is at
    `source_location` (its location, as DescribeTable answers it), at `source_version` or
    `source_tag` (latest by default). A shallow clone (the default) reads the source's data
    files where they are; a deep one copies them. The server fills `source_id`, the table the
    location belongs to, from its ownership record, to check the caller may read it."""

    identity: Identity | None = None
    context: dict[str, str] | None = None
    id: list[str] | None = None
    source_location: str | None = None
    source_version: int | None = None
    source_tag: str | None = None
    is_shallow: bool | None = None
    source_id: list[str] | None = None


class CloneTableResponse(_Model):
    location: str | None = None
    version: int | None = None
    context: dict[str, str] | None = None


class ColumnOrder(_Model):
    """One key of a query's order: Lance's `ColumnOrdering`."""

    column_name: str
    ascending: bool = True
    nulls_first: bool = False


class QueryTableRequest(lance_namespace.QueryTableRequest):
    """QueryTable, and the order of the answer's rows (LanceDB's `order_by`)."""

    order_by: list[ColumnOrder] | None = None


class AnalyzeTableQueryPlanRequest(lance_namespace.AnalyzeTableQueryPlanRequest):
    """AnalyzeTableQueryPlan, and the order of the query's rows."""

    order_by: list[ColumnOrder] | None = None


class ExplainTableQueryPlanRequest(lance_namespace.ExplainTableQueryPlanRequest):
    """ExplainTableQueryPlan of a query that may order its rows."""

    query: QueryTableRequest


class CreateTableIndexRequest(lance_namespace.CreateTableIndexRequest):
    """CreateTableIndex, with `replace` (False: an existing index of that name is an error,
    not rebuilt) and the full-text index options of Lance's inverted index."""

    replace: bool | None = None
    min_ngram_length: int | None = None
    max_ngram_length: int | None = None
    prefix_only: bool | None = None
    custom_stop_words: list[str] | None = None
    block_size: int | None = None
    index_operators: bool | None = None
    preserve_original: bool | None = None
    split_identifiers: bool | None = None
    split_on_numerics: bool | None = None
    lance_tokenizer: str | None = None


class AddColumnsEntry(models.AddColumnsEntry):
    """A new column: from an SQL expression, or all null of `data_type` (a spec
    `JsonArrowDataType`, or Lance's JSON name of a type) as Lance adds a column from a schema
    (LanceDB's `add_columns(pa.field(...))`)."""

    data_type: dict[str, Any] | None = None
    nullable: bool | None = None


class AlterTableAddColumnsRequest(lance_namespace.AlterTableAddColumnsRequest):
    """AlterTableAddColumns, whose columns may also be typed all-null ones."""

    new_columns: list[AddColumnsEntry]


def extension_fields(request: BaseModel) -> list[str]:
    """The fields `request` sets that its official model does not have."""
    official = getattr(lance_namespace, type(request).__name__, None)
    if official is None or official is type(request):
        return []
    return [
        name for name in type(request).model_fields
        if name not in official.model_fields and getattr(request, name) is not None
    ]
