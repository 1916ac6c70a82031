"""The served operations, read from rest.yaml: the single source of the routes."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import lance_namespace
import yaml
from pydantic import BaseModel

from app.protocol import ARROW_FILE, ARROW_STREAM, JSON
from backends.core import extensions
from backends.core.operations import method_name

SPEC_PATH = Path(__file__).with_name("rest.yaml")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class BodyKind(enum.Enum):
    JSON = "json"
    ARROW = "arrow"
    NONE = "none"
    FIELD = "field"  # the JSON body is one field of the request model


class AnswerKind(enum.Enum):
    JSON = "json"
    INTEGER = "integer"
    STRING = "string"
    ARROW_FILE = "arrow-file"
    STATUS = "status"
    FIELD = "field"  # the answer is one field of the response model


@dataclass(frozen=True)
class QueryParameter:
    name: str
    type: str
    default: Any = None


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    # The /v1/ route, or None for an operation served only at POST /<operation_id>.
    path: str | None
    query_parameters: tuple[QueryParameter, ...]
    body: BodyKind
    answer: AnswerKind
    status: int = 200
    # The operation this one is another name of (GetTable -> DescribeTable).
    target_id: str | None = None
    request_model_name: str | None = None
    body_field: str | None = None

    @cached_property
    def backend_id(self) -> str:
        """The operation the backend performs (DescribeTable for GetTable)."""
        return self.target_id or self.operation_id

    @cached_property
    def backend_method(self) -> str:
        """The `LanceNamespace` method: CreateNamespace -> create_namespace."""
        return method_name(self.backend_id)

    @cached_property
    def request_model(self) -> type[BaseModel]:
        return model_named(self.request_model_name or f"{self.backend_id}Request")

    @cached_property
    def response_model(self) -> type[BaseModel] | None:
        try:
            return model_named(f"{self.backend_id}Response")
        except AttributeError:
            return None

    @cached_property
    def takes_data(self) -> bool:
        return self.body is BodyKind.ARROW

    @cached_property
    def has_id(self) -> bool:
        return "id" in self.request_model.model_fields


def model_named(name: str) -> type[BaseModel]:
    """The request or response model `name`: this server's extension of the official one
    when there is one (`backends.core.extensions`), else the official one."""
    found = getattr(extensions, name, None) or getattr(lance_namespace, name, None)
    if found is None:
        raise AttributeError(name)
    return found


def resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """`node`, its `$ref` followed within `document`."""
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _body_kind(document: dict[str, Any], operation: dict[str, Any]) -> BodyKind:
    if "requestBody" not in operation:
        return BodyKind.NONE
    if "x-lance-body-field" in operation:
        return BodyKind.FIELD
    content = resolve(document, operation["requestBody"])["content"]
    return BodyKind.ARROW if ARROW_STREAM in content else BodyKind.JSON


def _success(operation: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status = min(code for code in operation["responses"] if str(code).isdigit())
    return int(status), operation["responses"][status]


def _answer_kind(document: dict[str, Any], operation: dict[str, Any]) -> AnswerKind:
    content = resolve(document, _success(operation)[1]).get("content")
    if not content:
        return AnswerKind.STATUS
    if ARROW_FILE in content:
        return AnswerKind.ARROW_FILE
    if "x-lance-body-field" in operation:
        return AnswerKind.FIELD
    schema_type = content[JSON]["schema"].get("type")
    return {"integer": AnswerKind.INTEGER, "string": AnswerKind.STRING}.get(
        schema_type, AnswerKind.JSON
    )


def _query_parameters(
    document: dict[str, Any], parameters: list[dict[str, Any]]
) -> tuple[QueryParameter, ...]:
    resolved = (resolve(document, parameter) for parameter in parameters)
    return tuple(
        QueryParameter(p["name"], _parameter_type(p), p.get("schema", {}).get("default"))
        for p in resolved
        if p["in"] == "query"
    )


def _parameter_type(parameter: dict[str, Any]) -> str:
    """The schema type; a parameter with JSON `content` is one JSON-encoded value."""
    if JSON in parameter.get("content", {}):
        return "json"
    return parameter["schema"].get("type", "string")


def _operation(
    document: dict[str, Any], route: str, method: str, operation: dict[str, Any],
    parameters: list[dict[str, Any]],
) -> Operation:
    return Operation(
        operation_id=operation["operationId"],
        method=method.upper(),
        path=route if route.startswith("/v1/") else None,
        query_parameters=_query_parameters(document, parameters),
        body=_body_kind(document, operation),
        answer=_answer_kind(document, operation),
        status=_success(operation)[0],
        target_id=operation.get("x-lance-operation"),
        request_model_name=operation.get("x-lance-request-model"),
        body_field=operation.get("x-lance-body-field"),
    )


def load_operations(path: Path = SPEC_PATH) -> list[Operation]:
    """Every Lance operation of the spec at `path`: its /v1/ routes and the spec's own
    operations (paths named `/<OperationId>`); the service endpoints are not operations."""
    document = yaml.load(path.read_text(), Loader=_YAML_LOADER)
    operations = []
    for route, item in document["paths"].items():
        shared_parameters = item.get("parameters", [])
        for method in ("get", "post"):
            operation = item.get(method)
            if operation is None:
                continue
            if not route.startswith("/v1/") and route != f"/{operation['operationId']}":
                continue
            parameters = shared_parameters + operation.get("parameters", [])
            operations.append(_operation(document, route, method, operation, parameters))
    return operations
