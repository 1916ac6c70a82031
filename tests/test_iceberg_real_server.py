"""The iceberg backend on Apache Iceberg's REST reference server (the session's, see
`tests/support/iceberg_rest_server.py`), called directly from Python, with pyiceberg's official
`RestCatalog` reading back what the backend wrote through the server, and the other way round.

The reference server is one catalog at `/v1/...` (its `/v1/config` announces no prefix), a
`JdbcCatalog` on SQLite: every warehouse name reaches that one catalog, so tests keep apart by
fresh namespace names. The catalog adds its own properties (a namespace's default `location`, a
table's write defaults); tests compare what callers set without them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceExistsRequest,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    RegisterTableRequest,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from backends.guard import GuardedNamespace
from backends.iceberg import IcebergNamespace
from tests.support.common import unique
from tests.support.iceberg_rest_server import IcebergRestServer
from tests.support.lance_data import write_ids

# What the reference server's JdbcCatalog adds to what a client sets.
CATALOG_DEFAULTS = {"location", "write.parquet.compression-codec"}


def set_by_callers(properties: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in properties.items() if key not in CATALOG_DEFAULTS}


@pytest.fixture
def ns(iceberg_rest_server: IcebergRestServer, tmp_path: Path) -> Iterator[IcebergNamespace]:
    namespace = IcebergNamespace(
        endpoint=iceberg_rest_server.url, root=str(tmp_path / "root"),
        **{"client.read-timeout-ms": "15000"},
    )
    yield namespace
    namespace.close()


@pytest.fixture
def catalog(iceberg_rest_server: IcebergRestServer) -> RestCatalog:
    """pyiceberg, the official Iceberg client, on the same server."""
    return RestCatalog("official", uri=iceberg_rest_server.url, warehouse="wh")


@pytest.fixture
def db(ns: IcebergNamespace) -> list[str]:
    """A fresh namespace in warehouse `wh` for one test."""
    identifier = ["wh", unique("db")]
    ns.create_namespace(CreateNamespaceRequest(id=identifier))
    return identifier


# The server itself


def test_the_server_is_one_catalog_without_a_prefix(iceberg_rest_server: IcebergRestServer) -> None:
    """Why the backend must follow the spec's absent prefix: there is no `/v1/<warehouse>/`."""
    config = httpx.get(f"{iceberg_rest_server.url}/v1/config", params={"warehouse": "wh"}).json()
    assert "prefix" not in config["defaults"] and "prefix" not in config["overrides"]
    assert httpx.get(f"{iceberg_rest_server.url}/v1/wh/namespaces").status_code == 400
    assert httpx.get(f"{iceberg_rest_server.url}/v1/namespaces").status_code == 200


def test_a_catalog_announcing_no_prefix_is_called_at_v1(
    ns: IcebergNamespace, catalog: RestCatalog
) -> None:
    """Defect: the backend used the warehouse name as the prefix when none was announced,
    so every call to the reference server failed ("No route for request: GET v1/wh/...")."""
    name = unique("top")
    ns.create_namespace(CreateNamespaceRequest(id=["wh", name], properties={"k": "v"}))
    assert (name,) in catalog.list_namespaces()
    assert set_by_callers(catalog.load_namespace_properties(name)) == {"k": "v"}
    assert name in ns.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces


def test_a_credential_gets_its_token_from_the_servers_token_endpoint(
    iceberg_rest_server: IcebergRestServer, db: list[str]
) -> None:
    """The server's token answer (no `expires_in`) is one the OAuth2 flow takes; it issues a
    token to any client, so refusals and expiry are tested on the stand-in."""
    with_credential = IcebergNamespace(endpoint=iceberg_rest_server.url, credential="c:s")
    described = with_credential.describe_namespace(DescribeNamespaceRequest(id=db))
    assert described.properties["location"].endswith(f"/warehouse/{db[1]}")
    with_credential.close()


# pyiceberg reads what the backend wrote, and the other way round


