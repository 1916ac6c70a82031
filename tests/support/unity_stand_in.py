"""A stand-in for Unity Catalog (none is installable here): the catalogs/schemas/tables part of
`api/all.yaml`, and `temporary-table-credentials` when it is given `grants` (credential vending).

Request bodies are validated with the official `unitycatalog-client` models, errors have Unity's
shape (`error_code`, `message`, HTTP status per Unity's ErrorCode), names follow Unity's rule,
and listings are paged with `max_results`/`page_token`. The tests drive it with the official SDK
to prove it speaks the protocol. State is kept in memory.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError
from unitycatalog.client.models import (
    AwsCredentials,
    CatalogInfo,
    CreateCatalog,
    CreateSchema,
    CreateTable,
    GenerateTemporaryTableCredential,
    SchemaInfo,
    TableInfo,
    TableOperation,
    TemporaryCredentials,
    UpdateCatalog,
    UpdateSchema,
)

from tests.support.rest_catalog_stand_in import Grants, StandInControl, install_control, serve

API = "/api/2.1/unity-catalog"
NAME = re.compile(r"[A-Za-z0-9_@-]{1,255}")


class UnityError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_body(status: int, code: str, message: str) -> dict[str, Any]:
    return {"error_code": code, "message": message, "details": []}


def not_found(message: str) -> UnityError:
    return UnityError(404, "NOT_FOUND", message)


@dataclass
class UnityState:
    catalogs: dict[str, dict[str, Any]] = field(default_factory=dict)
    schemas: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    tables: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    page_cap: int = 3  # the server never returns more per page, whatever max_results says
    legacy_already_exists: bool = False  # 409 ALREADY_EXISTS instead of 400 <KIND>_ALREADY_EXISTS
    grants: Grants | None = None  # None: no AWS credentials vended (as for local paths)
    credential_requests: list[tuple[str, str]] = field(default_factory=list)  # (table_id, op)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def already_exists(self, kind: str, message: str) -> UnityError:
        if self.legacy_already_exists:
            return UnityError(409, "ALREADY_EXISTS", message)
        return UnityError(400, f"{kind}_ALREADY_EXISTS", message)


@dataclass
class UnityStandIn:
    url: str
    control: StandInControl
    state: UnityState


def _check_name(name: str) -> None:
    if not NAME.fullmatch(name):
        raise UnityError(
            400,
            "INVALID_ARGUMENT",
            "Name cannot contain a period, space, forward-slash, or control characters",
        )


def _parse(model: type[BaseModel], body: Any) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise UnityError(400, "INVALID_ARGUMENT", str(error)) from error


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


def _page(items: list[dict[str, Any]], request: Request, cap: int) -> tuple[list[Any], Any]:
    """Sorted by name; the token is the last name returned."""
    ordered = sorted(items, key=lambda item: item["name"])
    token = request.query_params.get("page_token")
    if token:
        ordered = [item for item in ordered if item["name"] > token]
    requested = int(request.query_params.get("max_results") or cap)
    size = min(requested, cap) if requested > 0 else cap
    page = ordered[:size]
    return page, (page[-1]["name"] if len(ordered) > size else None)


def _apply_update(info: dict[str, Any], update: UpdateCatalog | UpdateSchema) -> None:
    """Unity's update rules: a comment replaces the comment, a non-empty properties map
    replaces the whole map (an empty one changes nothing)."""
    if update.comment is not None:
        info["comment"] = update.comment
    if update.properties:
        info["properties"] = dict(update.properties)
    info["updated_at"], info["updated_by"] = int(time.time() * 1000), "fixture"


def _audit() -> dict[str, Any]:
    now = int(time.time() * 1000)
    return {"created_at": now, "updated_at": now, "owner": "fixture", "created_by": "fixture"}


def _require_catalog(state: UnityState, name: str) -> dict[str, Any]:
    """The stored CatalogInfo of `name`, or Unity's 404; call with `state.lock` held."""
    if name not in state.catalogs:
        raise not_found(f"Catalog not found: {name}")
    return state.catalogs[name]


def _require_schema(state: UnityState, catalog: str, schema: str) -> dict[str, Any]:
    """The stored SchemaInfo of `catalog.schema` (its catalog first), or Unity's 404."""
    _require_catalog(state, catalog)
    if (catalog, schema) not in state.schemas:
        raise not_found(f"Schema not found: {catalog}.{schema}")
    return state.schemas[(catalog, schema)]


def _split(full_name: str, levels: int) -> list[str]:
    """The parts of a dotted full name, which must have exactly `levels` of them."""
    parts = full_name.split(".")
    if len(parts) != levels:
        raise UnityError(400, "INVALID_ARGUMENT", f"Invalid full name: {full_name}")
    return parts


def _rename_catalog(state: UnityState, name: str, new_name: str) -> None:
    """Move a catalog and re-key its schemas and tables; call with `state.lock` held."""
    state.catalogs[new_name] = {**state.catalogs.pop(name), "name": new_name}
    for catalog, schema in [key for key in state.schemas if key[0] == name]:
        moved = state.schemas.pop((catalog, schema))
        moved |= {"catalog_name": new_name, "full_name": f"{new_name}.{schema}"}
        state.schemas[(new_name, schema)] = moved
    for catalog, schema, table in [key for key in state.tables if key[0] == name]:
        state.tables[(new_name, schema, table)] = {
            **state.tables.pop((catalog, schema, table)),
            "catalog_name": new_name,
        }


