"""The OpenAPI document the server serves: rest.yaml, plus the `POST /<OperationId>` route of
every operation rest.yaml describes only at its /v1/ route, so the document lists every route
served, both styles, with the models each takes and answers (see `app.requests` and
`app.responses` for how the two styles read and answer).

rest.yaml stays the single source: a `POST /<OperationId>` route is derived from the
operation's /v1/ route. Its operationId is `<OperationId>ByOperationId` (operationIds are
unique in a document) and its `x-lance-operation` names the operation it serves.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import yaml

from app.protocol import JSON
from app.spec import SPEC_PATH, AnswerKind, BodyKind, Operation, load_operations, resolve

OPERATION_ROUTE_SUFFIX = "ByOperationId"
_ID_QUERY_PARAMETER = {
    "name": "id",
    "in": "query",
    "required": True,
    "description": "The table's identifier, its names joined with `delimiter` ($ by default).",
    "schema": {"type": "string"},
}


def _schema_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _request_model_name(operation: Operation) -> str:
    return operation.request_model_name or f"{operation.backend_id}Request"


def _v1_item(
    document: dict[str, Any], operation: Operation
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The /v1/ route's path item and its operation."""
    item = document["paths"][operation.path]
    return item, item[operation.method.lower()]


def _query_parameters(document: dict[str, Any], operation: Operation) -> list[dict[str, Any]]:
    """The /v1/ route's query parameters, then `id`: how an Arrow operation takes its fields."""
    item, v1 = _v1_item(document, operation)
    parameters = [*item.get("parameters", []), *v1.get("parameters", [])]
    in_query = [p for p in parameters if resolve(document, p).get("in") == "query"]
    return [*copy.deepcopy(in_query), dict(_ID_QUERY_PARAMETER)]


def _success(document: dict[str, Any], operation: Operation) -> dict[str, Any]:
    """The answer of the `POST /<OperationId>` route: the JSON response model, except for
    Arrow results and query plans, which answer as at the /v1/ route."""
    _, v1 = _v1_item(document, operation)
    # YAML keys the statuses as numbers or as strings
    answer = resolve(
        document, {str(k): v for k, v in v1["responses"].items()}[str(operation.status)]
    )
    if operation.answer in (AnswerKind.ARROW_FILE, AnswerKind.STRING):
        return {str(operation.status): copy.deepcopy(answer)}
    model = f"{operation.backend_id}Response"
    if model in document["components"]["schemas"]:
        schema: dict[str, Any] = _schema_ref(model)
    else:  # ListAllTables answers ListTablesResponse
        schema = copy.deepcopy(answer["content"][JSON]["schema"])
    return {
        "200": {
            "description": f"{operation.operation_id} result",
            "content": {JSON: {"schema": schema}},
        }
    }


def _operation_route(document: dict[str, Any], operation: Operation) -> dict[str, Any]:
    _, v1 = _v1_item(document, operation)
    errors = {
        str(code): copy.deepcopy(answer)
        for code, answer in v1["responses"].items()
        if not str(code).startswith("2")
    }
    summary = v1.get("summary", operation.operation_id)
    route: dict[str, Any] = {
        "tags": [*v1.get("tags", []), "OperationId"],
        "summary": f"{summary}, at POST /{operation.operation_id}",
        "operationId": f"{operation.operation_id}{OPERATION_ROUTE_SUFFIX}",
        "x-lance-operation": operation.operation_id,
        "responses": {**_success(document, operation), **errors},
    }
    if operation.body is BodyKind.ARROW:
        route["parameters"] = _query_parameters(document, operation)
        route["requestBody"] = copy.deepcopy(v1["requestBody"])
    else:
        route["requestBody"] = {
            "$ref": f"#/components/requestBodies/{_request_model_name(operation)}"
        }
    return route


def with_operation_routes(document: dict[str, Any], operations: list[Operation]) -> dict[str, Any]:
    """`document` with the `POST /<OperationId>` route of every /v1/ operation added."""
    served = copy.deepcopy(document)
    for operation in operations:
        if operation.path is None:  # rest.yaml describes its POST /<OperationId> route
            continue
        served["paths"][f"/{operation.operation_id}"] = {
            "post": _operation_route(document, operation)
        }
    return served


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The whole document, as /openapi.json and /rest.yaml serve it. Its server is this one,
    relative to the document (rest.yaml names a local default port): so that Swagger UI's
    "Try it out" calls it, behind a gateway's path prefix too."""
    document = yaml.safe_load(SPEC_PATH.read_text())
    document["servers"] = [{"url": ".", "description": "this server"}]
    return with_operation_routes(_parameters_inlined(document), load_operations())


def _parameters_inlined(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with each reference to a parameter of `components` replaced by the
    parameter: Swagger UI 5 renders a referenced parameter of a path (`id`, `delimiter`) as
    an unnamed `any` field, so "Try it out" could not fill it in."""
    parameters = document.get("components", {}).get("parameters", {})

    def inlined(parameter: dict[str, Any]) -> dict[str, Any]:
        reference = parameter.get("$ref", "")
        name = reference.removeprefix("#/components/parameters/")
        return copy.deepcopy(parameters[name]) if name != reference and name in parameters \
            else parameter

    for item in document.get("paths", {}).values():
        for holder in (item, *(value for value in item.values() if isinstance(value, dict))):
            if isinstance(holder.get("parameters"), list):
                holder["parameters"] = [inlined(parameter) for parameter in holder["parameters"]]
    return document


@functools.cache
def openapi_yaml() -> str:
    return yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True, width=100)
