"""A fault injector speaking the Iceberg REST Catalog protocol, backed by real Iceberg (pyiceberg)
metadata.

Ordinary behaviour runs on Apache Iceberg's REST reference server
(`tests/support/iceberg_rest_server.py`: the contract suite, LanceDB, the impls interop,
pyiceberg both ways). This stand-in is kept for what that server cannot be made to do: several
warehouses behind prefixes announced in `overrides` or `defaults` (the reference server is one
catalog without a prefix), injected failures, stalls and slow LoadTable answers, server pages of
2, refused OAuth2 credentials, token expiry and bearer checks (the reference server issues a
token to any client and accepts any caller), vended credentials from a test's grants, and a log
of the requests the backend sent.

It serves the subset of `open-api/rest-catalog-open-api.yaml` the iceberg backend uses (config,
OAuth2 token, namespaces, tables; with `grants`, vended credentials in a LoadTableResult's
`storage-credentials` when asked by `X-Iceberg-Access-Delegation: vended-credentials`) and
keeps everything in pyiceberg `SqlCatalog`s on SQLite, one per warehouse, so table metadata
files are real Iceberg metadata. pyiceberg's own `RestCatalog` is pointed at it in the tests to
prove it speaks the protocol.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from pyiceberg.catalog.rest import CreateTableRequest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.table import CommitTableRequest, TableIdentifier

from tests.support.rest_catalog_stand_in import (
    Grants,
    StandInControl,
    install_control,
    install_token_route,
    serve,
)

SEPARATOR = "\x1f"
DEFAULT_PAGE_SIZE = 2
TOKEN_PATH = "/v1/oauth/tokens"
DELEGATION = "x-iceberg-access-delegation"


class IcebergError(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def error_body(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": status}}


@dataclass
class IcebergStandIn:
    """A running fixture: its URL, the control knobs and the catalogs behind it."""

    url: str
    control: StandInControl
    state: CatalogState


class CatalogState:
    """One SqlCatalog per warehouse; `prefix_style` decides what /v1/config returns."""

    def __init__(
        self, workdir: Path, warehouses: tuple[str, ...], grants: Grants | None = None,
        io_properties: dict[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.catalogs = {
            name: SqlCatalog(
                name,
                uri=f"sqlite:///{workdir / 'catalog.db'}",
                warehouse=f"file://{workdir / 'warehouse' / name}",
                **(io_properties or {}),
            )
            for name in warehouses
        }
        self.grants = grants
        self.delegations: list[str] = []  # the table location of every vend
        self.prefix_style = "overrides"  # or "defaults" or "none"
        self.load_delay_seconds = 0.0
        self.lock = threading.Lock()

    def prefix_for(self, warehouse: str) -> str:
        return warehouse if self.prefix_style == "none" else f"p-{warehouse}"

    def catalog_for_prefix(self, prefix: str) -> SqlCatalog:
        for name, catalog in self.catalogs.items():
            if self.prefix_for(name) == prefix:
                return catalog
        raise IcebergError(404, "NoSuchWarehouseException", f"no warehouse for prefix {prefix}")


def _namespace(encoded: str) -> tuple[str, ...]:
    parts = tuple(encoded.split(SEPARATOR))
    if not all(parts):
        raise IcebergError(400, "BadRequestException", f"malformed namespace {encoded!r}")
    return parts


def _page(items: list[Any], request: Request) -> tuple[list[Any], str | None]:
    """Paging per the spec: only when the client sends pageToken (empty for the first page)."""
    token = request.query_params.get("pageToken")
    if token is None:
        return items, None
    size = int(request.query_params.get("pageSize") or DEFAULT_PAGE_SIZE)
    start = int(token) if token else 0
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def _table_result(table: Any) -> dict[str, Any]:
    return {
        "metadata-location": table.metadata_location,
        "metadata": json.loads(table.metadata.model_dump_json()),
        "config": {},
    }


def _delegated(state: CatalogState, result: dict[str, Any], header: str) -> dict[str, Any]:
    """`result` with vended credentials when the client asked for them and `grants` is set:
    `storage-credentials` for the table's location (read-write, as the catalog decides)."""
    asked = "vended-credentials" in [part.strip() for part in header.split(",")]
    if not asked or state.grants is None:
        return result
    location = str(result["metadata"]["location"]).rstrip("/") + "/"
    grant = state.grants(location, True)
    state.delegations.append(location)
    config = {
        "s3.access-key-id": grant.access_key_id,
        "s3.secret-access-key": grant.secret_access_key,
        "s3.session-token": grant.session_token,
        "s3.session-token-expires-at-ms": str(grant.expires_at_millis),
    }
    return {**result, "storage-credentials": [{"prefix": location, "config": config}]}


