"""rest.yaml is the single source of the routes, and it matches the official client."""

from __future__ import annotations

import inspect
import re

import lance_namespace
import lance_namespace_urllib3_client.api as client_api
import pytest
import yaml

from app.routing import LanceRoutes, RouteTable
from app.server import create_app
from app.settings import Settings
from app.spec import SPEC_PATH, AnswerKind, BodyKind, load_operations
from backends import load_namespace
from backends.core import extensions

SPEC = yaml.safe_load(SPEC_PATH.read_text())
OPERATIONS = load_operations()
BY_ID = {op.operation_id: op for op in OPERATIONS}


def official_client_routes() -> dict[str, tuple[str, str]]:
    """{method name: (METHOD, path)} of every call the installed urllib3 client can make."""
    routes = {}
    for _, api_class in inspect.getmembers(client_api, inspect.isclass):
        source = inspect.getsource(api_class)
        for name, method, path in re.findall(
            r"def _(\w+)_serialize\(.*?method='(\w+)',\s*resource_path='([^']+)'", source, re.S
        ):
            routes[name] = (method, path)
    return routes


def test_the_v1_routes_are_exactly_the_official_clients_routes_and_lancedbs_own() -> None:
    client_routes = official_client_routes()
    assert len(client_routes) == 54
    served = {(op.method, op.path) for op in OPERATIONS if op.path}
    # LanceDB's remote client's calls served as operations of their own.
    lancedb_routes = {("POST", "/v1/table/{id}/index/{index_name}/prewarm"),
                      ("POST", "/v1/table/{id}/clone")}
    assert served == set(client_routes.values()) | lancedb_routes


def test_every_operation_of_the_official_interface_is_served() -> None:
    interface = {
        name for name, member in vars(lance_namespace.LanceNamespace).items()
        if callable(member) and not name.startswith("_") and name != "namespace_id"
    }
    served = {op.backend_method for op in OPERATIONS}
    assert interface - {"create_empty_table"} <= served, interface - served
    assert set(official_client_routes()) <= served


def test_the_specs_own_operation_names_are_served() -> None:
    for name in ("ListOperations", "GetNamespace", "GetTable", "AlterNamespace", "AlterTable"):
        assert BY_ID[name].path is None
    assert BY_ID["GetTable"].backend_method == "describe_table"
    assert BY_ID["GetNamespace"].backend_method == "describe_namespace"
    assert BY_ID["GetTable"].request_model is lance_namespace.DescribeTableRequest
    assert BY_ID["AlterTable"].backend_method == "alter_table"


def test_each_operation_has_the_official_request_and_response_models() -> None:
    for operation in OPERATIONS:
        model = operation.request_model
        official = getattr(lance_namespace, model.__name__, None)
        if official is not None:  # the official model, or this server's extension of it
            assert model is official or (
                issubclass(model, official) and model is getattr(extensions, model.__name__)
            )
        assert operation.backend_method.isidentifier()
    assert BY_ID["ListAllTables"].request_model is lance_namespace.ListTablesRequest
    assert BY_ID["CreateTableScalarIndex"].request_model is extensions.CreateTableIndexRequest


def test_component_schemas_list_the_official_model_fields() -> None:
    schemas = SPEC["components"]["schemas"]
    for operation in OPERATIONS:
        for model in (operation.request_model, operation.response_model):
            if model is None:
                continue
            official = {field.alias or name for name, field in model.model_fields.items()}
            assert set(schemas[model.__name__]["properties"]) == official, model.__name__


