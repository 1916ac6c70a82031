"""The `dir` backend: a `MetadataNamespace` over pylance's native `DirectoryNamespace` (Rust,
manifest-enabled by default), with fixes where the native operation fails or answers wrongly
on a nested-namespace root. Its parts: the native namespace as it is called
(`backends.directory.pylance`), the operations delegated to it (`backends.directory.delegated`)
and what requests they would not honour (`backends.directory.native`: served by the generic
operation instead), the root's manifest read directly for what the native lookup misses
(`backends.directory.root_manifest`). This module holds the fixes: the namespace operations,
table registration, create, declare, describe, exists, renames and query plans; modes are
parsed once (`parse_mode`) before the native call, which accepts only some spellings and
ignores the namespace and registration modes.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from lance_namespace import (
    AnalyzeTableQueryPlanRequest,
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    CreateTableRequest,
    CreateTableResponse,
    CreateTableVersionRequest,
    CreateTableVersionResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    ExplainTableQueryPlanRequest,
    InvalidInputError,
    InvalidTableStateError,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    TableExistsRequest,
    TableExistsResponse,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.base import MetadataNamespace
from backends.core.lance_tables import require_lance_table
from backends.core.locations import local_directory, resolve_stored, storage_root
from backends.core.modes import CreateMode, RegisterMode, parse_mode
from backends.core.names import ID_DELIMITER, joined_id
from backends.core.paging import paginate
from backends.core.settings import BackendSettings
from backends.directory.delegated import NativeOperations
from backends.directory.entries import RememberedEntries
from backends.directory.hooks import DirectoryHooks
from backends.directory.layout import (
    DirectoryLayout,
    in_root,
    listed_directory,
    relative_to_root,
    rename_root_table,
    require_storable_id,
)
from backends.directory.manifest_repair import creating_root_table, is_manifest_damage, repaired
from backends.directory.native import (
    create_namespace_natively,
    drop_namespace_natively,
    natively_ignored,
    quoted_for_sql,
)
from backends.directory.orphans import sweep_orphans
from backends.directory.pylance import Pylance
from backends.directory.renames import RootRenames
from backends.directory.root_manifest import RootManifest
from backends.directory.settings import DirectorySettings
from backends.layouts import TableLayout
from backends.tables.bodies import stream_has_rows
from backends.tables.datasets import TableLocation, has_data, open_dataset
from backends.tables.errors import translate_internal
from backends.tables.history import staging_manifest_key
from backends.tables.lifecycle import caller, renamed_id
from backends.tables.reach import check_no_links
from backends.tables.reads import query_vectors, require_vector_column, vector_column

if TYPE_CHECKING:
    from lance import Session

# The spellings the native operations accept.
_NATIVE_CREATE_MODES = {
    CreateMode.CREATE: "Create",
    CreateMode.EXIST_OK: "ExistOk",
    CreateMode.OVERWRITE: "Overwrite",
}


# The delegated operations that make a table (nothing to open and check before them).
_NEW_TABLES = frozenset(("declare_table", "create_table"))


def _version_asked(request: Any) -> int | None:
    """The version a table operation names (ListTableIndices', CreateTableTag's), if any."""
    version = getattr(request, "version", None)
    return version if isinstance(version, int) else None


class DirectoryBackend(DirectoryHooks, NativeOperations, MetadataNamespace):
    """pylance's `DirectoryNamespace`, held and delegated to (`NativeOperations`, and the
    native calls of the fixes below); every other operation is this class's own or
    `MetadataNamespace`'s."""

    settings_class: ClassVar[type[BackendSettings]] = DirectorySettings

    def __init__(self, **properties: str) -> None:
        settings = DirectorySettings.from_properties(properties)
        self._root = storage_root(settings.root)
        self._storage_options = dict(settings.storage)
        self._pylance = Pylance(settings.native_properties(properties), self._root)
        self._manifest = RootManifest(self._root, self._storage_options)
        self._local_root, self._configured_root = settings.local_root(), settings.root
        self._renames = RootRenames(self._local_root, settings.rename_recovery_after)
        self._entries: RememberedEntries | None = None

    def use_lance_session(self, session: Session | None) -> None:
        """The native operations (queries among them) open tables with `session` too."""
        super().use_lance_session(session)
        if session is not None:
            self._pylance = self._pylance.with_session(session)
        if self.latest_versions is not None and self._local_root is not None:
            self._entries = RememberedEntries(self._local_root.absolute(), self.latest_versions)

    def sweep_abandoned(self, abandoned_after: float) -> list[str]:
        """The orphan table directories of a local root (`backends.directory.orphans`)."""
        return [str(path) for path in sweep_orphans(self._root, abandoned_after)]

    def namespace_id(self) -> str:
        return self._pylance.native.namespace_id()

    def __repr__(self) -> str:
        return repr(self._pylance.native)

    def backend_name(self) -> str:
        return "DirectoryNamespace"

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        """The native entry without what the native lookup read of main's latest version (the
        generic DescribeTable reads the version asked: a tag's, a branch's), with the root's
        storage options, which natively it lacks (an object-store table opens with them);
        on a local root remembered while the manifest is unchanged
        (`backends.directory.entries`)."""
        def look_up() -> DescribeTableResponse:  # the entry alone: natively nothing opened
            return self._as_entry(self._described(
                DescribeTableRequest(id=request.id, **caller(request))))

        if self._entries is None:
            return look_up()
        return self._entries.entry(list(request.id or []), look_up)

    def _as_entry(self, described: DescribeTableResponse) -> DescribeTableResponse:
        options = described.storage_options or dict(self._storage_options) or None
        return described.model_copy(
            update={"version": None, "var_schema": None, "storage_options": options})

    def storage_root(self) -> str:
        return storage_root(self._root)

    def table_layout(self) -> TableLayout:
        return DirectoryLayout()

    def registers_anywhere(self) -> bool:
        return False  # natively only locations relative to the root are registered

    def root_storage_options(self) -> dict[str, str]:
        return dict(self._storage_options)

    def registered_location(self, table: TableLocation) -> str | None:
        """Relative to the root; a table without data yet is declared again at its new id's
        own path (natively a declaration anywhere else is refused)."""
        return relative_to_root(self._root, table.location) if has_data(table) else None

    # -- modes parsed once, passed on in a spelling the native operation accepts -------------

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        return create_namespace_natively(self._pylance.native, request)

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        return drop_namespace_natively(self._pylance.native, request)

    # -- the native operations take a missing namespace for an empty one -------------------

    def _require_namespace(self, namespace: list[str], request: Any) -> None:
        """NamespaceNotFoundError (code 1) unless `namespace` (not the root) exists."""
        if namespace:
            self._pylance.as_is("namespace_exists",
                                NamespaceExistsRequest(id=namespace, **caller(request)))

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        return self._pylance.as_is("list_namespaces", quoted_for_sql(request))

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        namespace = list(request.id or [])
        self._require_namespace(namespace, request)
        if namespace:
            return self._pylance.as_is("list_tables", quoted_for_sql(request))
        # Natively the root lists `<name>.lance` directories and misses root tables registered
        # at another location; the manifest holds them.
        whole = request.model_copy(update={"page_token": None, "limit": None})
        listed = self._pylance.as_is("list_tables", whole).tables
        registered = [key for key in self._manifest.tables() or {} if ID_DELIMITER not in key]
        page, token = paginate([*listed, *registered], request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        require_storable_id(list(request.id or []))
        self._require_namespace(list(request.id or [])[:-1], request)
        return self._delegated("declare_table", request)

    def create_table(self, request: CreateTableRequest, request_data: bytes) -> CreateTableResponse:
        """A table from a schema alone (a stream without rows) is the generic operation's:
        natively it is refused as "no data"."""
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        require_storable_id(list(request.id or []))
        self._require_namespace(list(request.id or [])[:-1], request)
        if not stream_has_rows(request_data):
            return MetadataNamespace.create_table(self, request, request_data)
        if mode is not CreateMode.CREATE and self.table_found(request):  # natively written over
            check_no_links(list(request.id or []), self.locate(request).location)
        native = request.model_copy(update={"mode": _NATIVE_CREATE_MODES[mode]})
        create = functools.partial(self._delegated, "create_table", native, request_data)
        root_table = len(request.id or []) == 1 and mode is CreateMode.CREATE
        created = creating_root_table(create, self._root, self._storage_options,
                                      request.id[0]) if root_table else create()
        if created.version is None:  # natively unset when ExistOk found the table
            created.version = open_dataset(self.locate(request)).version
        return created

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        """The native answer names the location relative to the root: answered as DescribeTable
        names it."""
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        if request.properties:
            raise InvalidInputError(
                "the DirectoryNamespace backend keeps no properties of a registered table "
                "(pylance's native RegisterTable drops them): register it without properties"
            )
        require_storable_id(list(request.id or []))
        self._require_namespace(list(request.id or [])[:-1], request)
        location = relative_to_root(self._root, request.location)
        require_lance_table(in_root(self._root, location), self._storage_options)
        native = request.model_copy(update={"mode": None, "location": location})
        if mode is RegisterMode.CREATE or not self.table_found(request):
            registered = self._pylance.as_is("register_table", native)
        else:
            registered = self._overwrite_registration(request, native)
        described = self._described(DescribeTableRequest(id=request.id, **caller(request)))
        return registered.model_copy(update={"location": described.location})

    def _overwrite_registration(
        self, request: RegisterTableRequest, native: RegisterTableRequest
    ) -> RegisterTableResponse:
        previous = self.locate(request)
        self._pylance.as_is("deregister_table",
                            DeregisterTableRequest(id=request.id, **caller(request)))
        try:
            return self._pylance.as_is("register_table", native)
        except BaseException:  # put the previous registration back: nothing half-done
            restored = native.model_copy(update={"location": self.registered_location(previous)})
            self._pylance.as_is("register_table", restored)
            raise

    # -- native operations, with their errors given the spec's precise codes ----------------

    def served_operation(self, name: str) -> Callable[..., Any]:
        """The operation `name`, after finishing renames a kill cut off
        (`backends.directory.renames`), repairing the manifest where it finds it damaged
        (`backends.directory.manifest_repair`), its native errors given the spec's codes."""
        return functools.partial(self._repairing, getattr(self, name))

    def _repairing(self, operation: Callable[..., Any], *arguments: Any, **keywords: Any) -> Any:
        self._renames.finish_cut_off(self)
        try:
            return operation(*arguments, **keywords)
        except BaseException as error:
            if is_manifest_damage(error):
                raise repaired(self._root, self._storage_options) from error
            # A native call made outside `Pylance.call` (a full disk while the manifest is
            # written, say): its internal error gets its precise code too.
            translated = translate_internal(error, self.storage_root())
            if translated is error:
                raise
            raise translated from error

    def _delegated(self, name: str, *arguments: Any) -> Any:
        """The native operation `name`, its errors given the spec's codes; the base's for a
        request it would not honour in full (`backends.directory.native`), and on a table its
        lookup misses (`backends.directory.root_manifest`), which the base finds through
        `describe_table_entry`."""
        if natively_ignored(arguments[0]):
            return getattr(MetadataNamespace, name)(self, *arguments)
        if name not in _NEW_TABLES:  # the one checked open: natively the table is not checked
            self.open(arguments[0], _version_asked(arguments[0]))
        try:
            return self._pylance.call(name, *arguments)
        except TableNotFoundError as error:
            request = arguments[0]
            if (self._manifest.entry(list(request.id or [])) is not None
                    and not self._pylance.finds(request)):
                return getattr(MetadataNamespace, name)(self, *arguments)
            if not self.table_found(request):
                raise
            table = joined_id(arguments[0].id)
            message = f"table {table} is declared but has no data yet"
            raise InvalidTableStateError(message) from error

    def _described(self, request: Any) -> DescribeTableResponse:
        """The native entry, else the manifest's bare entry (location only)."""
        try:
            return self._pylance.describe(request)
        except TableNotFoundError:
            found = self._manifest.entry(list(request.id or []))
            if found is None:
                raise
            return found

    def table_entry_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        self._described(DescribeTableRequest(id=request.id, **caller(request)))
        return TableExistsResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        """Natively a root table listed by its `<name>.lance` directory "deregisters" and is
        still found, listed and read there: refused, nothing changed (code 0)."""
        table_id = list(request.id or [])
        if len(table_id) == 1 and self._pylance.finds(request):
            raise UnsupportedOperationError(
                f"table {table_id[0]} cannot be deregistered: it is the directory "
                f"{table_id[0]}.lance under the root, which the DirectoryNamespace backend "
                "lists as a table whatever its catalog holds; DropTable deletes it"
            )
        return self.deregister_entry(request)

    def deregister_entry(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        """The manifest entry removed: DropTable deletes a root table's directory too, and
        RenameTable moves it, so neither leaves it found by its directory."""
        return self._pylance.call("deregister_table", request)

    # -- native operations that fail or answer wrongly: the generic ones instead ------------

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """A root table found only by its `<name>.lance` directory has no manifest entry to
        deregister: refused before anything is written, not half-renamed and rolled back."""
        require_storable_id(renamed_id(request))
        ids = self._manifest.tables()
        if ids is not None and joined_id(request.id) not in ids and self.table_found(request):
            raise UnsupportedOperationError(
                f"table {joined_id(request.id)} is only a directory under the root, not in "
                "the manifest: RegisterTable it under the new name instead"
            )
        table = self.locate(request)
        directory = listed_directory(local_directory(self._root), table)
        if directory is None:  # its data stays where it is
            with self._renames.in_place(list(table.id), renamed_id(request), table.location):
                return MetadataNamespace.rename_table(self, request)
        rename_root_table(self, request, table, directory, self._renames)
        return RenameTableResponse()

    def create_table_version(
        self, request: CreateTableVersionRequest
    ) -> CreateTableVersionResponse:
        """Natively a dict in and out (the official models here), any file the server reads
        committed as a manifest and then deleted (only the table's staging manifests here),
        and a table its lookup misses not found (refused, code 0, saying why)."""
        ignored = [name for name in ("e_tag", "manifest_size", "metadata")
                   if getattr(request, name) is not None]
        if ignored:
            raise InvalidInputError(
                f"the DirectoryNamespace backend's commit takes no {', '.join(ignored)}: "
                "commit without them"
            )
        table = self.locate(request)
        key = staging_manifest_key(resolve_stored(table.location).key, request.manifest_path)
        if not self._pylance.finds(request):
            raise UnsupportedOperationError(
                f"CreateTableVersion is not supported by the DirectoryNamespace backend for "
                f"table {joined_id(request.id)}: it is a root table registered at another "
                "location than its own directory, which the native commit cannot reach"
            )
        native = request.model_copy(update={"manifest_path": key})
        answer: Any = self._pylance.call("create_table_version", native.model_dump())
        return CreateTableVersionResponse.from_dict(answer)

    # Plans checked as the generic queries check them: natively an empty vector among
    # several, and a vector column given without a vector, are ignored. (QueryTable is the
    # generic one: its rows are streamed as Lance's scanner reads them.)
    def explain_table_query_plan(self, request: ExplainTableQueryPlanRequest) -> str:
        self._check_query(request, request.query, request.query.version)
        return self._delegated("explain_table_query_plan", request)

    def analyze_table_query_plan(self, request: AnalyzeTableQueryPlanRequest) -> str:
        self._check_query(request, request, request.version)
        return self._delegated("analyze_table_query_plan", request)

    def _check_query(self, request: Any, query: Any, version: int | None) -> None:
        """`query` (`request`'s own or its inner query) as `backends.tables.reads` checks it:
        no empty vector among several, a vector column given without a vector exists, and a
        vector search names the column `vector_column` picks and checks (natively the table's
        first would be searched when it names none)."""
        if query_vectors(query):
            query.vector_column = vector_column(self.open(request, version).schema, query)
        elif query.vector_column:
            require_vector_column(self.open(request, version).schema, query.vector_column)