def test_pyiceberg_sees_lance_tables_as_iceberg_tables(
    ns: IcebergNamespace, catalog: RestCatalog, db: list[str], tmp_path: Path
) -> None:
    declared = ns.declare_table(DeclareTableRequest(id=[*db, "declared"], properties={"k": "v"}))
    existing = str(tmp_path / "existing")
    write_ids(existing)
    ns.register_table(RegisterTableRequest(id=[*db, "registered"], location=existing))

    assert sorted(catalog.list_tables(db[1])) == [(db[1], "declared"), (db[1], "registered")]
    for name, location in (("declared", declared.location), ("registered", existing)):
        table = catalog.load_table((db[1], name))
        assert [field.name for field in table.schema().fields] == ["dummy"]
        assert isinstance(table.schema().find_field("dummy").field_type, StringType)
        assert not table.schema().find_field("dummy").required
        assert table.properties["table_type"] == "lance"
        assert table.location() == location
        # The server keeps its metadata inside the Lance table's folder, where Lance ignores it.
        assert table.metadata_location.startswith(f"{location}/metadata/")
    assert catalog.load_table((db[1], "declared")).properties["k"] == "v"
    assert lance.dataset(existing).count_rows() == 3


def test_backend_sees_what_pyiceberg_created(
    ns: IcebergNamespace, catalog: RestCatalog, tmp_path: Path
) -> None:
    name = unique("made_by_pyiceberg")
    catalog.create_namespace(name, {"owner": "iceberg"})
    catalog.create_namespace((name, "child"))
    schema = Schema(NestedField(1, "n", LongType(), required=True))
    catalog.create_table((name, "plain_iceberg"), schema)
    lance_location = str(tmp_path / "lance_by_pyiceberg")
    write_ids(lance_location, rows=4)
    dummy = Schema(NestedField(1, "dummy", StringType(), required=False))
    catalog.create_table((name, "marked"), dummy, location=lance_location,
                         properties={"table_type": "LANCE"})

    assert name in ns.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces
    assert ns.list_namespaces(ListNamespacesRequest(id=["wh", name])).namespaces == ["child"]
    described = ns.describe_namespace(DescribeNamespaceRequest(id=["wh", name]))
    assert set_by_callers(described.properties) == {"owner": "iceberg"}
    # A table marked `table_type=lance` (any case) is a Lance table; a plain one is not.
    assert ns.list_tables(ListTablesRequest(id=["wh", name])).tables == ["marked"]
    marked = ns.describe_table(DescribeTableRequest(id=["wh", name, "marked"]))
    assert marked.location == lance_location
    assert lance.dataset(marked.location).count_rows() == 4
    with pytest.raises(
        InvalidInputError, match=rf"table wh\.{name}\.plain_iceberg is not a Lance table"
    ):
        ns.describe_table(DescribeTableRequest(id=["wh", name, "plain_iceberg"]))
    with pytest.raises(
        InvalidInputError, match=rf"table wh\.{name}\.plain_iceberg is not a Lance table"
    ):
        ns.deregister_table(DeregisterTableRequest(id=["wh", name, "plain_iceberg"]))
    assert catalog.table_exists((name, "plain_iceberg"))


def test_deregister_keeps_the_data_and_the_iceberg_metadata(
    ns: IcebergNamespace, catalog: RestCatalog, db: list[str], tmp_path: Path
) -> None:
    declared = ns.declare_table(DeclareTableRequest(id=[*db, "t1"], properties={"owner": "me"}))
    expected_location = f"{tmp_path}/root/wh/{db[1]}/t1"
    assert declared.location == expected_location
    assert set_by_callers(declared.properties) == {"owner": "me", "table_type": "lance"}
    metadata = Path(catalog.load_table((db[1], "t1")).metadata_location)
    described = ns.describe_table(DescribeTableRequest(id=[*db, "t1"]))
    assert described.location == expected_location
    assert described.version is None and described.var_schema is None
    ns.table_exists(TableExistsRequest(id=[*db, "t1"]))

    write_ids(expected_location)
    deregistered = ns.deregister_table(DeregisterTableRequest(id=[*db, "t1"]))
    assert deregistered.location == expected_location
    with pytest.raises(NoSuchTableError, match=rf"Table does not exist: {db[1]}\.t1"):
        catalog.load_table((db[1], "t1"))
    with pytest.raises(TableNotFoundError, match=rf"Table does not exist: {db[1]}\.t1"):
        ns.describe_table(DescribeTableRequest(id=[*db, "t1"]))
    assert lance.dataset(expected_location).count_rows() == 3  # data stays
    # Not purged (purgeRequested=false): the server deletes no file of the table.
    assert json.loads(metadata.read_text())["location"] == expected_location


