"""Catalog levels, NextToken paging and error mapping, with botocore's Stubber.

moto has no catalog calls (CreateCatalog, GetCatalog, GetCatalogs, DeleteCatalog), so these
tests script Glue's answers; the Stubber checks every request and response against the Glue
service model shipped in botocore.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from botocore.stub import ANY, Stubber
from lance_namespace import (
    ConcurrentModificationError,
    CreateNamespaceRequest,
    DeclareTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    InternalError,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    ThrottlingError,
    UnauthenticatedError,
    UnsupportedOperationError,
)

from backends.glue import GlueNamespace
from tests.support.common import free_port
from tests.support.glue import MOTO_ACCOUNT_ID, MotoEndpoint, glue_properties

ACCOUNT = MOTO_ACCOUNT_ID
SALES = f"{ACCOUNT}:sales"


def stubbed(**extra: str) -> tuple[GlueNamespace, Stubber]:
    # The endpoint is never reached: the Stubber answers before anything is sent.
    properties = glue_properties(f"http://127.0.0.1:{free_port()}", **extra)
    namespace = GlueNamespace(**properties)
    return namespace, Stubber(namespace.glue_client)


@pytest.fixture
def catalogs(moto_endpoint: MotoEndpoint) -> Iterator[tuple[GlueNamespace, Stubber]]:
    # Glue is stubbed; STS (the caller's account, for CreateCatalog) is moto.
    namespace, stubber = stubbed(
        hierarchy="catalogs", catalog_id=ACCOUNT, sts_endpoint=moto_endpoint.url
    )
    with stubber:
        yield namespace, stubber
        stubber.assert_no_pending_responses()


def not_found(stubber: Stubber, method: str, params: dict) -> None:
    stubber.add_client_error(method, "EntityNotFoundException", expected_params=params)


def database(name: str, **parameters: str) -> dict:
    return {"Name": name, "Parameters": parameters}


def catalog(name: str, catalog_id: str, **parameters: str) -> dict:
    return {"Name": name, "CatalogId": catalog_id, "Parameters": parameters}


def expect_sales_catalog(stubber: Stubber, **parameters: str) -> None:
    """Resolving ["sales"]: no such database in the root catalog, but a child catalog."""
    not_found(stubber, "get_database", {"CatalogId": ACCOUNT, "Name": "sales"})
    stubber.add_response(
        "get_catalog",
        {"Catalog": catalog("sales", SALES, **parameters)},
        {"CatalogId": SALES},
    )


def test_root_lists_databases_and_child_catalogs_across_pages(catalogs):
    namespace, stubber = catalogs
    stubber.add_response(
        "get_databases",
        {"DatabaseList": [database("zeta"), database("alpha")], "NextToken": "db-2"},
        {"CatalogId": ACCOUNT},
    )
    stubber.add_response(
        "get_databases",
        {"DatabaseList": [database("mid")]},
        {"CatalogId": ACCOUNT, "NextToken": "db-2"},
    )
    stubber.add_response(
        "get_catalogs",
        {"CatalogList": [catalog("sales", SALES)], "NextToken": "cat-2"},
        {"ParentCatalogId": ACCOUNT, "Recursive": False},
    )
    stubber.add_response(
        "get_catalogs",
        {"CatalogList": [catalog("beta", f"{ACCOUNT}:beta")]},
        {"ParentCatalogId": ACCOUNT, "Recursive": False, "NextToken": "cat-2"},
    )
    response = namespace.list_namespaces(ListNamespacesRequest())
    assert response.namespaces == ["alpha", "beta", "mid", "sales", "zeta"]


def test_describe_and_list_a_child_catalog(catalogs):
    namespace, stubber = catalogs
    expect_sales_catalog(stubber, region="emea")
    described = namespace.describe_namespace(DescribeNamespaceRequest(id=["sales"]))
    assert described.properties == {"region": "emea"}

    expect_sales_catalog(stubber)
    stubber.add_response(
        "get_databases", {"DatabaseList": [database("orders")]}, {"CatalogId": SALES}
    )
    stubber.add_response(
        "get_catalogs",
        {"CatalogList": [catalog("archive", f"{SALES}/archive")]},
        {"ParentCatalogId": SALES, "Recursive": False},
    )
    listed = namespace.list_namespaces(ListNamespacesRequest(id=["sales"]))
    assert listed.namespaces == ["archive", "orders"]


def test_database_inside_child_catalog(catalogs):
    namespace, stubber = catalogs
    stubber.add_response(
        "get_database",
        {"Database": database("orders", team="core")},
        {"CatalogId": SALES, "Name": "orders"},
    )
    described = namespace.describe_namespace(DescribeNamespaceRequest(id=["sales", "orders"]))
    assert described.properties == {"team": "core"}


def test_nested_catalog_ids_use_slashes(catalogs):
    namespace, stubber = catalogs
    not_found(stubber, "get_database", {"CatalogId": f"{SALES}/archive", "Name": "old"})
    stubber.add_response(
        "get_catalog",
        {"Catalog": catalog("old", f"{SALES}/archive/old", k="v")},
        {"CatalogId": f"{SALES}/archive/old"},
    )
    described = namespace.describe_namespace(
        DescribeNamespaceRequest(id=["sales", "archive", "old"])
    )
    assert described.properties == {"k": "v"}


def test_missing_catalog_level_is_namespace_not_found(catalogs):
    namespace, stubber = catalogs
    not_found(stubber, "get_database", {"CatalogId": ACCOUNT, "Name": "ghost"})
    not_found(stubber, "get_catalog", {"CatalogId": f"{ACCOUNT}:ghost"})
    with pytest.raises(NamespaceNotFoundError, match="namespace ghost not found"):
        namespace.describe_namespace(DescribeNamespaceRequest(id=["ghost"]))


LOCATION = os.path.join(os.getcwd(), "sales", "orders")  # <root>/<namespace…>; root unset = cwd


def test_create_database_in_child_catalog(catalogs):
    namespace, stubber = catalogs
    expect_sales_catalog(stubber)
    not_found(stubber, "get_database", {"CatalogId": SALES, "Name": "orders"})
    not_found(stubber, "get_catalog", {"CatalogId": f"{SALES}/orders"})
    stubber.add_response(
        "create_database",
        {},
        {"CatalogId": SALES, "DatabaseInput": {"Name": "orders", "Parameters": {"a": "b"},
                                                "LocationUri": LOCATION}},
    )
    response = namespace.create_namespace(
        CreateNamespaceRequest(id=["sales", "orders"], properties={"a": "b"})
    )
    location = {"location": LOCATION, "database.location-uri": LOCATION}
    assert response.properties == {"a": "b", **location}


def test_create_database_under_missing_catalog(catalogs):
    namespace, stubber = catalogs
    not_found(stubber, "get_database", {"CatalogId": ACCOUNT, "Name": "ghost"})
    not_found(stubber, "get_catalog", {"CatalogId": f"{ACCOUNT}:ghost"})
    with pytest.raises(NamespaceNotFoundError, match="namespace ghost not found"):
        namespace.create_namespace(CreateNamespaceRequest(id=["ghost", "orders"]))


def test_create_and_drop_catalog(catalogs):
    namespace, stubber = catalogs
    not_found(stubber, "get_database", {"CatalogId": ACCOUNT, "Name": "lake"})
    not_found(stubber, "get_catalog", {"CatalogId": f"{ACCOUNT}:lake"})
    stubber.add_response(
        "create_catalog",
        {},
        {"Name": "lake", "CatalogInput": {"Parameters": {"owner": "data"}}},
    )
    created = namespace.create_namespace(
        CreateNamespaceRequest(
            id=["lake"], properties={"glue.namespace_type": "catalog", "owner": "data"}
        )
    )
    assert created.properties == {"owner": "data"}

    lake = f"{ACCOUNT}:lake"
    not_found(stubber, "get_database", {"CatalogId": ACCOUNT, "Name": "lake"})
    stubber.add_response("get_catalog", {"Catalog": catalog("lake", lake)}, {"CatalogId": lake})
    stubber.add_response("get_databases", {"DatabaseList": []}, {"CatalogId": lake})
    stubber.add_response(
        "get_catalogs", {"CatalogList": []}, {"ParentCatalogId": lake, "Recursive": False}
    )
    stubber.add_response("delete_catalog", {}, {"CatalogId": lake})
    namespace.drop_namespace(DropNamespaceRequest(id=["lake"]))


def test_catalog_creation_in_another_accounts_catalog_is_unsupported(moto_endpoint):
    other = "444455556666"
    namespace, stubber = stubbed(
        hierarchy="catalogs", catalog_id=other, sts_endpoint=moto_endpoint.url
    )
    with stubber:
        not_found(stubber, "get_database", {"CatalogId": other, "Name": "lake"})
        not_found(stubber, "get_catalog", {"CatalogId": f"{other}:lake"})
        with pytest.raises(
            UnsupportedOperationError, match="catalogs only directly under the account's default"
        ):
            namespace.create_namespace(
                CreateNamespaceRequest(id=["lake"], properties={"glue.namespace_type": "catalog"})
            )
        stubber.assert_no_pending_responses()


def test_nested_catalog_creation_is_unsupported(catalogs):
    namespace, stubber = catalogs
    expect_sales_catalog(stubber)
    not_found(stubber, "get_database", {"CatalogId": SALES, "Name": "sub"})
    not_found(stubber, "get_catalog", {"CatalogId": f"{SALES}/sub"})
    with pytest.raises(
        UnsupportedOperationError, match="catalogs only directly under the account's default"
    ):
        namespace.create_namespace(
            CreateNamespaceRequest(
                id=["sales", "sub"], properties={"glue.namespace_type": "catalog"}
            )
        )


def test_drop_non_empty_catalog_is_refused(catalogs):
    namespace, stubber = catalogs
    expect_sales_catalog(stubber)
    stubber.add_response(
        "get_databases", {"DatabaseList": [database("orders")]}, {"CatalogId": SALES}
    )
    with pytest.raises(
        NamespaceNotEmptyError, match="namespace sales still has databases or catalogs"
    ):
        namespace.drop_namespace(DropNamespaceRequest(id=["sales"]))


def test_create_existing_catalog_is_already_exists(catalogs):
    namespace, stubber = catalogs
    expect_sales_catalog(stubber)
    with pytest.raises(NamespaceAlreadyExistsError, match="namespace sales already exists"):
        namespace.create_namespace(CreateNamespaceRequest(id=["sales"]))


def test_table_in_child_catalog_database(catalogs):
    namespace, stubber = catalogs
    stubber.add_response(
        "get_database", {"Database": database("orders")}, {"CatalogId": SALES, "Name": "orders"}
    )
    table_input = {
        "Name": "t",
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"table_type": "lance"},
        "StorageDescriptor": {"Location": "s3://b/t"},
    }
    stubber.add_response(
        "create_table",
        {},
        {"CatalogId": SALES, "DatabaseName": "orders", "TableInput": table_input},
    )
    declared = namespace.declare_table(
        DeclareTableRequest(id=["sales", "orders", "t"], location="s3://b/t")
    )
    assert declared.location == "s3://b/t"

    stubber.add_response(
        "get_table",
        {"Table": {**table_input, "DatabaseName": "orders"}},
        {"CatalogId": SALES, "DatabaseName": "orders", "Name": "t"},
    )
    described = namespace.describe_table(DescribeTableRequest(id=["sales", "orders", "t"]))
    assert described.location == "s3://b/t"


def test_list_tables_of_a_catalog_is_empty(catalogs):
    namespace, stubber = catalogs
    not_found(stubber, "get_tables", {"CatalogId": ACCOUNT, "DatabaseName": "sales"})
    expect_sales_catalog(stubber)
    assert namespace.list_tables(ListTablesRequest(id=["sales"])).tables == []


def test_get_tables_follows_every_next_token():
    namespace, stubber = stubbed()
    lance = {"TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "LANCE"}}
    other = {"TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "parquet"}}
    pages = [
        [{"Name": f"t{i:03d}", **(lance if i % 4 else other)} for i in range(start, start + 100)]
        for start in (200, 0, 100)
    ]
    with stubber:
        for index, page in enumerate(pages):
            params = {"DatabaseName": "db"}
            if index:
                params["NextToken"] = f"page-{index}"
            response = {"TableList": page}
            if index < len(pages) - 1:
                response["NextToken"] = f"page-{index + 1}"
            stubber.add_response("get_tables", response, params)
        tables = namespace.list_tables(ListTablesRequest(id=["db"])).tables
        stubber.assert_no_pending_responses()
    expected = sorted(f"t{i:03d}" for i in range(300) if i % 4)
    assert tables == expected and len(tables) == 225


def test_get_databases_follows_every_next_token():
    namespace, stubber = stubbed()
    names = [f"db{i:03d}" for i in range(150)]
    with stubber:
        for index, start in enumerate((0, 50, 100)):
            params = {"NextToken": f"next-{index}"} if index else {}
            response = {"DatabaseList": [database(name) for name in names[start : start + 50]]}
            if index < 2:
                response["NextToken"] = f"next-{index + 1}"
            stubber.add_response("get_databases", response, params)
        listed = namespace.list_namespaces(ListNamespacesRequest(limit=120))
        stubber.assert_no_pending_responses()
    assert listed.namespaces == names[:120] and listed.page_token == names[119]


def test_account_catalog_id_comes_from_sts(clean_moto: MotoEndpoint):
    properties = glue_properties(clean_moto.url, hierarchy="catalogs")
    namespace = GlueNamespace(**properties)
    account = MOTO_ACCOUNT_ID
    with Stubber(namespace.glue_client) as stubber:
        stubber.add_client_error(
            "get_database", "EntityNotFoundException", expected_params={"Name": "sales"}
        )
        stubber.add_response(
            "get_catalog",
            {"Catalog": catalog("sales", f"{account}:sales", a="b")},
            {"CatalogId": f"{account}:sales"},
        )
        described = namespace.describe_namespace(DescribeNamespaceRequest(id=["sales"]))
        stubber.assert_no_pending_responses()
    assert described.properties == {"a": "b"}


# -- error mapping ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        ("AccessDeniedException", 400, PermissionDeniedError),
        ("UnrecognizedClientException", 400, UnauthenticatedError),
        ("InvalidSignatureException", 400, UnauthenticatedError),
        ("ExpiredTokenException", 400, UnauthenticatedError),
        ("ThrottlingException", 400, ThrottlingError),
        ("InternalServiceException", 500, ServiceUnavailableError),
        ("OperationTimeoutException", 400, ServiceUnavailableError),
        ("ServiceUnavailable", 503, ServiceUnavailableError),
        ("InvalidInputException", 400, InvalidInputError),
        ("ConcurrentModificationException", 400, ConcurrentModificationError),
        ("SomethingNew", 400, InternalError),
    ],
)
def test_glue_error_codes_map_to_namespace_errors(code: str, status: int, expected: type):
    namespace, stubber = stubbed()
    with stubber:
        stubber.add_client_error("get_database", code, http_status_code=status)
        with pytest.raises(expected, match=f"database 'db': {code}") as raised:
            namespace.describe_namespace(DescribeNamespaceRequest(id=["db"]))
    assert raised.value.code == expected.code


def test_not_found_and_already_exists_depend_on_the_object():
    namespace, stubber = stubbed()
    with stubber:
        stubber.add_client_error("get_table", "EntityNotFoundException")
        stubber.add_response("get_database", {"Database": database("db")})
        with pytest.raises(TableNotFoundError, match="table t not found"):
            namespace.describe_table(DescribeTableRequest(id=["db", "t"]))
        stubber.add_client_error("get_database", "EntityNotFoundException")
        stubber.add_client_error("create_database", "AlreadyExistsException")
        with pytest.raises(NamespaceAlreadyExistsError, match="database 'db' already exists"):
            namespace.create_namespace(CreateNamespaceRequest(id=["db"]))
        stubber.add_response("get_database", {"Database": database("db")})
        stubber.add_client_error(
            "create_table",
            "AlreadyExistsException",
            expected_params={"DatabaseName": "db", "TableInput": ANY},
        )
        with pytest.raises(TableAlreadyExistsError, match=r"table db\$t already exists"):
            namespace.declare_table(DeclareTableRequest(id=["db", "t"], location="s3://b/t"))
        stubber.assert_no_pending_responses()
