"""Regenerate the Lance routes and schemas of rest.yaml from the installed official client.

The official `lance-namespace-urllib3-client` is generated from the upstream Lance REST spec,
so its API modules are the authority on each operation's method, route, query parameters,
body and answer; the `lance_namespace` models give the JSON schemas. The service endpoints
(/healthz, /readyz, /metrics) and the spec's own operations (`POST /GetTable`, ...) are this
project's and are written here. Run it after upgrading the pinned client:

    .venv/bin/python scripts/generate_rest_yaml.py
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any

import lance_namespace_urllib3_client.api as client_api
import yaml
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.health import HEALTH_PATHS
from app.protocol import ARROW_FILE, ARROW_STREAM
from app.spec import model_named

REST_YAML = Path(__file__).resolve().parents[1] / "rest.yaml"

# Operations whose request model is not named <OperationId>Request.
REQUEST_MODEL = {
    "ListAllTables": "ListTablesRequest",
    "CreateTableScalarIndex": "CreateTableIndexRequest",
}
# Operations whose JSON body is one field of the request model, not the model itself.
BODY_FIELD = {"UpdateTableSchemaMetadata": "metadata"}
# The spec's own operation names (namespace-spec.md) that are other names of a client operation.
SPEC_ALIASES = {"GetNamespace": "DescribeNamespace", "GetTable": "DescribeTable"}
# The spec's operations the official client lacks: POST /<OperationId> only.
SPEC_OPERATIONS = {
    "ListOperations": "List the operations the configured backend supports",
    "AlterNamespace": "Set and unset properties of a namespace, where the catalog can",
    "AlterTable": "Set and unset properties of a table, where the catalog can",
}

# LanceDB's remote client's calls served as operations of their own (the spec and its
# official client have none): at LanceDB's /v1/ routes, and at POST /<OperationId>.
LANCEDB_OPERATIONS: list[dict[str, Any]] = [
    {"operationId": "PrewarmTableIndex", "method": "post",
     "path": "/v1/table/{id}/index/{index_name}/prewarm", "query": ["delimiter"],
     "path_parameters": ["id", "index_name"], "body": "application/json", "status": "200",
     "answer": "PrewarmTableIndexResponse", "tags": ["Index", "Table"],
     "summary": "Load a table index into the server's caches (LanceDB's prewarm_index)"},
    {"operationId": "CloneTable", "method": "post", "path": "/v1/table/{id}/clone",
     "query": ["delimiter"], "path_parameters": ["id"], "body": "application/json",
     "status": "200", "answer": "CloneTableResponse", "tags": ["Table"],
     "summary": "Create a table as a shallow or deep clone of another (LanceDB's clone_table)"},
]


def operation_id(method_name: str) -> str:
    return "".join(word.capitalize() for word in method_name.split("_"))


def client_operations() -> list[dict[str, Any]]:
    """Method, route, query parameters, body and answer of every official client call."""
    found: dict[str, dict[str, Any]] = {}
    for _, api_class in inspect.getmembers(client_api, inspect.isclass):
        source = inspect.getsource(api_class)
        for name, function in inspect.getmembers(api_class, inspect.isfunction):
            if name.startswith("_") or name.endswith(("_with_http_info", "_preload_content")):
                continue
            operation = _client_operation(name, source, inspect.getsource(function))
            operation["summary"] = (inspect.getdoc(function) or name).splitlines()[0].strip()
            operation["tags"] = sorted({*found.get(name, {}).get("tags", []),
                                        api_class.__name__.removesuffix("Api")})
            found[name] = operation
    return sorted(found.values(), key=lambda op: (op["path"], op["operationId"]))


def _client_operation(name: str, api_source: str, method_source: str) -> dict[str, Any]:
    serialize = api_source[api_source.index(f"def _{name}_serialize("):]
    serialize = serialize[: serialize.index("return self.api_client.param_serialize") + 300]
    method, path = re.search(r"method='(\w+)',\s*resource_path='([^']+)'", serialize).groups()
    body_type = re.search(r"select_header_content_type\(\s*\[\s*'([^']+)'", serialize)
    status, answer = re.search(r"'(2\d\d)': (.+?),\n", method_source).groups()
    return {
        "operationId": operation_id(name),
        "method": method.lower(),
        "path": path,
        "query": re.findall(r"_query_params\.append\(\('(\w+)'", serialize),
        "path_parameters": re.findall(r"_path_params\['(\w+)'\]", serialize),
        "body": body_type.group(1) if body_type else None,
        "status": status,
        "answer": answer.strip('"'),
    }


def request_model(op_id: str) -> type[BaseModel]:
    return model_named(REQUEST_MODEL.get(op_id, f"{op_id}Request"))


def response_model(op_id: str) -> type[BaseModel] | None:
    try:
        return model_named(f"{op_id}Response")
    except AttributeError:
        return None


def _non_null(schema: dict[str, Any]) -> dict[str, Any]:
    variants = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    plain = dict(variants[0]) if len(variants) == 1 else {"anyOf": variants}
    if "description" in schema:
        plain["description"] = schema["description"]
    return plain


def query_parameter(name: str, model: type[BaseModel]) -> dict[str, Any]:
    if name == "delimiter":
        return {"$ref": "#/components/parameters/delimiter"}
    field_schema = model.model_json_schema()["properties"][name]
    schema = _non_null(field_schema)
    description = schema.pop("description", None)
    parameter: dict[str, Any] = {"name": name, "in": "query"}
    if description:
        parameter["description"] = " ".join(description.split())
    if schema.get("type") == "array":
        parameter["schema"] = schema
        parameter["explode"] = True  # ?on=a&on=b, as the official client sends it
    elif schema.get("type") == "object" or "$ref" in schema:
        parameter["content"] = {"application/json": {"schema": schema}}
    else:
        parameter["schema"] = schema
    return parameter


def path_parameter(name: str) -> dict[str, Any]:
    if name == "id":
        return {"$ref": "#/components/parameters/id"}
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def answer_content(op: dict[str, Any]) -> dict[str, Any] | None:
    answer = op["answer"]
    if answer == "None":
        return None
    if answer == "bytearray":
        return {ARROW_FILE: {"schema": {"type": "string", "format": "binary"}}}
    if answer == "int":
        return {"application/json": {"schema": {"type": "integer", "minimum": 0}}}
    if answer == "str":
        return {"application/json": {"schema": {"type": "string"}}}
    if answer.startswith("Dict[str"):
        schema = {"type": "object", "additionalProperties": {"type": "string"}}
        return {"application/json": {"schema": schema}}
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{answer}"}}}


def request_body(op: dict[str, Any], model: type[BaseModel]) -> dict[str, Any] | None:
    if op["body"] is None:
        return None
    if op["body"] == ARROW_STREAM:
        return {"$ref": "#/components/requestBodies/ArrowStream"}
    field = BODY_FIELD.get(op["operationId"])
    if field:
        schema = _non_null(model.model_json_schema()["properties"][field])
        return {"required": True, "content": {"application/json": {"schema": schema}}}
    return {"$ref": f"#/components/requestBodies/{model.__name__}"}


def path_item(op: dict[str, Any]) -> dict[str, Any]:
    model = request_model(op["operationId"])
    parameters = [path_parameter(name) for name in op["path_parameters"]]
    parameters += [query_parameter(name, model) for name in op["query"]]
    operation: dict[str, Any] = {
        "tags": op["tags"], "summary": op["summary"], "operationId": op["operationId"]
    }
    if model.__name__ != f"{op['operationId']}Request":
        operation["x-lance-request-model"] = model.__name__
    if op["operationId"] in BODY_FIELD:
        # The JSON body is this field of the request model and the answer the same field
        # of the response model.
        operation["x-lance-body-field"] = BODY_FIELD[op["operationId"]]
    body = request_body(op, model)
    if body:
        operation["requestBody"] = body
    success: dict[str, Any] = {"description": f"{op['operationId']} result"}
    content = answer_content(op)
    if content:
        success["content"] = content
    operation["responses"] = {
        op["status"]: success,
        "default": {"$ref": "#/components/responses/ErrorResponse"},
    }
    return {"parameters": parameters, op["method"]: operation}


def spec_path_item(op_id: str, summary: str, target: str | None = None) -> dict[str, Any]:
    target = target or op_id
    model = request_model(target)
    answer = response_model(target)
    operation: dict[str, Any] = {"operationId": op_id, "summary": summary}
    if target != op_id:
        operation["x-lance-operation"] = target
    operation["requestBody"] = {"$ref": f"#/components/requestBodies/{model.__name__}"}
    content = {"application/json": {"schema": {"$ref": f"#/components/schemas/{answer.__name__}"}}}
    operation["responses"] = {
        "200": {"description": f"{op_id} result", "content": content},
        "default": {"$ref": "#/components/responses/ErrorResponse"},
    }
    return {"post": operation}


def all_models(operations: list[dict[str, Any]]) -> list[type[BaseModel]]:
    models: dict[str, type[BaseModel]] = {}
    for op in operations:
        for model in (request_model(op["operationId"]), response_model(op["operationId"])):
            if model is not None:
                models[model.__name__] = model
    for op_id in SPEC_OPERATIONS:
        models[f"{op_id}Request"] = request_model(op_id)
        models[f"{op_id}Response"] = response_model(op_id)
    return [models[name] for name in sorted(models)]


def _shared_context(schemas: dict[str, Any]) -> dict[str, Any]:
    """Every model's `context` property points at one `Context` schema (it is long)."""
    context: dict[str, Any] = {}
    for schema in schemas.values():
        properties = schema.get("properties", {})
        if "context" in properties:
            context = _non_null(properties["context"])
            properties["context"] = {"anyOf": [
                {"$ref": "#/components/schemas/Context"}, {"type": "null"}
            ]}
    return context


