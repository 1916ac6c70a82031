"""rest.yaml is the single source of the routes, and it matches the official client."""

from __future__ import annotations

import inspect
import re

import lance_namespace
import lance_namespace_urllib3_client.api as client_api
import yaml

from app.config import Settings
from app.server import create_app
from app.spec import SPEC_PATH, AnswerKind, BodyKind, load_operations
from backends import load_namespace

SPEC = yaml.safe_load(SPEC_PATH.read_text())


def official_client_routes() -> set[tuple[str, str]]:
    """(METHOD, path) of every call the installed urllib3 client can make."""
    routes = set()
    for _, api_class in inspect.getmembers(client_api, inspect.isclass):
        source = inspect.getsource(api_class)
        for method, path in re.findall(
            r"method='(\w+)',\s*resource_path='([^']+)'", source
        ):
            routes.add((method, path))
    return routes


def test_every_v1_route_is_one_the_official_client_calls_with_the_same_method() -> None:
    client_routes = official_client_routes()
    assert len(client_routes) > 30
    served = {(op.method, op.path) for op in load_operations()}
    assert len(served) == 17
    assert served <= client_routes, served - client_routes


def test_the_issue_routes_are_all_served() -> None:
    namespace_suffixes = ("create", "list", "describe", "drop", "exists", "table/list")
    wanted = {"/v1/namespace/{id}/" + suffix for suffix in namespace_suffixes} | {
        "/v1/table/{id}/" + suffix
        for suffix in (
            "register", "describe", "exists", "drop", "deregister", "declare", "create",
            "insert", "count_rows", "query", "version/list",
        )
    }
    assert {op.path for op in load_operations()} == wanted


def test_each_operation_has_the_official_request_and_response_models() -> None:
    for operation in load_operations():
        name = operation.operation_id
        assert operation.request_model is getattr(lance_namespace, f"{name}Request")
        assert hasattr(lance_namespace.LanceNamespace, operation.backend_method)


def test_component_schemas_list_the_official_model_fields() -> None:
    schemas = SPEC["components"]["schemas"]
    for operation in load_operations():
        for model in (operation.request_model, operation.response_model):
            official = {
                field.alias or name for name, field in model.model_fields.items()
            }
            assert set(schemas[model.__name__]["properties"]) == official, model.__name__


def test_wire_formats_follow_the_upstream_spec() -> None:
    by_id = {op.operation_id: op for op in load_operations()}
    assert by_id["CreateTable"].body is BodyKind.ARROW
    assert by_id["InsertIntoTable"].body is BodyKind.ARROW
    assert by_id["QueryTable"].answer is AnswerKind.ARROW_FILE
    assert by_id["CountTableRows"].answer is AnswerKind.INTEGER
    assert by_id["NamespaceExists"].answer is AnswerKind.STATUS
    assert by_id["TableExists"].answer is AnswerKind.STATUS
    assert by_id["ListNamespaces"].method == "GET"
    assert {p.name for p in by_id["DescribeTable"].query_parameters} >= {
        "with_table_uri", "load_detailed_metadata", "check_declared", "delimiter"
    }
    delimiter = SPEC["components"]["parameters"]["delimiter"]
    assert delimiter["schema"]["default"] == "$"


def test_the_app_serves_each_operation_at_both_routes_and_nothing_hand_written(tmp_path) -> None:
    app = create_app(load_namespace("dir", {"root": str(tmp_path)}), Settings())
    served = {
        (method, route.path)
        for route in app.routes
        for method in getattr(route, "methods", None) or ()
        if method != "HEAD"
    }
    expected = set()
    for operation in load_operations():
        expected.add((operation.method, operation.route_path))
        expected.add(("POST", f"/{operation.operation_id}"))
    assert expected <= served
    lance_routes = {r for r in served if r[1].startswith("/v1/") or r[1][1:2].isupper()}
    assert lance_routes == expected
