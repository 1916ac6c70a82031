"""The iceberg backend on the Iceberg stand-in (a fault injector, see
`tests/support/iceberg_stand_in.py`), called directly from Python: what Apache Iceberg's REST
reference server cannot be made to do.

That is: several warehouses, each behind its own prefix, announced in `overrides` or `defaults`
(the reference server is one catalog without a prefix); the request log that shows the wire
format, the cached config and the pages followed; server-side pages of 2 and slow LoadTable
answers (bounded concurrent loading); an injected failure in the middle of an overwrite; and
the OAuth2 token endpoint the reference server lacks (its bearer checks serve the forwarding
tests of the contract suite, `tests/contract/test_forwarding.py`). Everything else the backend
does runs on the real server in `tests/test_iceberg_real_server.py`. The stand-in itself
is checked with pyiceberg's RestCatalog (the official client) first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    InternalError,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceExistsRequest,
    NamespaceNotFoundError,
    RegisterTableRequest,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchNamespaceError,
    NoSuchTableError,
)
from pyiceberg.exceptions import TableAlreadyExistsError as IcebergTableExistsError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from backends.core.settings import ConfigurationError
from backends.iceberg import IcebergNamespace
from tests.support.common import unique
from tests.support.iceberg_stand_in import IcebergStandIn
from tests.support.lance_data import write_ids

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
    ("properties", "why"),
    [
        ({}, "missing required property 'endpoint'"),
        ({"endpoint": "localhost:8181"}, "endpoint must start with http:// or https://"),
        ({"endpoint": "ftp://host"}, "endpoint must start with http:// or https://"),
        ({"endpoint": "http://h", "credential": "no-colon"},
         "credential must have the form client_id:client_secret"),
        ({"endpoint": "http://h", "credential": "id:secret", "auth_token": "t"},
         "set only one of auth_token and credential"),
        ({"endpoint": "http://h", "client.max-retries": "-1"},
         "'client.max-retries' must be at least 0, got -1"),
        ({"endpoint": "http://h", "client.read-timeout-ms": "soon"},
         "'client.read-timeout-ms' must be an integer, got 'soon'"),
        ({"endpoint": "http://h", "client.connect-timeout-ms": "0"},
         "'client.connect-timeout-ms' must be at least 1, got 0"),
    ],
)
def test_bad_configuration_is_rejected(properties: dict[str, str], why: str) -> None:
    with pytest.raises(ConfigurationError, match=why):
        IcebergNamespace(**properties)


# The fixture, checked by the official client


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
    with pytest.raises(NoSuchNamespaceError, match="Namespace no_such_namespace does not exist"):
        catalog.update_namespace_properties("no_such_namespace", updates={"a": "1"})

    renamed = catalog.rename_table((source, "t"), (target, "moved"))
    assert renamed.name() == (target, "moved")
    assert not catalog.table_exists((source, "t"))
    with pytest.raises(NoSuchTableError, match="NoSuchTableException: Table does not exist: t"):
        catalog.rename_table((source, "t"), (target, "again"))
    with pytest.raises(
        IcebergTableExistsError, match=rf"Table {target}\.taken already exists"
    ):
        catalog.rename_table((target, "moved"), (target, "taken"))

    stale_view = catalog.load_table((target, "moved"))
    with stale_view.transaction() as transaction:
        transaction.set_properties(owner="ops")
        transaction.remove_properties("stale")
    assert {"owner": "ops"}.items() <= catalog.load_table((target, "moved")).properties.items()
    assert "stale" not in catalog.load_table((target, "moved")).properties
    catalog.drop_table((target, "moved"))
    catalog.create_table((target, "moved"), schema)  # same name, another table-uuid
    with pytest.raises(
        CommitFailedException, match="CommitFailedException: Table UUID does not match"
    ):
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


def test_unknown_warehouses(ns: IcebergNamespace) -> None:
    """A catalog of several warehouses refuses an unknown one (the reference server has one)."""
    with pytest.raises(
        NamespaceNotFoundError, match="NoSuchWarehouseException: unknown warehouse no_such_"
    ):
        ns.list_namespaces(ListNamespacesRequest(id=["no_such_warehouse"]))
    with pytest.raises(
        NamespaceNotFoundError, match="NoSuchWarehouseException: unknown warehouse no_such_"
    ):
        ns.namespace_exists(NamespaceExistsRequest(id=["no_such_warehouse"]))
    ns.namespace_exists(NamespaceExistsRequest(id=["wh"]))


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


def test_prefix_from_defaults(iceberg: IcebergStandIn, make_namespace: Factory) -> None:
    """A prefix in `defaults` counts when `overrides` has none (no prefix at all: the reference
    server, `test_iceberg_real_server.py`)."""
    iceberg.state.prefix_style = "defaults"
    prefix = "p-wh"
    namespace = make_namespace()
    name = unique("prefix")
    namespace.create_namespace(CreateNamespaceRequest(id=["wh", name]))
    assert iceberg.control.requests_to(f"/v1/{prefix}/namespaces", "POST")
    assert name in namespace.list_namespaces(ListNamespacesRequest(id=["wh"])).namespaces


# Tables


def test_failed_overwrite_keeps_the_previous_registration(
    iceberg: IcebergStandIn, ns: IcebergNamespace, db: list[str], tmp_path: Path
) -> None:
    old, new = str(tmp_path / "old"), str(tmp_path / "new")
    write_ids(old)
    write_ids(new)
    ns.register_table(RegisterTableRequest(id=[*db, "t"], location=old, properties={"v": "1"}))
    iceberg.control.fail_next(1, 500, method="POST", path="/tables")
    with pytest.raises(InternalError, match="catalog returned HTTP 500: InjectedFault"):
        ns.register_table(RegisterTableRequest(id=[*db, "t"], location=new, mode="overwrite"))
    described = ns.describe_table(DescribeTableRequest(id=[*db, "t"]))
    assert described.location == old and described.properties["v"] == "1"


def test_relative_root_is_made_absolute(iceberg: IcebergStandIn) -> None:
    namespace = IcebergNamespace(endpoint=iceberg.url, root="relative/dir/")
    assert namespace.root == os.path.join(os.getcwd(), "relative/dir")
    namespace.close()


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
    with pytest.raises(InvalidInputError, match="limit must not be negative, got -1"):
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