def build_app(state: CatalogState, control: StandInControl) -> FastAPI:
    """The stand-in's app: control hooks, the Iceberg error shape, then config and token,
    namespaces and tables."""
    app = FastAPI()
    install_control(app, control, error_body, open_paths=("/v1/config", TOKEN_PATH))

    @app.exception_handler(IcebergError)
    async def iceberg_error(_: Request, error: IcebergError) -> JSONResponse:
        return JSONResponse(error_body(error.status, error.kind, error.message), error.status)

    _config_routes(app, state, control)
    _namespace_routes(app, state)
    _namespace_property_routes(app, state)
    _table_routes(app, state)
    _table_item_routes(app, state)
    return app


def _config_routes(app: FastAPI, state: CatalogState, control: StandInControl) -> None:
    """Register GET /v1/config (the warehouse's prefix, per `prefix_style`) and the token route."""

    @app.get("/v1/config")
    def config(warehouse: str | None = None) -> dict[str, Any]:
        if warehouse not in state.catalogs:
            raise IcebergError(404, "NoSuchWarehouseException", f"unknown warehouse {warehouse}")
        prefix = {"prefix": state.prefix_for(warehouse)}
        if state.prefix_style == "defaults":
            return {"defaults": prefix, "overrides": {}}
        if state.prefix_style == "none":
            return {"defaults": {}, "overrides": {}}
        return {"defaults": {}, "overrides": prefix}

    install_token_route(app, control, TOKEN_PATH)


def _namespace_routes(app: FastAPI, state: CatalogState) -> None:
    """Register list/create/load/exists/drop of namespaces."""

    @app.get("/v1/{prefix}/namespaces")
    def list_namespaces(prefix: str, request: Request) -> dict[str, Any]:
        catalog = state.catalog_for_prefix(prefix)
        parent = request.query_params.get("parent")
        with state.lock:
            parent_ns = _namespace(parent) if parent else ()
            if parent_ns:
                _require_namespace(catalog, parent_ns)
            children = sorted(catalog.list_namespaces(parent_ns))
        page, token = _page([list(child) for child in children], request)
        return {"namespaces": page, "next-page-token": token}

    @app.post("/v1/{prefix}/namespaces")
    async def create_namespace(prefix: str, request: Request) -> dict[str, Any]:
        catalog = state.catalog_for_prefix(prefix)
        namespace, properties = _namespace_request(await request.json())
        with state.lock:
            if len(namespace) > 1:
                _require_namespace(catalog, namespace[:-1])
            try:
                catalog.create_namespace(namespace, properties)
            except NamespaceAlreadyExistsError as error:
                raise IcebergError(409, "AlreadyExistsException", str(error)) from error
            stored = _require_namespace(catalog, namespace)
        return {"namespace": list(namespace), "properties": stored}

    @app.get("/v1/{prefix}/namespaces/{namespace}")
    def load_namespace(prefix: str, namespace: str) -> dict[str, Any]:
        catalog = state.catalog_for_prefix(prefix)
        parts = _namespace(namespace)
        with state.lock:
            properties = _require_namespace(catalog, parts)
        return {"namespace": list(parts), "properties": properties}

    @app.head("/v1/{prefix}/namespaces/{namespace}")
    def namespace_exists(prefix: str, namespace: str) -> Response:
        load_namespace(prefix, namespace)
        return Response(status_code=204)

    @app.delete("/v1/{prefix}/namespaces/{namespace}")
    def drop_namespace(prefix: str, namespace: str) -> Response:
        catalog = state.catalog_for_prefix(prefix)
        parts = _namespace(namespace)
        with state.lock:
            _require_namespace(catalog, parts)
            if catalog.list_namespaces(parts):
                raise IcebergError(409, "NamespaceNotEmptyException", f"{parts} has children")
            try:
                catalog.drop_namespace(parts)
            except NamespaceNotEmptyError as error:
                raise IcebergError(409, "NamespaceNotEmptyException", str(error)) from error
        return Response(status_code=204)


def _namespace_property_routes(app: FastAPI, state: CatalogState) -> None:
    """Register POST .../namespaces/{namespace}/properties (UpdateNamespaceProperties)."""

    @app.post("/v1/{prefix}/namespaces/{namespace}/properties")
    async def update_namespace_properties(
        prefix: str, namespace: str, request: Request
    ) -> dict[str, Any]:
        catalog = state.catalog_for_prefix(prefix)
        parts = _namespace(namespace)
        removals, updates = _property_changes(await request.json())
        with state.lock:
            current = _require_namespace(catalog, parts)
            # SqlCatalog forgets a namespace whose last property row goes; its `exists`
            # marker (hidden from clients) keeps it.
            catalog.update_namespace_properties(parts, set(removals), {**updates, "exists": "true"})
        return {
            "updated": sorted(updates),
            "removed": sorted(key for key in removals if key in current),
            "missing": sorted(key for key in removals if key not in current),
        }


