"""The Glue Data Catalog seen through namespace paths: which catalog or database a path
names, the paged reads, and the table entries (Glue's side of a table; the data is not here)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lance_namespace import (
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from backends.core.lance_tables import settled_parameters
from backends.core.names import joined_id
from backends.glue.errors import glue_errors
from backends.glue.names import DatabaseRef, ResolvedNamespace, child_catalog_id
from backends.glue.settings import GlueSettings


def namespace_not_found(namespace: list[str], why: str = "") -> NamespaceNotFoundError:
    return NamespaceNotFoundError(f"namespace {joined_id(namespace)} not found{why}")


class GlueCatalog:
    """Glue reads by namespace path, over one bounded Glue client."""

    def __init__(self, glue: Any, settings: GlueSettings, sts: Callable[[], Any]) -> None:
        self.glue = glue
        self._settings = settings
        self._sts = sts
        self._account_id: str | None = None

    # -- catalog ids ---------------------------------------------------------------------------

    def caller_account(self) -> str:
        """The caller's account ID, asked once from STS GetCallerIdentity."""
        if self._account_id is None:
            with glue_errors("caller identity"):
                self._account_id = str(self._sts().get_caller_identity()["Account"])
        return self._account_id

    def nested_catalog_id(self, path: list[str]) -> str:
        """The ID of the catalog at `path` below the starting catalog (the caller's account
        catalog when `catalog_id` is not configured)."""
        catalog_id = self._settings.catalog_id or self.caller_account()
        for name in path:
            catalog_id = child_catalog_id(catalog_id, name)
        return catalog_id

    def _catalog_id_for(self, path: list[str]) -> str | None:
        """The ID of the catalog at `path` below the root; None = default catalog (omit)."""
        return self.nested_catalog_id(path) if path else self._settings.catalog_id

    def database_ref(self, namespace: list[str]) -> DatabaseRef:
        """The database a table namespace names (its last part; the rest are catalogs)."""
        if not namespace:
            raise InvalidInputError("tables live in a database, not in the root namespace")
        if not self._settings.catalogs_enabled and len(namespace) > 1:
            raise namespace_not_found(namespace, " (hierarchy=databases has one level)")
        return DatabaseRef(self._catalog_id_for(namespace[:-1]), namespace[-1])

    # -- paged Glue reads ---------------------------------------------------------------------

    def _all_pages(self, operation: str, list_key: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of a paged Glue list call, following NextToken to the end."""
        call: Callable[..., dict[str, Any]] = getattr(self.glue, operation)
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            response = call(**params, **({"NextToken": token} if token else {}))
            items.extend(response.get(list_key) or [])
            next_token = response.get("NextToken")
            if not next_token or next_token == token:
                return items
            token = next_token

    def get_database(self, ref: DatabaseRef) -> dict[str, Any] | None:
        try:
            with glue_errors(ref.describe()):
                return self.glue.get_database(Name=ref.name, **ref.params())["Database"]
        except NamespaceNotFoundError:
            return None

    def require_database(self, ref: DatabaseRef, namespace: list[str]) -> dict[str, Any]:
        database = self.get_database(ref)
        if database is None:
            raise namespace_not_found(namespace)
        return database

    def _get_catalog(self, catalog_id: str) -> dict[str, Any] | None:
        try:
            with glue_errors(f"catalog {catalog_id}"):
                return self.glue.get_catalog(CatalogId=catalog_id)["Catalog"]
        except NamespaceNotFoundError:
            return None

    def child_catalogs(self, catalog_id: str | None) -> list[dict[str, Any]]:
        params = {"ParentCatalogId": catalog_id} if catalog_id else {}
        with glue_errors(f"catalog {catalog_id or 'default'}"):
            return self._all_pages("get_catalogs", "CatalogList", Recursive=False, **params)

    def databases(self, catalog_id: str | None) -> list[dict[str, Any]]:
        params = {"CatalogId": catalog_id} if catalog_id else {}
        with glue_errors(f"catalog {catalog_id or 'default'}"):
            return self._all_pages("get_databases", "DatabaseList", **params)

    def tables(self, ref: DatabaseRef) -> list[dict[str, Any]]:
        with glue_errors(ref.describe()):
            return self._all_pages("get_tables", "TableList", DatabaseName=ref.name, **ref.params())

    def table_if_exists(self, ref: DatabaseRef, table: str) -> dict[str, Any] | None:
        try:
            with glue_errors(f"table {table}", not_found=TableNotFoundError):
                return self.glue.get_table(DatabaseName=ref.name, Name=table, **ref.params())[
                    "Table"
                ]
        except TableNotFoundError:
            return None

    def get_table(self, ref: DatabaseRef, table: str, namespace: list[str]) -> dict[str, Any]:
        """The Glue table; NamespaceNotFound / TableNotFound tell which level is missing."""
        glue_table = self.table_if_exists(ref, table)
        if glue_table is None:
            self.require_database(ref, namespace)
            raise TableNotFoundError(f"table {table} not found")
        return glue_table

    # -- namespace resolution -----------------------------------------------------------------

    def resolve(self, namespace: list[str]) -> ResolvedNamespace:
        """The root, the database or the catalog `namespace` names; a database wins over a
        catalog of the same path."""
        if not namespace:
            return ResolvedNamespace("root", catalog_id=self._settings.catalog_id)
        if not self._settings.catalogs_enabled and len(namespace) > 1:
            raise namespace_not_found(namespace)
        ref = DatabaseRef(self._catalog_id_for(namespace[:-1]), namespace[-1])
        database = self.get_database(ref)
        if database is not None:
            return ResolvedNamespace("database", database=ref, entry=database)
        if self._settings.catalogs_enabled:
            catalog_id = self.nested_catalog_id(namespace)
            catalog = self._get_catalog(catalog_id)
            if catalog is not None:
                return ResolvedNamespace("catalog", catalog_id=catalog_id, entry=catalog)
        raise namespace_not_found(namespace)

    def find(self, namespace: list[str]) -> ResolvedNamespace | None:
        """As `resolve`, but None when nothing is there."""
        try:
            return self.resolve(namespace)
        except NamespaceNotFoundError:
            return None

    def require_catalog(self, path: list[str]) -> str | None:
        """The ID of the catalog at `path` (which must exist); root needs no check."""
        found = self.resolve(path)
        if found.kind == "database":
            raise NamespaceNotFoundError(f"catalog {joined_id(path)} not found")
        return found.catalog_id

    def children(self, namespace: list[str]) -> list[str]:
        found = self.resolve(namespace)
        if found.kind == "database":
            return []  # databases are leaves
        names = [database["Name"] for database in self.databases(found.catalog_id)]
        if self._settings.catalogs_enabled:
            names += [catalog["Name"] for catalog in self.child_catalogs(found.catalog_id)]
        return names

    def database_paths(self, path: list[str], catalog_id: str | None) -> list[list[str]]:
        """Every database at or below the catalog at `path`, as namespace paths."""
        paths = [[*path, database["Name"]] for database in self.databases(catalog_id)]
        if self._settings.catalogs_enabled:
            for catalog in self.child_catalogs(catalog_id):
                child = [*path, catalog["Name"]]
                paths += self.database_paths(child, self.nested_catalog_id(child))
        return paths

    def require_empty(self, found: ResolvedNamespace, name: str) -> None:
        if found.database is not None:
            ref = found.database
            with glue_errors(ref.describe()):
                tables = self.glue.get_tables(DatabaseName=ref.name, MaxResults=1, **ref.params())
            if tables.get("TableList"):
                raise NamespaceNotEmptyError(f"namespace {name} still has tables")
            return
        if self.databases(found.catalog_id) or self.child_catalogs(found.catalog_id):
            raise NamespaceNotEmptyError(f"namespace {name} still has databases or catalogs")

    # -- table entries: created, replaced and deleted ---------------------------------------

    def create_table(
        self, ref: DatabaseRef, created: dict[str, Any], namespace: list[str]
    ) -> None:
        try:
            with glue_errors(
                f"table {joined_id([*namespace, created['Name']])}",
                not_found=NamespaceNotFoundError,
                already_exists=TableAlreadyExistsError,
            ):
                self.glue.create_table(DatabaseName=ref.name, TableInput=created, **ref.params())
        except NamespaceNotFoundError:
            raise namespace_not_found(namespace) from None

    def update_table(self, ref: DatabaseRef, updated: dict[str, Any], table_id: list[str]) -> None:
        with glue_errors(f"table {joined_id(table_id)}", not_found=TableNotFoundError):
            self.glue.update_table(DatabaseName=ref.name, TableInput=updated, **ref.params())

    def delete_table(self, ref: DatabaseRef, table_id: list[str]) -> None:
        with glue_errors(f"table {joined_id(table_id)}", not_found=TableNotFoundError):
            self.glue.delete_table(DatabaseName=ref.name, Name=table_id[-1], **ref.params())

    def move_table(
        self,
        glue_table: Mapping[str, Any],
        source: tuple[DatabaseRef, list[str]],
        target: tuple[DatabaseRef, list[str]],
    ) -> None:
        """Glue has no rename: create the entry `target` names, then delete `source` (the
        create is undone if that fails). The data stays at its location."""
        (source_ref, source_id), (target_ref, target_id) = source, target
        moved = {**self.writable("Table", "TableInput", glue_table), "Name": target_id[-1]}
        self.create_table(target_ref, moved, target_id[:-1])
        try:
            self.delete_table(source_ref, source_id)
        except LanceNamespaceError as error:
            self._undo_create(target_ref, target_id, error)
            raise

    def _undo_create(self, ref: DatabaseRef, table_id: list[str], cause: Exception) -> None:
        try:
            self.delete_table(ref, table_id)
        except LanceNamespaceError as undo_error:
            raise InternalError(
                f"rename failed ({cause}) and its new entry {joined_id(table_id)} could"
                f" not be removed ({undo_error}): both entries now name the same data"
            ) from cause

    def record_data(self, ref: DatabaseRef, table_id: list[str]) -> None:
        """The table has Lance data now: an `empty_table=true` flag (impls') becomes false."""
        glue_table = self.table_if_exists(ref, table_id[-1]) or {}
        parameters = settled_parameters(glue_table.get("Parameters"))
        if parameters is not None:
            self.replace_parameters(ref, glue_table, parameters, table_id)

    def replace_parameters(
        self,
        ref: DatabaseRef,
        glue_table: Mapping[str, Any],
        parameters: dict[str, str],
        table_id: list[str],
    ) -> None:
        """UpdateTable with `parameters`, every other field of `glue_table` kept."""
        updated = self.writable("Table", "TableInput", glue_table)
        updated["Parameters"] = parameters
        self.update_table(ref, updated, table_id)

    def update_namespace(self, found: ResolvedNamespace, update: dict[str, Any]) -> None:
        """Replace the database or catalog with `update` (UpdateDatabase/UpdateCatalog)."""
        with glue_errors(found.describe()):
            if found.database is not None:
                ref = found.database
                self.glue.update_database(
                    Name=ref.name, DatabaseInput={**update, "Name": ref.name}, **ref.params()
                )
            else:
                self.glue.update_catalog(CatalogId=found.catalog_id, CatalogInput=update)

    def writable(
        self, read_shape: str, write_shape: str, current: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The fields of a Glue object as read (`read_shape`) that its update input
        (`write_shape`) takes unchanged: Update* replaces the whole object, so every field
        that is not carried over would be lost."""
        model = self.glue.meta.service_model
        read = model.shape_for(read_shape).members
        write = model.shape_for(write_shape).members
        return {
            key: value
            for key, value in current.items()
            if value is not None and key in write and key in read
            and read[key].name == write[key].name
        }