# Namespaces


def test_namespace_lifecycle_with_nesting_and_properties(
    ns: IcebergNamespace, catalog: RestCatalog
) -> None:
    top = ["wh", unique("top")]
    created = ns.create_namespace(CreateNamespaceRequest(id=top, properties={"a": "1"}))
    assert set_by_callers(created.properties) == {"a": "1"}
    ns.create_namespace(CreateNamespaceRequest(id=[*top, "mid"]))
    ns.create_namespace(CreateNamespaceRequest(id=[*top, "mid", "leaf"], properties={"b": "2"}))

    assert ns.list_namespaces(ListNamespacesRequest(id=top)).namespaces == ["mid"]
    leaf = [*top, "mid", "leaf"]
    assert ns.list_namespaces(ListNamespacesRequest(id=[*top, "mid"])).namespaces == ["leaf"]
    leaf_properties = ns.describe_namespace(DescribeNamespaceRequest(id=leaf)).properties
    assert set_by_callers(leaf_properties) == {"b": "2"}
    assert catalog.list_namespaces((top[1], "mid")) == [(top[1], "mid", "leaf")]
    ns.namespace_exists(NamespaceExistsRequest(id=leaf))

    ns.drop_namespace(DropNamespaceRequest(id=leaf))
    with pytest.raises(
        NamespaceNotFoundError, match=rf"Namespace does not exist: {top[1]}\.mid\.leaf"
    ):
        ns.namespace_exists(NamespaceExistsRequest(id=leaf))
    ns.drop_namespace(DropNamespaceRequest(id=[*top, "mid"]))
    ns.drop_namespace(DropNamespaceRequest(id=top))
    assert top[1] not in ns.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces


def test_a_namespace_with_child_namespaces_is_not_dropped(
    ns: IcebergNamespace, catalog: RestCatalog, db: list[str]
) -> None:
    """Defect: the reference server drops a namespace that holds namespaces (RESTRICT asks for
    NamespaceNotEmpty) and leaves the children behind; the backend dropped it."""
    ns.create_namespace(CreateNamespaceRequest(id=[*db, "child"]))
    with pytest.raises(NamespaceNotEmptyError, match=f"namespace wh.{db[1]} holds namespaces"):
        ns.drop_namespace(DropNamespaceRequest(id=db))
    with pytest.raises(NamespaceNotEmptyError, match=f"namespace wh.{db[1]} holds namespaces"):
        ns.drop_namespace(DropNamespaceRequest(id=db, mode="Skip"))
    assert (db[1],) in catalog.list_namespaces()
    assert catalog.list_namespaces(db[1]) == [(db[1], "child")]


def test_a_child_of_a_missing_namespace_is_not_created(
    ns: IcebergNamespace, catalog: RestCatalog
) -> None:
    """Defect: the reference server creates `a.b` when `a` does not exist, and `a` then seems
    to exist; the backend passed that on instead of NamespaceNotFound."""
    parent = unique("no_parent")
    with pytest.raises(NamespaceNotFoundError, match=f"Namespace does not exist: {parent}"):
        ns.create_namespace(CreateNamespaceRequest(id=["wh", parent, "child"]))
    with pytest.raises(NoSuchNamespaceError, match=f"Namespace does not exist: {parent}.child"):
        catalog.load_namespace_properties((parent, "child"))
    assert (parent,) not in catalog.list_namespaces()