def components(
    operations: list[dict[str, Any]], existing: dict[str, Any]
) -> dict[str, Any]:
    models = all_models(operations)
    _, schema = models_json_schema(
        [(model, "serialization") for model in models],
        ref_template="#/components/schemas/{model}",
    )
    schemas = dict(sorted(schema["$defs"].items()))
    schemas["Context"] = _shared_context(schemas)
    schemas["ErrorResponse"] = existing["schemas"]["ErrorResponse"]
    request_bodies: dict[str, Any] = {"ArrowStream": existing["requestBodies"]["ArrowStream"]}
    for model in models:
        if model.__name__.endswith("Request"):
            request_bodies[model.__name__] = {
                "required": False,
                "content": {"application/json": {"schema": {
                    "$ref": f"#/components/schemas/{model.__name__}"
                }}},
            }
    return {
        "parameters": existing["parameters"],
        "requestBodies": request_bodies,
        "responses": {"ErrorResponse": existing["responses"]["ErrorResponse"]},
        "schemas": schemas,
    }


def build(existing: dict[str, Any]) -> dict[str, Any]:
    operations = client_operations() + LANCEDB_OPERATIONS
    paths: dict[str, Any] = {}
    for op in operations:
        item = paths.setdefault(op["path"], {})
        item.update(path_item(op))
    for op_id, summary in SPEC_OPERATIONS.items():
        paths[f"/{op_id}"] = spec_path_item(op_id, summary)
    for alias, target in SPEC_ALIASES.items():
        paths[f"/{alias}"] = spec_path_item(alias, f"The spec's name of {target}", target)
    for service_path in HEALTH_PATHS:
        paths[service_path] = existing["paths"][service_path]
    return {
        "openapi": existing["openapi"],
        "info": existing["info"],
        "servers": existing["servers"],
        "paths": paths,
        "components": components(operations, existing["components"]),
    }


def main() -> None:
    existing = yaml.safe_load(REST_YAML.read_text())
    document = build(existing)
    text = yaml.safe_dump(document, sort_keys=False, width=100, allow_unicode=True)
    REST_YAML.write_text(text)
    print(f"wrote {REST_YAML} ({len(document['paths'])} paths)")


if __name__ == "__main__":
    main()