def _rename_schema(state: UnityState, catalog: str, schema: str, new_name: str) -> None:
    """Move a schema and re-key its tables; call with `state.lock` held."""
    moved = state.schemas.pop((catalog, schema))
    moved |= {"name": new_name, "full_name": f"{catalog}.{new_name}"}
    state.schemas[(catalog, new_name)] = moved
    for key in [key for key in state.tables if key[:2] == (catalog, schema)]:
        state.tables[(catalog, new_name, key[2])] = {
            **state.tables.pop(key),
            "schema_name": new_name,
        }


def build_app(state: UnityState, control: StandInControl) -> FastAPI:
    """The stand-in's app: control hooks, Unity's error shape, then catalogs, schemas, tables."""
    app = FastAPI()
    install_control(app, control, error_body, open_paths=())

    @app.exception_handler(UnityError)
    async def unity_error(_: Request, error: UnityError) -> JSONResponse:
        return JSONResponse(error_body(error.status, error.code, error.message), error.status)

    _catalog_routes(app, state)
    _schema_routes(app, state)
    _table_routes(app, state)
    return app


def _catalog_routes(app: FastAPI, state: UnityState) -> None:
    """Register create/list/get/update/delete of catalogs."""

    @app.post(f"{API}/catalogs")
    async def create_catalog(request: Request) -> dict[str, Any]:
        create = _parse(CreateCatalog, await request.json())
        _check_name(create.name)
        with state.lock:
            if create.name in state.catalogs:
                raise state.already_exists("CATALOG", f"Catalog already exists: {create.name}")
            info = CatalogInfo(**create.model_dump(), id=str(uuid.uuid4()), **_audit())
            state.catalogs[create.name] = _dump(info)
            return state.catalogs[create.name]

    @app.get(f"{API}/catalogs")
    def list_catalogs(request: Request) -> dict[str, Any]:
        with state.lock:
            page, token = _page(list(state.catalogs.values()), request, state.page_cap)
        return {"catalogs": page, "next_page_token": token}

    @app.get(f"{API}/catalogs/{{name}}")
    def get_catalog(name: str) -> dict[str, Any]:
        with state.lock:
            return _require_catalog(state, name)

    @app.patch(f"{API}/catalogs/{{name}}")
    async def update_catalog(name: str, request: Request) -> dict[str, Any]:
        update = _parse(UpdateCatalog, await request.json())
        if update.new_name is not None:
            _check_name(update.new_name)
        with state.lock:
            info = _require_catalog(state, name)
            new_name = update.new_name or name
            if new_name != name and new_name in state.catalogs:
                raise state.already_exists("CATALOG", f"Catalog already exists: {new_name}")
            _apply_update(info, update)
            if new_name != name:
                _rename_catalog(state, name, new_name)
            return state.catalogs[new_name]

    @app.delete(f"{API}/catalogs/{{name}}")
    def delete_catalog(name: str, force: bool = False) -> dict[str, Any]:
        with state.lock:
            _require_catalog(state, name)
            children = [key for key in state.schemas if key[0] == name]
            if children and not force:
                raise UnityError(400, "FAILED_PRECONDITION", "Cannot delete catalog with schemas")
            for key in children:
                del state.schemas[key]
            for key in [key for key in state.tables if key[0] == name]:
                del state.tables[key]
            del state.catalogs[name]
        return {}


def _schema_routes(app: FastAPI, state: UnityState) -> None:
    """Register create/list/get/update/delete of schemas (full name `catalog.schema`)."""

    @app.post(f"{API}/schemas")
    async def create_schema(request: Request) -> dict[str, Any]:
        create = _parse(CreateSchema, await request.json())
        _check_name(create.name)
        with state.lock:
            _require_catalog(state, create.catalog_name)
            key = (create.catalog_name, create.name)
            if key in state.schemas:
                raise state.already_exists("SCHEMA", f"Schema already exists: {create.name}")
            full_name = f"{create.catalog_name}.{create.name}"
            info = SchemaInfo(
                **create.model_dump(), full_name=full_name, schema_id=str(uuid.uuid4()), **_audit()
            )
            state.schemas[key] = _dump(info)
            return state.schemas[key]

    @app.get(f"{API}/schemas")
    def list_schemas(request: Request, catalog_name: str) -> dict[str, Any]:
        with state.lock:
            _require_catalog(state, catalog_name)
            schemas = [info for key, info in state.schemas.items() if key[0] == catalog_name]
            page, token = _page(schemas, request, state.page_cap)
        return {"schemas": page, "next_page_token": token}

    @app.get(f"{API}/schemas/{{full_name}}")
    def get_schema(full_name: str) -> dict[str, Any]:
        catalog, schema = _split(full_name, 2)
        with state.lock:
            return _require_schema(state, catalog, schema)

    @app.patch(f"{API}/schemas/{{full_name}}")
    async def update_schema(full_name: str, request: Request) -> dict[str, Any]:
        catalog, schema = _split(full_name, 2)
        update = _parse(UpdateSchema, await request.json())
        if update.new_name is not None:
            _check_name(update.new_name)
        with state.lock:
            info = _require_schema(state, catalog, schema)
            new_name = update.new_name or schema
            if new_name != schema and (catalog, new_name) in state.schemas:
                raise state.already_exists("SCHEMA", f"Schema already exists: {new_name}")
            _apply_update(info, update)
            if new_name != schema:
                _rename_schema(state, catalog, schema, new_name)
            return state.schemas[(catalog, new_name)]

    @app.delete(f"{API}/schemas/{{full_name}}")
    def delete_schema(full_name: str, force: bool = False) -> dict[str, Any]:
        catalog, schema = _split(full_name, 2)
        with state.lock:
            _require_schema(state, catalog, schema)
            tables = [key for key in state.tables if key[:2] == (catalog, schema)]
            if tables and not force:
                raise UnityError(400, "FAILED_PRECONDITION", "Cannot delete schema with tables")
            for key in tables:
                del state.tables[key]
            del state.schemas[(catalog, schema)]
        return {}