def test_a_table_in_a_missing_namespace_is_not_created(
    ns: IcebergNamespace, catalog: RestCatalog, tmp_path: Path
) -> None:
    """Defect: the reference server creates a table in a namespace that does not exist (which
    then seems to exist); the backend declared and registered it instead of NamespaceNotFound."""
    missing = unique("missing")
    existing = str(tmp_path / "existing")
    write_ids(existing)
    with pytest.raises(NamespaceNotFoundError, match=f"Namespace does not exist: {missing}"):
        ns.declare_table(DeclareTableRequest(id=["wh", missing, "t"]))
    with pytest.raises(NamespaceNotFoundError, match=f"Namespace does not exist: {missing}"):
        ns.register_table(RegisterTableRequest(id=["wh", missing, "r"], location=existing))
    assert (missing,) not in catalog.list_namespaces()
    with pytest.raises(NamespaceNotFoundError, match=f"Namespace does not exist: {missing}"):
        ns.list_tables(ListTablesRequest(id=["wh", missing]))


def test_missing_namespaces(ns: IcebergNamespace) -> None:
    missing = ["wh", unique("missing")]
    with pytest.raises(NamespaceNotFoundError, match=f"Namespace does not exist: {missing[1]}"):
        ns.describe_namespace(DescribeNamespaceRequest(id=missing))
    with pytest.raises(NamespaceNotFoundError, match=f"Namespace does not exist: {missing[1]}"):
        ns.list_namespaces(ListNamespacesRequest(id=missing))
    with pytest.raises(NamespaceNotFoundError, match=f"Namespace does not exist: {missing[1]}"):
        ns.list_tables(ListTablesRequest(id=missing))
    ns.namespace_exists(NamespaceExistsRequest(id=["wh"]))


def test_drop_namespace_fails_or_skips_when_missing_and_is_restrict_only(
    ns: IcebergNamespace, db: list[str]
) -> None:
    ns.declare_table(DeclareTableRequest(id=[*db, "t"]))
    with pytest.raises(NamespaceNotEmptyError, match=f"Namespace {db[1]} is not empty"):
        ns.drop_namespace(DropNamespaceRequest(id=db))
    with pytest.raises(
        UnsupportedOperationError, match="the iceberg backend only drops namespaces RESTRICT"
    ):
        ns.drop_namespace(DropNamespaceRequest(id=db, behavior="Cascade"))
    ns.deregister_table(DeregisterTableRequest(id=[*db, "t"]))
    ns.drop_namespace(DropNamespaceRequest(id=db))
    with pytest.raises(
        NamespaceNotFoundError, match=f"Namespace does not exist: {db[1]}"
    ):  # already gone: Fail, the default
        ns.drop_namespace(DropNamespaceRequest(id=db))
    with pytest.raises(NamespaceNotFoundError, match="Namespace does not exist: never_"):
        ns.drop_namespace(DropNamespaceRequest(id=["wh", unique("never")], mode="Fail"))
    ns.drop_namespace(DropNamespaceRequest(id=db, mode="Skip"))


def test_root_and_warehouse_levels(ns: IcebergNamespace) -> None:
    assert ns.describe_namespace(DescribeNamespaceRequest(id=[])).properties == {}
    ns.namespace_exists(NamespaceExistsRequest(id=[]))
    with pytest.raises(
        UnsupportedOperationError, match="cannot list warehouses; list a warehouse instead"
    ):
        ns.list_namespaces(ListNamespacesRequest(id=[]))
    with pytest.raises(
        UnsupportedOperationError, match="warehouses are created in the catalog, not here"
    ):
        ns.create_namespace(CreateNamespaceRequest(id=["new_warehouse"]))
    with pytest.raises(
        UnsupportedOperationError, match="warehouses are dropped in the catalog, not here"
    ):
        ns.drop_namespace(DropNamespaceRequest(id=["wh"]))
    with pytest.raises(InvalidInputError, match="tables live in a namespace under the warehouse"):
        ns.list_tables(ListTablesRequest(id=["wh"]))


# Tables


def test_declare_with_location_and_nested_default_location(
    ns: IcebergNamespace, db: list[str], tmp_path: Path
) -> None:
    explicit = str(tmp_path / "elsewhere" / "t")
    assert (
        ns.declare_table(DeclareTableRequest(id=[*db, "t"], location=explicit)).location == explicit
    )
    ns.create_namespace(CreateNamespaceRequest(id=[*db, "inner"]))
    nested = ns.declare_table(DeclareTableRequest(id=[*db, "inner", "t"]))
    assert nested.location == f"{tmp_path}/root/wh/{db[1]}/inner/t"