def _table_routes(app: FastAPI, state: CatalogState) -> None:
    """Register rename of a table and list/create of a namespace's tables."""

    @app.post("/v1/{prefix}/tables/rename")
    async def rename_table(prefix: str, request: Request) -> Response:
        catalog = state.catalog_for_prefix(prefix)
        source, destination = _rename_request(await request.json())
        with state.lock:
            try:
                catalog.rename_table(
                    (*source.namespace.root, source.name),
                    (*destination.namespace.root, destination.name),
                )
            except NoSuchNamespaceError as error:
                raise IcebergError(404, "NoSuchNamespaceException", str(error)) from error
            except NoSuchTableError as error:
                raise IcebergError(404, "NoSuchTableException", str(error)) from error
            except TableAlreadyExistsError as error:
                raise IcebergError(409, "AlreadyExistsException", str(error)) from error
        return Response(status_code=204)

    @app.get("/v1/{prefix}/namespaces/{namespace}/tables")
    def list_tables(prefix: str, namespace: str, request: Request) -> dict[str, Any]:
        catalog = state.catalog_for_prefix(prefix)
        parts = _namespace(namespace)
        with state.lock:
            _require_namespace(catalog, parts)
            identifiers = sorted(catalog.list_tables(parts))
        entries = [{"namespace": list(ident[:-1]), "name": ident[-1]} for ident in identifiers]
        page, token = _page(entries, request)
        return {"identifiers": page, "next-page-token": token}

    @app.post("/v1/{prefix}/namespaces/{namespace}/tables")
    async def create_table(prefix: str, namespace: str, request: Request) -> dict[str, Any]:
        catalog = state.catalog_for_prefix(prefix)
        parts = _namespace(namespace)
        create = await _create_table_request(request)
        with state.lock:
            _require_namespace(catalog, parts)
            try:
                table = catalog.create_table(
                    (*parts, create.name),
                    schema=create.table_schema,
                    location=create.location,
                    properties=create.properties,
                )
            except TableAlreadyExistsError as error:
                raise IcebergError(409, "AlreadyExistsException", str(error)) from error
        return _table_result(table)


