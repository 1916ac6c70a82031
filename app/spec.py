"""The served operations, read from rest.yaml: the single source of the routes."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import lance_namespace
import yaml
from pydantic import BaseModel
from starlette.convertors import PathConvertor, register_url_convertor

SPEC_PATH = Path(__file__).with_name("rest.yaml")


class IdentifierConvertor(PathConvertor):
    regex = "[\\s\\S]*"


register_url_convertor("lance_id", IdentifierConvertor())
ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW_FILE = "application/vnd.apache.arrow.file"


class BodyKind(enum.Enum):
    JSON = "json"
    ARROW = "arrow"
    NONE = "none"


class AnswerKind(enum.Enum):
    JSON = "json"
    INTEGER = "integer"
    ARROW_FILE = "arrow-file"
    STATUS = "status"


@dataclass(frozen=True)
class QueryParameter:
    name: str
    type: str
    default: Any = None


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    path: str
    query_parameters: tuple[QueryParameter, ...]
    body: BodyKind
    answer: AnswerKind

    @cached_property
    def route_path(self) -> str:
        """The Starlette path: `id` may hold any character (even `/` or a newline), so a
        bad name is rejected as invalid input instead of missing every route."""
        return self.path.replace("{id}", "{id:lance_id}")

    @cached_property
    def backend_method(self) -> str:
        """The `LanceNamespace` method: CreateNamespace -> create_namespace."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.operation_id).lower()

    @cached_property
    def request_model(self) -> type[BaseModel]:
        return getattr(lance_namespace, f"{self.operation_id}Request")

    @cached_property
    def response_model(self) -> type[BaseModel]:
        return getattr(lance_namespace, f"{self.operation_id}Response")


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _body_kind(document: dict[str, Any], operation: dict[str, Any]) -> BodyKind:
    if "requestBody" not in operation:
        return BodyKind.NONE
    content = _resolve(document, operation["requestBody"])["content"]
    return BodyKind.ARROW if ARROW_STREAM in content else BodyKind.JSON


def _answer_kind(document: dict[str, Any], operation: dict[str, Any]) -> AnswerKind:
    content = _resolve(document, operation["responses"]["200"]).get("content")
    if not content:
        return AnswerKind.STATUS
    if ARROW_FILE in content:
        return AnswerKind.ARROW_FILE
    schema = content["application/json"]["schema"]
    return AnswerKind.INTEGER if schema.get("type") == "integer" else AnswerKind.JSON


def _query_parameters(
    document: dict[str, Any], parameters: list[dict[str, Any]]
) -> tuple[QueryParameter, ...]:
    resolved = (_resolve(document, parameter) for parameter in parameters)
    return tuple(
        QueryParameter(p["name"], _parameter_type(p), p.get("schema", {}).get("default"))
        for p in resolved
        if p["in"] == "query"
    )


def _parameter_type(parameter: dict[str, Any]) -> str:
    """The schema type; a parameter with JSON `content` is one JSON-encoded value."""
    if "application/json" in parameter.get("content", {}):
        return "json"
    return parameter["schema"].get("type", "string")


def load_operations(path: Path = SPEC_PATH) -> list[Operation]:
    """Every Lance operation of the spec at `path` (routes under /v1/)."""
    document = yaml.safe_load(path.read_text())
    operations = []
    for route, item in document["paths"].items():
        if not route.startswith("/v1/"):
            continue
        shared_parameters = item.get("parameters", [])
        for method in ("get", "post"):
            if method not in item:
                continue
            operation = item[method]
            parameters = shared_parameters + operation.get("parameters", [])
            operations.append(
                Operation(
                    operation_id=operation["operationId"],
                    method=method.upper(),
                    path=route,
                    query_parameters=_query_parameters(document, parameters),
                    body=_body_kind(document, operation),
                    answer=_answer_kind(document, operation),
                )
            )
    # With `{id:lance_id}` the route with the longer literal tail must be tried first:
    # /v1/namespace/a/table/list is ListTables, not ListNamespaces of "a/table".
    return sorted(operations, key=lambda op: -len(op.path.partition("{id}")[2]))