def test_table_errors(ns: IcebergNamespace, db: list[str]) -> None:
    ns.declare_table(DeclareTableRequest(id=[*db, "t"]))
    with pytest.raises(TableAlreadyExistsError, match=rf"Table already exists: {db[1]}\.t"):
        ns.declare_table(DeclareTableRequest(id=[*db, "t"]))
    with pytest.raises(TableNotFoundError, match=rf"Table does not exist: {db[1]}\.missing"):
        ns.describe_table(DescribeTableRequest(id=[*db, "missing"]))
    with pytest.raises(TableNotFoundError, match=rf"Table does not exist: {db[1]}\.missing"):
        ns.table_exists(TableExistsRequest(id=[*db, "missing"]))
    with pytest.raises(TableNotFoundError, match=rf"Table does not exist: {db[1]}\.missing"):
        ns.deregister_table(DeregisterTableRequest(id=[*db, "missing"]))


def test_register_existing_lance_table(
    ns: IcebergNamespace, catalog: RestCatalog, db: list[str], tmp_path: Path
) -> None:
    location = str(tmp_path / "data" / "existing")
    write_ids(location, rows=5)
    registered = ns.register_table(
        RegisterTableRequest(id=[*db, "r"], location=location, properties={"p": "q"})
    )
    assert registered.location == location
    assert set_by_callers(registered.properties) == {"p": "q", "table_type": "lance"}
    assert ns.describe_table(DescribeTableRequest(id=[*db, "r"])).location == location
    with pytest.raises(TableAlreadyExistsError, match=rf"Table already exists: {db[1]}\.r"):
        ns.register_table(RegisterTableRequest(id=[*db, "r"], location=location))
    moved = str(tmp_path / "data" / "moved")
    write_ids(moved)
    ns.register_table(RegisterTableRequest(id=[*db, "r"], location=moved, mode="overwrite"))
    assert ns.describe_table(DescribeTableRequest(id=[*db, "r"])).location == moved
    assert catalog.load_table((db[1], "r")).location() == moved
    with pytest.raises(
        InvalidInputError, match="no Lance table at " + re.escape(str(tmp_path / "nothing"))
    ):
        ns.register_table(RegisterTableRequest(id=[*db, "x"], location=str(tmp_path / "nothing")))
    assert ns.list_tables(ListTablesRequest(id=db)).tables == ["r"]


@pytest.mark.parametrize(
    ("identifier", "why"),
    [
        (["wh", "db/x", "t"], "identifier part 'db/x' must not contain '/'"),
        (["wh", "db", ".."], r"identifier part must not be '\.\.'"),
        (["wh", "t"], r"table identifier is \[warehouse, namespace\.\.\., table\]"),
        ([], "table identifier must not be empty"),
        (["wh", "", "t"], "identifier part must not be empty"),
        (["wh", "d", "a\x00"], "must not contain control or format characters"),
    ],
)
def test_bad_table_identifiers_are_invalid_input(
    ns: IcebergNamespace, identifier: list[str], why: str
) -> None:
    # Names are validated by the guard the server puts every loaded backend behind.
    ns = GuardedNamespace(ns)
    with pytest.raises(InvalidInputError, match=why):
        ns.declare_table(DeclareTableRequest(id=identifier))
    with pytest.raises(InvalidInputError, match=why):
        ns.describe_table(DescribeTableRequest(id=identifier))


def test_bad_namespace_identifier_is_invalid_input(ns: IcebergNamespace) -> None:
    # Names are validated by the guard the server puts every loaded backend behind.
    ns = GuardedNamespace(ns)
    with pytest.raises(
        InvalidInputError, match=r"identifier part 'a\\\\b' must not contain '\\\\'"
    ):
        ns.create_namespace(CreateNamespaceRequest(id=["wh", "a\\b"]))
    with pytest.raises(InvalidInputError, match="identifier part is longer than 256 characters"):
        ns.list_namespaces(ListNamespacesRequest(id=["wh", "x" * 300]))