def test_wire_formats_follow_the_upstream_spec() -> None:
    assert BY_ID["CreateTable"].body is BodyKind.ARROW
    assert BY_ID["InsertIntoTable"].body is BodyKind.ARROW
    assert BY_ID["MergeInsertIntoTable"].body is BodyKind.ARROW
    assert BY_ID["UpdateTableSchemaMetadata"].body is BodyKind.FIELD
    assert BY_ID["UpdateTableSchemaMetadata"].answer is AnswerKind.FIELD
    assert BY_ID["QueryTable"].answer is AnswerKind.ARROW_FILE
    assert BY_ID["CountTableRows"].answer is AnswerKind.INTEGER
    assert BY_ID["ExplainTableQueryPlan"].answer is AnswerKind.STRING
    assert BY_ID["NamespaceExists"].answer is AnswerKind.STATUS
    assert BY_ID["TableExists"].answer is AnswerKind.STATUS
    assert BY_ID["DropTable"].body is BodyKind.NONE
    assert BY_ID["ListNamespaces"].method == "GET"
    assert BY_ID["ListAllTables"].method == "GET"
    assert BY_ID["CreateMaterializedView"].status == 201
    assert {p.name for p in BY_ID["DescribeTable"].query_parameters} >= {
        "with_table_uri", "load_detailed_metadata", "check_declared", "delimiter"
    }
    merge = {p.name: p.type for p in BY_ID["MergeInsertIntoTable"].query_parameters}
    assert merge["on"] == "array"
    assert merge["when_matched_update_all"] == "boolean"
    assert SPEC["components"]["parameters"]["delimiter"]["schema"]["default"] == "$"


TABLE = RouteTable.build(OPERATIONS)


@pytest.mark.parametrize(
    ("method", "path", "operation", "params"),
    [
        ("POST", "/v1/table/a$b/tags/create", "CreateTableTag", {"id": "a$b"}),
        ("POST", "/v1/table/a$b/create", "CreateTable", {"id": "a$b"}),
        ("POST", "/v1/table/tags/create", "CreateTable", {"id": "tags"}),
        ("POST", "/v1/table/x/create/", "CreateTable", {"id": "x"}),
        ("GET", "/v1/table", "ListAllTables", {}),
        ("GET", "/v1/table/", "ListAllTables", {}),
        ("POST", "/v1/table/version/batch-create", "BatchCreateTableVersions", {}),
        ("POST", "/v1/table/version/version/create", "CreateTableVersion", {"id": "version"}),
        ("POST", "/v1/table/t/index/idx%2F1/drop", "DropTableIndex",
         {"id": "t", "index_name": "idx/1"}),
        ("POST", "/v1/table/a%24b%2Fc/describe", "DescribeTable", {"id": "a$b/c"}),
        ("GET", "/v1/namespace/a/table/list", "ListTables", {"id": "a"}),
        ("GET", "/v1/namespace/a/list", "ListNamespaces", {"id": "a"}),
        ("POST", "/v1/table/a/b/describe", "DescribeTable", {"id": "a/b"}),
        ("POST", "/GetTable", "GetTable", {}),
        ("POST", "/CreateTableTag/", "CreateTableTag", {}),
    ],
)
def test_routing_is_unambiguous(method: str, path: str, operation: str, params: dict) -> None:
    found = TABLE.match(method, path)
    assert found is not None
    assert found.operation.operation_id == operation
    assert found.path_params == params


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/table/x/create"), ("POST", "/v1/table/x/nothing"), ("POST", "/v2/x"),
     ("POST", "/NoSuchOperation"), ("GET", "/GetTable")],
)
def test_unknown_routes_match_nothing(method: str, path: str) -> None:
    assert TABLE.match(method, path) is None


def test_the_app_serves_the_operations_through_one_route_table(tmp_path) -> None:
    app = create_app(load_namespace("dir", {"root": str(tmp_path)}), Settings())
    tables = [route for route in app.routes if isinstance(route, LanceRoutes)]
    assert len(tables) == 1
    assert len(tables[0].endpoints) == 2 * len(OPERATIONS)
    other = {getattr(route, "path", None) for route in app.routes} - {None}
    assert not {path for path in other if path.startswith("/v1/")}


def test_the_readme_tables_are_generated_from_the_current_code() -> None:
    """The documentation's generated tables (routes, support matrix, error codes, every
    settings class's properties) are current, and each has its one place in the docs."""
    import scripts.readme_tables as tables

    stale = [str(path.relative_to(tables.ROOT)) for path in tables.stale_files()]
    assert not stale, f"run scripts/readme_tables.py: {stale} are stale"
    texts = {path: path.read_text() for path in tables.documentation_files() if path.exists()}
    for name in tables.all_tables():
        places = [path for path, text in texts.items() if f"<!-- {name}:begin -->" in text]
        assert len(places) == 1, f"the {name} table has {len(places)} places in the docs"
    reference = (tables.DOCS / "reference.md").read_text()
    assert reference.count("| ") > len(OPERATIONS)
