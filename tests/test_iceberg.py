"""The iceberg backend against the Iceberg REST protocol fixture, called directly from Python.

The fixture itself is checked with pyiceberg's RestCatalog (the official client) first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import lance
import pyarrow as pa
import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    InternalError,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceAlreadyExistsError,
    NamespaceExistsRequest,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    RegisterTableRequest,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableNotFoundError,
    UnauthenticatedError,
    UnsupportedOperationError,
)
from lance_namespace_urllib3_client.models import Identity
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchNamespaceError,
    NoSuchTableError,
)
from pyiceberg.exceptions import TableAlreadyExistsError as IcebergTableExistsError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from backends.iceberg import IcebergNamespace
from backends.properties import ConfigurationError
from tests.support.common import unique
from tests.support.iceberg_stand_in import IcebergStandIn

Factory = Callable[..., IcebergNamespace]


@pytest.fixture(autouse=True)
def clean_control(iceberg: IcebergStandIn) -> Iterator[None]:
    iceberg.control.reset()
    iceberg.state.prefix_style = "overrides"
    iceberg.state.load_delay_seconds = 0.0
    yield
    iceberg.control.reset()


@pytest.fixture
def make_namespace(iceberg: IcebergStandIn, tmp_path: Path) -> Iterator[Factory]:
    created: list[IcebergNamespace] = []

    def factory(**overrides: str) -> IcebergNamespace:
        properties = {
            "endpoint": iceberg.url,
            "root": str(tmp_path / "root"),
            # Generous: a loaded machine must not time out ordinary calls.
            "client.read-timeout-ms": "15000",
        }
        namespace = IcebergNamespace(**{**properties, **overrides})
        created.append(namespace)
        return namespace

    yield factory
    for namespace in created:
        namespace.close()


@pytest.fixture
def ns(make_namespace: Factory) -> IcebergNamespace:
    return make_namespace()


@pytest.fixture
def db(ns: IcebergNamespace) -> list[str]:
    """A fresh namespace in warehouse `wh` for one test."""
    identifier = ["wh", unique("db")]
    ns.create_namespace(CreateNamespaceRequest(id=identifier))
    return identifier


def write_lance(location: str, rows: int = 3) -> None:
    lance.write_dataset(pa.table({"id": list(range(rows))}), location)


# Configuration


def test_configuration_defaults(iceberg: IcebergStandIn) -> None:
    namespace = IcebergNamespace(endpoint=iceberg.url)
    assert namespace.client.settings.connect_timeout_ms == 10_000
    assert namespace.client.settings.read_timeout_ms == 30_000
    assert namespace.client.settings.max_retries == 3
    assert namespace.root == os.getcwd()
    assert iceberg.url in namespace.namespace_id()
    namespace.close()


@pytest.mark.parametrize(
    "properties",
    [
        {},
        {"endpoint": "localhost:8181"},
        {"endpoint": "ftp://host"},
        {"endpoint": "http://h", "credential": "no-colon"},
        {"endpoint": "http://h", "credential": "id:secret", "auth_token": "t"},
        {"endpoint": "http://h", "client.max-retries": "-1"},
        {"endpoint": "http://h", "client.read-timeout-ms": "soon"},
        {"endpoint": "http://h", "client.connect-timeout-ms": "0"},
    ],
)
def test_bad_configuration_is_rejected(properties: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError):
        IcebergNamespace(**properties)


# The fixture, checked by the official client


def test_pyiceberg_sees_lance_tables_as_iceberg_tables(
    iceberg: IcebergStandIn, ns: IcebergNamespace, db: list[str], tmp_path: Path
) -> None:
    declared = ns.declare_table(DeclareTableRequest(id=[*db, "declared"], properties={"k": "v"}))
    existing = str(tmp_path / "existing")
    write_lance(existing)
    ns.register_table(RegisterTableRequest(id=[*db, "registered"], location=existing))

    catalog = RestCatalog("official", uri=iceberg.url, warehouse="wh")
    assert sorted(catalog.list_tables(db[1])) == [(db[1], "declared"), (db[1], "registered")]
    for name, location in (("declared", declared.location), ("registered", existing)):
        table = catalog.load_table((db[1], name))
        assert [field.name for field in table.schema().fields] == ["dummy"]
        assert isinstance(table.schema().find_field("dummy").field_type, StringType)
        assert not table.schema().find_field("dummy").required
        assert table.properties["table_type"] == "lance"
        assert table.location() == location
    assert catalog.load_table((db[1], "declared")).properties["k"] == "v"


def test_backend_sees_what_pyiceberg_created(iceberg: IcebergStandIn, ns: IcebergNamespace) -> None:
    catalog = RestCatalog("official", uri=iceberg.url, warehouse="wh")
    name = unique("made_by_pyiceberg")
    catalog.create_namespace(name, {"owner": "iceberg"})
    catalog.create_namespace((name, "child"))
    schema = Schema(NestedField(1, "n", LongType(), required=True))
    catalog.create_table((name, "plain_iceberg"), schema)

    assert name in ns.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces
    assert ns.list_namespaces(ListNamespacesRequest(id=["wh", name])).namespaces == ["child"]
    described = ns.describe_namespace(DescribeNamespaceRequest(id=["wh", name]))
    assert described.properties == {"owner": "iceberg"}
    # A plain Iceberg table is not a Lance table: not listed, not described, not deregistered.
    assert ns.list_tables(ListTablesRequest(id=["wh", name])).tables == []
    with pytest.raises(InvalidInputError):
        ns.describe_table(DescribeTableRequest(id=["wh", name, "plain_iceberg"]))
    with pytest.raises(InvalidInputError):
        ns.deregister_table(DeregisterTableRequest(id=["wh", name, "plain_iceberg"]))
    assert catalog.table_exists((name, "plain_iceberg"))


def test_pyiceberg_renames_tables_and_updates_namespace_and_table_properties(
    iceberg: IcebergStandIn,
) -> None:
    catalog = RestCatalog("official", uri=iceberg.url, warehouse="wh")
    source, target = (unique(side) for side in ("src", "dst"))
    catalog.create_namespace(source, {"owner": "ml", "tier": "gold"})
    catalog.create_namespace(target)
    schema = Schema(NestedField(1, "n", LongType(), required=True))
    catalog.create_table((source, "t"), schema, properties={"stale": "yes"})
    catalog.create_table((target, "taken"), schema)

    summary = catalog.update_namespace_properties(
        source, removals={"owner", "absent"}, updates={"tier": "silver"}
    )
    assert (summary.removed, summary.updated, summary.missing) == (["owner"], ["tier"], ["absent"])
    assert catalog.load_namespace_properties(source) == {"tier": "silver"}
    catalog.update_namespace_properties(source, removals={"tier"})
    assert catalog.load_namespace_properties(source) == {}  # the namespace outlives its properties
    with pytest.raises(NoSuchNamespaceError):
        catalog.update_namespace_properties("no_such_namespace", updates={"a": "1"})

    renamed = catalog.rename_table((source, "t"), (target, "moved"))
    assert renamed.name() == (target, "moved")
    assert not catalog.table_exists((source, "t"))
    with pytest.raises(NoSuchTableError):
        catalog.rename_table((source, "t"), (target, "again"))
    with pytest.raises(IcebergTableExistsError):
        catalog.rename_table((target, "moved"), (target, "taken"))

    stale_view = catalog.load_table((target, "moved"))
    with stale_view.transaction() as transaction:
        transaction.set_properties(owner="ops")
        transaction.remove_properties("stale")
    assert {"owner": "ops"}.items() <= catalog.load_table((target, "moved")).properties.items()
    assert "stale" not in catalog.load_table((target, "moved")).properties
    catalog.drop_table((target, "moved"))
    catalog.create_table((target, "moved"), schema)  # same name, another table-uuid
    with pytest.raises(CommitFailedException):
        stale_view.transaction().set_properties(owner="late").commit_transaction()


def test_fixture_refuses_malformed_updates_as_the_spec_says(
    iceberg: IcebergStandIn, ns: IcebergNamespace, db: list[str]
) -> None:
    base = f"{iceberg.url}/v1/p-wh"
    ns.declare_table(DeclareTableRequest(id=[*db, "t"]))
    both = {"updates": {"a": "1"}, "removals": ["a"]}
    reply = httpx.post(f"{base}/namespaces/{db[1]}/properties", json=both)
    assert reply.status_code == 422
    assert reply.json()["error"]["type"] == "UnprocessableEntityException"
    unknown = {"requirements": [], "updates": [{"action": "no-such-update"}]}
    assert httpx.post(f"{base}/namespaces/{db[1]}/tables/t", json=unknown).status_code == 400
    missing = {"requirements": [], "updates": []}
    assert httpx.post(f"{base}/namespaces/{db[1]}/tables/none", json=missing).status_code == 404
    moved = {"source": {"namespace": [db[1]], "name": "t"}, "destination": {"name": "x"}}
    assert httpx.post(f"{base}/tables/rename", json=moved).status_code == 400
    to_nowhere = {**moved, "destination": {"namespace": ["nowhere"], "name": "x"}}
    reply = httpx.post(f"{base}/tables/rename", json=to_nowhere)
    assert (reply.status_code, reply.json()["error"]["type"]) == (404, "NoSuchNamespaceException")


# Namespaces


def test_namespace_lifecycle_with_nesting_and_properties(ns: IcebergNamespace) -> None:
    top = ["wh", unique("top")]
    created = ns.create_namespace(CreateNamespaceRequest(id=top, properties={"a": "1"}))
    assert created.properties == {"a": "1"}
    ns.create_namespace(CreateNamespaceRequest(id=[*top, "mid"]))
    ns.create_namespace(CreateNamespaceRequest(id=[*top, "mid", "leaf"], properties={"b": "2"}))

    assert top[1] in ns.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces
    assert ns.list_namespaces(ListNamespacesRequest(id=top)).namespaces == ["mid"]
    leaf = [*top, "mid", "leaf"]
    assert ns.list_namespaces(ListNamespacesRequest(id=[*top, "mid"])).namespaces == ["leaf"]
    assert ns.describe_namespace(DescribeNamespaceRequest(id=leaf)).properties == {"b": "2"}
    ns.namespace_exists(NamespaceExistsRequest(id=leaf))

    with pytest.raises(NamespaceNotEmptyError):
        ns.drop_namespace(DropNamespaceRequest(id=[*top, "mid"]))
    ns.drop_namespace(DropNamespaceRequest(id=leaf))
    with pytest.raises(NamespaceNotFoundError):
        ns.namespace_exists(NamespaceExistsRequest(id=leaf))
    ns.drop_namespace(DropNamespaceRequest(id=[*top, "mid"]))
    ns.drop_namespace(DropNamespaceRequest(id=top))
    assert top[1] not in ns.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces


def test_create_namespace_modes(ns: IcebergNamespace, db: list[str]) -> None:
    with pytest.raises(NamespaceAlreadyExistsError):
        ns.create_namespace(CreateNamespaceRequest(id=db, properties={"x": "1"}))
    kept = ns.create_namespace(
        CreateNamespaceRequest(id=db, mode="exist_ok", properties={"x": "1"})
    )
    assert kept.properties == {}
    replaced = ns.create_namespace(
        CreateNamespaceRequest(id=db, mode="Overwrite", properties={"x": "1"})
    )
    assert replaced.properties == {"x": "1"}
    with pytest.raises(InvalidInputError):
        ns.create_namespace(CreateNamespaceRequest(id=db, mode="sometimes"))


def test_missing_namespaces_and_warehouses(ns: IcebergNamespace) -> None:
    with pytest.raises(NamespaceNotFoundError):
        ns.create_namespace(CreateNamespaceRequest(id=["wh", "no_parent", "child"]))
    with pytest.raises(NamespaceNotFoundError):
        ns.describe_namespace(DescribeNamespaceRequest(id=["wh", "missing"]))
    with pytest.raises(NamespaceNotFoundError):
        ns.list_namespaces(ListNamespacesRequest(id=["wh", "missing"]))
    with pytest.raises(NamespaceNotFoundError):
        ns.list_tables(ListTablesRequest(id=["wh", "missing"]))
    with pytest.raises(NamespaceNotFoundError):
        ns.list_namespaces(ListNamespacesRequest(id=["no_such_warehouse"]))
    with pytest.raises(NamespaceNotFoundError):
        ns.namespace_exists(NamespaceExistsRequest(id=["no_such_warehouse"]))
    ns.namespace_exists(NamespaceExistsRequest(id=["wh"]))


def test_drop_namespace_fails_or_skips_when_missing_and_is_restrict_only(
    ns: IcebergNamespace, db: list[str]
) -> None:
    ns.declare_table(DeclareTableRequest(id=[*db, "t"]))
    with pytest.raises(NamespaceNotEmptyError):
        ns.drop_namespace(DropNamespaceRequest(id=db))
    with pytest.raises(UnsupportedOperationError):
        ns.drop_namespace(DropNamespaceRequest(id=db, behavior="Cascade"))
    ns.deregister_table(DeregisterTableRequest(id=[*db, "t"]))
    ns.drop_namespace(DropNamespaceRequest(id=db))
    with pytest.raises(NamespaceNotFoundError):  # already gone: Fail, the default
        ns.drop_namespace(DropNamespaceRequest(id=db))
    with pytest.raises(NamespaceNotFoundError):
        ns.drop_namespace(DropNamespaceRequest(id=["wh", "never_existed"], mode="Fail"))
    ns.drop_namespace(DropNamespaceRequest(id=db, mode="Skip"))


def test_root_and_warehouse_levels(ns: IcebergNamespace) -> None:
    assert ns.describe_namespace(DescribeNamespaceRequest(id=[])).properties == {}
    ns.namespace_exists(NamespaceExistsRequest(id=[]))
    with pytest.raises(UnsupportedOperationError):
        ns.list_namespaces(ListNamespacesRequest(id=[]))
    with pytest.raises(UnsupportedOperationError):
        ns.create_namespace(CreateNamespaceRequest(id=["new_warehouse"]))
    with pytest.raises(UnsupportedOperationError):
        ns.drop_namespace(DropNamespaceRequest(id=["wh"]))
    with pytest.raises(InvalidInputError):
        ns.list_tables(ListTablesRequest(id=["wh"]))


def test_warehouses_are_separate(ns: IcebergNamespace) -> None:
    name = unique("only_in_other")
    ns.create_namespace(CreateNamespaceRequest(id=["other", name]))
    assert name in ns.list_namespaces(ListNamespacesRequest(id=["other"])).namespaces
    assert name not in ns.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces


# Wire format


def test_wire_format_unit_separator_and_cached_prefix(
    iceberg: IcebergStandIn, ns: IcebergNamespace, db: list[str]
) -> None:
    ns.create_namespace(CreateNamespaceRequest(id=[*db, "inner"]))
    ns.describe_namespace(DescribeNamespaceRequest(id=[*db, "inner"]))
    ns.list_namespaces(ListNamespacesRequest(id=[*db, "inner"]))
    assert iceberg.control.requests_to(f"/v1/p-wh/namespaces/{db[1]}%1Finner", "GET")
    listing = iceberg.control.requests_to("/v1/p-wh/namespaces", "GET")
    assert any(entry.query.get("parent") == f"{db[1]}\x1finner" for entry in listing)
    assert len(iceberg.control.requests_to("/v1/config")) <= 1  # cached per warehouse


@pytest.mark.parametrize(("style", "prefix"), [("defaults", "p-wh"), ("none", "wh")])
def test_prefix_from_defaults_or_warehouse_name(
    iceberg: IcebergStandIn, make_namespace: Factory, style: str, prefix: str
) -> None:
    iceberg.state.prefix_style = style
    namespace = make_namespace()
    name = unique("prefix")
    namespace.create_namespace(CreateNamespaceRequest(id=["wh", name]))
    assert iceberg.control.requests_to(f"/v1/{prefix}/namespaces", "POST")
    assert name in namespace.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces


# Tables


def test_declare_describe_deregister(
    iceberg: IcebergStandIn, make_namespace: Factory, db: list[str], tmp_path: Path
) -> None:
    ns = make_namespace(**{"storage.region": "eu-west-1"})
    declared = ns.declare_table(DeclareTableRequest(id=[*db, "t1"], properties={"owner": "me"}))
    expected_location = f"{tmp_path}/root/wh/{db[1]}/t1.lance"
    assert declared.location == expected_location
    assert declared.storage_options == {"region": "eu-west-1"}
    assert declared.properties == {"owner": "me", "table_type": "lance"}

    described = ns.describe_table(DescribeTableRequest(id=[*db, "t1"]))
    assert described.location == expected_location
    assert described.storage_options == {"region": "eu-west-1"}
    assert described.properties["table_type"] == "lance"
    assert described.version is None and described.var_schema is None
    ns.table_exists(TableExistsRequest(id=[*db, "t1"]))
    assert ns.list_tables(ListTablesRequest(id=db)).tables == ["t1"]

    write_lance(expected_location)
    deregistered = ns.deregister_table(DeregisterTableRequest(id=[*db, "t1"]))
    assert deregistered.location == expected_location
    deletes = iceberg.control.requests_to("/tables/t1", "DELETE")
    assert [entry.query.get("purgeRequested") for entry in deletes] == ["false"]
    with pytest.raises(TableNotFoundError):
        ns.describe_table(DescribeTableRequest(id=[*db, "t1"]))
    assert lance.dataset(expected_location).count_rows() == 3  # data stays


def test_declare_with_location_and_nested_default_location(
    ns: IcebergNamespace, db: list[str], tmp_path: Path
) -> None:
    explicit = str(tmp_path / "elsewhere" / "t")
    assert (
        ns.declare_table(DeclareTableRequest(id=[*db, "t"], location=explicit)).location == explicit
    )
    ns.create_namespace(CreateNamespaceRequest(id=[*db, "inner"]))
    nested = ns.declare_table(DeclareTableRequest(id=[*db, "inner", "t"]))
    assert nested.location == f"{tmp_path}/root/wh/{db[1]}/inner/t.lance"


def test_table_errors(ns: IcebergNamespace, db: list[str]) -> None:
    ns.declare_table(DeclareTableRequest(id=[*db, "t"]))
    with pytest.raises(TableAlreadyExistsError):
        ns.declare_table(DeclareTableRequest(id=[*db, "t"]))
    with pytest.raises(NamespaceNotFoundError):
        ns.declare_table(DeclareTableRequest(id=["wh", "missing", "t"]))
    with pytest.raises(TableNotFoundError):
        ns.describe_table(DescribeTableRequest(id=[*db, "missing"]))
    with pytest.raises(TableNotFoundError):
        ns.table_exists(TableExistsRequest(id=[*db, "missing"]))
    with pytest.raises(TableNotFoundError):
        ns.deregister_table(DeregisterTableRequest(id=[*db, "missing"]))


def test_failed_overwrite_keeps_the_previous_registration(
    iceberg: IcebergStandIn, ns: IcebergNamespace, db: list[str], tmp_path: Path
) -> None:
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    write_lance(old)
    write_lance(new)
    ns.register_table(RegisterTableRequest(id=[*db, "t"], location=old, properties={"v": "1"}))
    iceberg.control.fail_next(1, 500, method="POST", path="/tables")
    with pytest.raises(InternalError):
        ns.register_table(RegisterTableRequest(id=[*db, "t"], location=new, mode="overwrite"))
    described = ns.describe_table(DescribeTableRequest(id=[*db, "t"]))
    assert described.location == old and described.properties["v"] == "1"


def test_relative_root_is_made_absolute(iceberg: IcebergStandIn) -> None:
    namespace = IcebergNamespace(endpoint=iceberg.url, root="relative/dir/")
    assert namespace.root == os.path.join(os.getcwd(), "relative/dir")
    namespace.close()


def test_register_existing_lance_table(ns: IcebergNamespace, db: list[str], tmp_path: Path) -> None:
    location = str(tmp_path / "data" / "existing")
    write_lance(location, rows=5)
    registered = ns.register_table(
        RegisterTableRequest(id=[*db, "r"], location=location, properties={"p": "q"})
    )
    assert registered.location == location
    assert registered.properties == {"p": "q", "table_type": "lance"}
    assert ns.describe_table(DescribeTableRequest(id=[*db, "r"])).location == location
    with pytest.raises(TableAlreadyExistsError):
        ns.register_table(RegisterTableRequest(id=[*db, "r"], location=location))
    moved = str(tmp_path / "data" / "moved")
    write_lance(moved)
    ns.register_table(RegisterTableRequest(id=[*db, "r"], location=moved, mode="overwrite"))
    assert ns.describe_table(DescribeTableRequest(id=[*db, "r"])).location == moved
    with pytest.raises(InvalidInputError):
        ns.register_table(RegisterTableRequest(id=[*db, "x"], location=str(tmp_path / "nothing")))
    assert ns.list_tables(ListTablesRequest(id=db)).tables == ["r"]


@pytest.mark.parametrize(
    "identifier",
    [
        ["wh", "db/x", "t"],
        ["wh", "db", ".."],
        ["wh", "t"],
        [],
        ["wh", "", "t"],
        ["wh", "d", "a\x00"],
    ],
)
def test_bad_table_identifiers_are_invalid_input(
    ns: IcebergNamespace, identifier: list[str]
) -> None:
    with pytest.raises(InvalidInputError):
        ns.declare_table(DeclareTableRequest(id=identifier))
    with pytest.raises(InvalidInputError):
        ns.describe_table(DescribeTableRequest(id=identifier))


def test_bad_namespace_identifier_is_invalid_input(ns: IcebergNamespace) -> None:
    with pytest.raises(InvalidInputError):
        ns.create_namespace(CreateNamespaceRequest(id=["wh", "a\\b"]))
    with pytest.raises(InvalidInputError):
        ns.list_namespaces(ListNamespacesRequest(id=["wh", "x" * 300]))


@pytest.mark.parametrize("location", ["", "   ", "/tmp/a\nb", "/tmp/\x00"])
def test_bad_locations_are_invalid_input(
    ns: IcebergNamespace, db: list[str], location: str
) -> None:
    with pytest.raises(InvalidInputError):
        ns.declare_table(DeclareTableRequest(id=[*db, "t"], location=location))
    with pytest.raises(InvalidInputError):
        ns.register_table(RegisterTableRequest(id=[*db, "t"], location=location))
    with pytest.raises(TableNotFoundError):
        ns.describe_table(DescribeTableRequest(id=[*db, "t"]))


# Paging and listing


def test_paging_follows_server_pages_and_pages_locally(
    iceberg: IcebergStandIn, ns: IcebergNamespace, db: list[str]
) -> None:
    for index in range(5):
        ns.create_namespace(CreateNamespaceRequest(id=[*db, f"ns{index}"]))
        ns.declare_table(DeclareTableRequest(id=[*db, f"t{index}"]))
    iceberg.control.reset()
    all_tables = ns.list_tables(ListTablesRequest(id=db))
    assert all_tables.tables == [f"t{index}" for index in range(5)]
    assert all_tables.page_token is None
    # The fixture returns 2 identifiers a page, so the backend followed 3 pages.
    listings = iceberg.control.requests_to(f"/namespaces/{db[1]}/tables", "GET")
    assert [
        entry.query.get("pageToken") for entry in listings if entry.path.endswith("/tables")
    ] == [
        "",
        "2",
        "4",
    ]

    seen: list[str] = []
    token = None
    while True:
        page = ns.list_namespaces(ListNamespacesRequest(id=db, limit=2, page_token=token))
        assert len(page.namespaces) <= 2
        seen += page.namespaces
        token = page.page_token
        if not token:
            break
    assert seen == [f"ns{index}" for index in range(5)]
    first = ns.list_tables(ListTablesRequest(id=db, limit=3))
    assert first.tables == ["t0", "t1", "t2"] and first.page_token == "t2"
    rest = ns.list_tables(ListTablesRequest(id=db, limit=3, page_token=first.page_token))
    assert rest.tables == ["t3", "t4"] and rest.page_token is None
    with pytest.raises(InvalidInputError):
        ns.list_tables(ListTablesRequest(id=db, limit=-1))


def test_list_tables_loads_concurrently_with_a_bound(
    iceberg: IcebergStandIn, ns: IcebergNamespace, db: list[str]
) -> None:
    count = 16
    for index in range(count):
        ns.declare_table(DeclareTableRequest(id=[*db, f"t{index:02d}"]))
    iceberg.state.load_delay_seconds = 0.2
    iceberg.control.reset()
    started = time.monotonic()
    tables = ns.list_tables(ListTablesRequest(id=db)).tables
    elapsed = time.monotonic() - started
    assert tables == [f"t{index:02d}" for index in range(count)]
    assert elapsed < count * 0.2 / 2  # serial loading would take 3.2 s
    assert 2 <= iceberg.control.max_in_flight <= 8


# Tokens: how the properties reach the REST client (its behaviour: test_rest_catalog_client.py)


def test_a_credential_gets_its_token_from_the_catalogs_token_endpoint(
    iceberg: IcebergStandIn, make_namespace: Factory, db: list[str]
) -> None:
    iceberg.control.oauth_enabled = True
    iceberg.control.oauth_clients["client"] = "secret"
    ns = make_namespace(credential="client:secret")
    ns.describe_namespace(DescribeNamespaceRequest(id=db))
    iceberg.control.issued_tokens.clear()  # the catalog revokes every token
    ns.describe_namespace(DescribeNamespaceRequest(id=db))
    assert iceberg.control.token_requests == 2


def test_the_static_token_or_the_forwarded_callers_token_reaches_the_catalog(
    iceberg: IcebergStandIn, make_namespace: Factory, db: list[str]
) -> None:
    iceberg.control.required_token = "caller-token"
    forwarding = make_namespace(auth_token="static-token", forward_caller_token="true")
    caller = Identity(auth_token="caller-token")
    forwarding.list_namespaces(ListNamespacesRequest(id=db, identity=caller))
    with pytest.raises(UnauthenticatedError):
        forwarding.list_namespaces(ListNamespacesRequest(id=db))
    not_forwarding = make_namespace(auth_token="static-token")
    with pytest.raises(UnauthenticatedError):
        not_forwarding.list_namespaces(ListNamespacesRequest(id=db, identity=caller))
    iceberg.control.required_token = "static-token"  # the static token is what it sends
    not_forwarding.list_namespaces(ListNamespacesRequest(id=db, identity=caller))
    last = iceberg.control.requests_to("/namespaces", "GET")[-1]
    assert last.authorization == "Bearer static-token"


def test_forwarding_covers_the_inherited_table_operations(
    iceberg: IcebergStandIn, ns: IcebergNamespace, make_namespace: Factory, db: list[str],
    tmp_path: Path,
) -> None:
    location = str(tmp_path / "forwarded")
    write_lance(location)
    ns.register_table(RegisterTableRequest(id=[*db, "t"], location=location))
    iceberg.control.required_token = "caller-token"
    forwarding = make_namespace(auth_token="static-token", forward_caller_token="true")
    caller = Identity(auth_token="caller-token")
    described = forwarding.describe_table(DescribeTableRequest(id=[*db, "t"], identity=caller))
    assert described.location == location
    count = CountTableRowsRequest(id=[*db, "t"], identity=caller)
    assert forwarding.count_table_rows(count).count == 3
