"""The `dir` backend: pylance's `DirectoryNamespace` (Rust, manifest-enabled by default), with
fixes where the native operation fails or answers wrongly on a nested-namespace root.

Native: namespaces, table registration, data, indexes, tags, branches, restore, stats, query
plans, transactions. From `MetadataNamespace` (pylance at the table location, located by the
native DescribeTable): ListAllTables (natively only the root's tables), UpdateFieldMetadata
(natively unsupported), RenameTable (natively unsupported: register the same data under the new
id, then deregister the old), CreateTableIndex (natively ignores num_sub_vectors),
AlterTableAlterColumns (natively wants data_type as a JSON string), the table
versions (natively dicts in and out, and server paths as manifest paths), ListOperations and
the code-0 answers. Modes are parsed once (`parse_mode`) before the native call, which accepts
only some spellings and ignores the namespace and registration modes.
"""

from __future__ import annotations

import os
from typing import Any

from lance.namespace import DirectoryNamespace
from lance_namespace import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    CreateTableRequest,
    CreateTableResponse,
    CreateTableVersionRequest,
    CreateTableVersionResponse,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    InsertIntoTableRequest,
    InsertIntoTableResponse,
    NamespaceAlreadyExistsError,
    RegisterTableRequest,
    RegisterTableResponse,
)

from backends.base import MetadataNamespace
from backends.modes import CreateMode, RegisterMode, WriteMode, parse_mode
from backends.tables.access import TableLocation
from backends.tables.lifecycle import caller

# The spellings the native operations accept.
_NATIVE_CREATE_MODES = {
    CreateMode.CREATE: "Create",
    CreateMode.EXIST_OK: "ExistOk",
    CreateMode.OVERWRITE: "Overwrite",
}


class DirectoryBackend(DirectoryNamespace, MetadataNamespace):
    """`DirectoryNamespace` first in the method order: its native operations win; the base
    supplies what it lacks and the fixes below choose the base explicitly."""

    def __init__(self, **properties: str) -> None:
        super().__init__(**properties)
        self._root = properties.get("root", "")

    def backend_name(self) -> str:
        return "DirectoryNamespace"

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        return DirectoryNamespace.describe_table(self, request)

    def registered_location(self, table: TableLocation) -> str:
        return self._relative_to_root(table.location)

    def _relative_to_root(self, location: str) -> str:
        """The native RegisterTable takes only locations relative to the root; one inside the
        root given in full (as DescribeTable answers it) is made relative."""
        root = self._root.removeprefix("file://")
        if "://" not in root:
            root = os.path.abspath(root)
        path = location.removeprefix("file://")
        prefix = root.rstrip("/") + "/"
        return path.removeprefix(prefix) if path.startswith(prefix) else location

    # -- modes parsed once, passed on in a spelling the native operation accepts -------------

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        native = request.model_copy(update={"mode": None})
        try:
            return DirectoryNamespace.create_namespace(self, native)
        except NamespaceAlreadyExistsError:
            if mode is CreateMode.CREATE:
                raise
        if mode is CreateMode.OVERWRITE:
            DirectoryNamespace.drop_namespace(
                self, DropNamespaceRequest(id=request.id, **caller(request))
            )
            return DirectoryNamespace.create_namespace(self, native)
        described = DirectoryNamespace.describe_namespace(
            self, DescribeNamespaceRequest(id=request.id, **caller(request))
        )
        return CreateNamespaceResponse(properties=described.properties)

    def create_table(self, request: CreateTableRequest, request_data: bytes) -> CreateTableResponse:
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        native = request.model_copy(update={"mode": _NATIVE_CREATE_MODES[mode]})
        return DirectoryNamespace.create_table(self, native, request_data)

    def insert_into_table(
        self, request: InsertIntoTableRequest, request_data: bytes
    ) -> InsertIntoTableResponse:
        mode = parse_mode(request.mode, WriteMode, WriteMode.APPEND)
        native = request.model_copy(update={"mode": mode.value})
        return DirectoryNamespace.insert_into_table(self, native, request_data)

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        location = self._relative_to_root(request.location)
        native = request.model_copy(update={"mode": None, "location": location})
        if mode is RegisterMode.CREATE or not self._exists(request):
            return DirectoryNamespace.register_table(self, native)
        previous = self.locate(request)
        DirectoryNamespace.deregister_table(
            self, DeregisterTableRequest(id=request.id, **caller(request))
        )
        try:
            return DirectoryNamespace.register_table(self, native)
        except BaseException:  # put the previous registration back: nothing half-done
            restored = native.model_copy(update={"location": self.registered_location(previous)})
            DirectoryNamespace.register_table(self, restored)
            raise

    # -- native operations that fail or answer wrongly: the generic ones instead ------------

    list_all_tables = MetadataNamespace.list_all_tables
    rename_table = MetadataNamespace.rename_table
    create_table_index = MetadataNamespace.create_table_index
    # Natively data_type must be a JSON string, though the official model makes it an object.
    alter_table_alter_columns = MetadataNamespace.alter_table_alter_columns
    list_table_versions = MetadataNamespace.list_table_versions
    describe_table_version = MetadataNamespace.describe_table_version
    batch_delete_table_versions = MetadataNamespace.batch_delete_table_versions
    # Natively a Python NotImplementedError (a 500): the code-0 answer instead.
    alter_table_backfill_columns = MetadataNamespace.alter_table_backfill_columns
    create_materialized_view = MetadataNamespace.create_materialized_view
    refresh_materialized_view = MetadataNamespace.refresh_materialized_view

    def create_table_version(
        self, request: CreateTableVersionRequest
    ) -> CreateTableVersionResponse:
        """Natively a dict in and out: the official models here."""
        answer: Any = DirectoryNamespace.create_table_version(self, request.model_dump())
        return CreateTableVersionResponse.from_dict(answer)