def _table_routes(app: FastAPI, state: UnityState) -> None:
    """Register create/list/get/delete of tables and temporary-table-credentials."""

    @app.post(f"{API}/tables")
    async def create_table(request: Request) -> dict[str, Any]:
        create = _parse(CreateTable, await request.json())
        _check_name(create.name)
        if create.table_type.value == "EXTERNAL" and not create.storage_location:
            raise UnityError(400, "INVALID_ARGUMENT", "External table requires storage_location")
        with state.lock:
            _require_schema(state, create.catalog_name, create.schema_name)
            key = (create.catalog_name, create.schema_name, create.name)
            if key in state.tables:
                raise state.already_exists("TABLE", f"Table already exists: {'.'.join(key)}")
            info = TableInfo(**create.model_dump(), table_id=str(uuid.uuid4()), **_audit())
            state.tables[key] = _dump(info)
            return state.tables[key]

    @app.get(f"{API}/tables")
    def list_tables(request: Request, catalog_name: str, schema_name: str) -> dict[str, Any]:
        with state.lock:
            _require_schema(state, catalog_name, schema_name)
            tables = [
                info for key, info in state.tables.items() if key[:2] == (catalog_name, schema_name)
            ]
            page, token = _page(tables, request, state.page_cap)
        return {"tables": page, "next_page_token": token}

    @app.get(f"{API}/tables/{{full_name}}")
    def get_table(full_name: str) -> dict[str, Any]:
        key = tuple(_split(full_name, 3))
        with state.lock:
            if key not in state.tables:
                raise not_found(f"Table not found: {full_name}")
            return state.tables[key]

    @app.post(f"{API}/temporary-table-credentials")
    async def temporary_table_credentials(request: Request) -> dict[str, Any]:
        asked = _parse(GenerateTemporaryTableCredential, await request.json())
        with state.lock:
            found = [info for info in state.tables.values() if info["table_id"] == asked.table_id]
            state.credential_requests.append((asked.table_id, asked.operation.value))
        if not found:
            raise not_found(f"Table not found: {asked.table_id}")
        return temporary_credentials(state, found[0]["storage_location"], asked.operation)

    @app.delete(f"{API}/tables/{{full_name}}")
    def delete_table(full_name: str) -> Response:
        key = tuple(_split(full_name, 3))
        with state.lock:
            if key not in state.tables:
                raise not_found(f"Table not found: {full_name}")
            del state.tables[key]
        return JSONResponse({})


def temporary_credentials(
    state: UnityState, location: str, operation: TableOperation
) -> dict[str, Any]:
    """TemporaryCredentials of `location`: AWS ones from `grants`, or none at all."""
    if operation not in (TableOperation.READ, TableOperation.READ_WRITE):
        raise UnityError(400, "INVALID_ARGUMENT", f"unsupported operation {operation.value}")
    if state.grants is None:
        return _dump(TemporaryCredentials())
    grant = state.grants(location, operation is TableOperation.READ_WRITE)
    aws = AwsCredentials(access_key_id=grant.access_key_id,
                         secret_access_key=grant.secret_access_key,
                         session_token=grant.session_token)
    return _dump(TemporaryCredentials(aws_temp_credentials=aws,
                                      expiration_time=grant.expires_at_millis))


@contextmanager
def running_unity_stand_in(grants: Grants | None = None) -> Iterator[UnityStandIn]:
    """Start the stand-in on 127.0.0.1 (free port); its URL is the server root (no API path).
    With `grants`, temporary-table-credentials vends AWS credentials."""
    control = StandInControl()
    state = UnityState(grants=grants)
    with serve(build_app(state, control)) as url:
        yield UnityStandIn(url, control, state)


@pytest.fixture(scope="module")
def unity() -> Iterator[UnityStandIn]:
    """A Unity stand-in for the test module."""
    with running_unity_stand_in() as stand_in:
        yield stand_in