def _table_item_routes(app: FastAPI, state: CatalogState) -> None:
    """Register load/commit/exists/drop of one table (`.../tables/{table}`)."""

    @app.get("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    async def load_table(
        prefix: str, namespace: str, table: str, request: Request
    ) -> dict[str, Any]:
        if state.load_delay_seconds:
            await asyncio.sleep(state.load_delay_seconds)
        result = await asyncio.to_thread(_load_table, state, prefix, namespace, table)
        header = request.headers.get(DELEGATION, "")
        return await asyncio.to_thread(_delegated, state, result, header)

    @app.post("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    async def commit_table(
        prefix: str, namespace: str, table: str, request: Request
    ) -> dict[str, Any]:
        catalog = state.catalog_for_prefix(prefix)
        identifier = (*_namespace(namespace), table)
        commit = _commit_request(identifier, await request.json())
        with state.lock:
            try:
                current = catalog.load_table(identifier)
                committed = catalog.commit_table(current, commit.requirements, commit.updates)
            except (NoSuchTableError, NoSuchNamespaceError) as error:
                raise IcebergError(404, "NoSuchTableException", str(error)) from error
            except CommitFailedException as error:
                raise IcebergError(409, "CommitFailedException", str(error)) from error
        return {
            "metadata-location": committed.metadata_location,
            "metadata": json.loads(committed.metadata.model_dump_json()),
        }

    @app.head("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    def table_exists(prefix: str, namespace: str, table: str) -> Response:
        _load_table(state, prefix, namespace, table)
        return Response(status_code=204)

    @app.delete("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    def drop_table(
        prefix: str, namespace: str, table: str, purge: bool = Query(False, alias="purgeRequested")
    ) -> Response:
        catalog = state.catalog_for_prefix(prefix)
        identifier = (*_namespace(namespace), table)
        with state.lock:
            try:
                if purge:
                    catalog.purge_table(identifier)
                else:
                    catalog.drop_table(identifier)
            except NoSuchTableError as error:
                raise IcebergError(404, "NoSuchTableException", str(error)) from error
        return Response(status_code=204)


def _namespace_request(body: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """The namespace and properties of a CreateNamespaceRequest."""
    namespace = tuple(body.get("namespace") or ())
    properties = body.get("properties") or {}
    if not namespace or not all(isinstance(part, str) and part for part in namespace):
        raise IcebergError(400, "BadRequestException", "namespace must be non-empty")
    return namespace, properties


def _rename_request(body: Any) -> tuple[TableIdentifier, TableIdentifier]:
    """The source and destination of a RenameTableRequest."""
    try:
        source = TableIdentifier.model_validate(body["source"])
        destination = TableIdentifier.model_validate(body["destination"])
    except (KeyError, TypeError, ValueError) as error:
        message = f"bad rename request: {error}"
        raise IcebergError(400, "BadRequestException", message) from error
    return source, destination


async def _create_table_request(request: Request) -> CreateTableRequest:
    """The CreateTableRequest in `request`'s body; unreadable JSON is a 400 as well."""
    try:
        # location, partition-spec and write-order are optional in the protocol,
        # not in pyiceberg's model.
        body = {
            "location": None,
            "partition-spec": None,
            "write-order": None,
            **(await request.json()),
        }
        return CreateTableRequest.model_validate(body)
    except ValueError as error:
        raise IcebergError(400, "BadRequestException", str(error)) from error


def _commit_request(identifier: tuple[str, ...], body: Any) -> CommitTableRequest:
    """The CommitTableRequest for the table `identifier` (namespace parts, then name)."""
    try:
        # The identifier is optional for a single table's commit, not in pyiceberg's model;
        # an unknown update or requirement fails validation: 400, as the spec requires.
        path_identifier = {"namespace": list(identifier[:-1]), "name": identifier[-1]}
        return CommitTableRequest.model_validate({"identifier": path_identifier, **body})
    except (TypeError, ValueError) as error:
        raise IcebergError(400, "BadRequestException", str(error)) from error


def _load_table(state: CatalogState, prefix: str, namespace: str, table: str) -> dict[str, Any]:
    catalog = state.catalog_for_prefix(prefix)
    identifier = (*_namespace(namespace), table)
    with state.lock:
        try:
            return _table_result(catalog.load_table(identifier))
        except (NoSuchTableError, NoSuchNamespaceError) as error:
            raise IcebergError(404, "NoSuchTableException", str(error)) from error


def _property_changes(body: Any) -> tuple[list[str], dict[str, str]]:
    """The removals and updates of an UpdateNamespacePropertiesRequest."""
    if not isinstance(body, dict):
        raise IcebergError(400, "BadRequestException", "the request body must be an object")
    removals, updates = body.get("removals") or [], body.get("updates") or {}
    if not isinstance(removals, list) or not all(isinstance(key, str) for key in removals):
        raise IcebergError(400, "BadRequestException", "removals must be a list of strings")
    if not isinstance(updates, dict) or not all(
        isinstance(value, str) for value in updates.values()
    ):
        raise IcebergError(400, "BadRequestException", "updates must map strings to strings")
    if set(removals) & set(updates):
        raise IcebergError(
            422, "UnprocessableEntityException", "a key is both in removals and updates"
        )
    return removals, updates


def _require_namespace(catalog: SqlCatalog, namespace: tuple[str, ...]) -> dict[str, str]:
    try:
        properties = catalog.load_namespace_properties(namespace)
    except NoSuchNamespaceError as error:
        raise IcebergError(404, "NoSuchNamespaceException", str(error)) from error
    # SqlCatalog marks a namespace created without properties with exists=true.
    return {key: value for key, value in properties.items() if key != "exists"}


@contextmanager
def running_iceberg_stand_in(
    workdir: Path, warehouses: tuple[str, ...] = ("wh", "other"), grants: Grants | None = None,
    io_properties: dict[str, str] | None = None,
) -> Iterator[IcebergStandIn]:
    """Start the stand-in on 127.0.0.1 (free port) and yield it. With `grants` it vends
    credentials; `io_properties` configure its FileIO (e.g. S3 for tables on S3)."""
    control = StandInControl()
    state = CatalogState(workdir, warehouses, grants, io_properties)
    with serve(build_app(state, control)) as url:
        yield IcebergStandIn(url, control, state)


@pytest.fixture(scope="module")
def iceberg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergStandIn]:
    """An Iceberg fault injector for the test module, its warehouse in a fresh directory."""
    with running_iceberg_stand_in(tmp_path_factory.mktemp("iceberg")) as stand_in:
        yield stand_in
