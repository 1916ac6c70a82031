"""The FastAPI application: every operation of rest.yaml at its /v1/ route and at POST /<Id>."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from lance_namespace import LanceNamespace, UnsupportedOperationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from app.config import Settings
from app.dispatch import Dispatcher
from app.errors import as_namespace_error
from app.requests import read_operation_request, read_route_request
from app.responses import render, render_error, render_model
from app.spec import SPEC_PATH, Operation, load_operations

SETTINGS_ENV = "LANCE_ADAPTER_SETTINGS_JSON"

RequestReader = Callable[
    [Operation, Request, int], Awaitable[tuple[dict[str, Any], bytes | None]]
]
Renderer = Callable[..., Response]


def _endpoint(
    operation: Operation,
    dispatcher: Dispatcher,
    settings: Settings,
    read: RequestReader,
    answer: Renderer,
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            fields, data = await read(operation, request, settings.max_body_bytes)
            response = await dispatcher.call(operation, fields, data)
            return answer(operation.answer, response)
        except Exception as error:
            return render_error(as_namespace_error(error), request.url.path)

    endpoint.__name__ = operation.backend_method
    return endpoint


def operation_routes(
    operations: list[Operation], dispatcher: Dispatcher, settings: Settings
) -> list[Route]:
    routes = []
    for operation in operations:
        routes.append(
            Route(
                operation.route_path,
                _endpoint(operation, dispatcher, settings, read_route_request, render),
                methods=[operation.method],
                name=operation.operation_id,
            )
        )
        routes.append(
            Route(
                f"/{operation.operation_id}",
                _endpoint(operation, dispatcher, settings, read_operation_request, render_model),
                methods=["POST"],
                name=f"{operation.operation_id}-by-id",
            )
        )
    return routes


async def _no_such_route(request: Request, error: Exception) -> Response:
    status = error.status_code if isinstance(error, HTTPException) else 404
    message = f"no operation at {request.method} {request.url.path} (HTTP {status})"
    return render_error(UnsupportedOperationError(message), request.url.path)


def create_app(namespace: LanceNamespace, settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(
        title="lance-namespace-adapter",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        exception_handlers={404: _no_such_route, 405: _no_such_route},
    )
    dispatcher = Dispatcher(namespace, settings.max_concurrency)
    app.router.routes.extend(operation_routes(load_operations(), dispatcher, settings))
    app.router.routes.append(
        Route("/rest.yaml", lambda _: FileResponse(SPEC_PATH, media_type="application/yaml"))
    )
    app.state.namespace = namespace
    app.state.settings = settings
    return app


def create_app_from_environment() -> FastAPI:
    """The uvicorn factory used by worker processes: settings come from the parent CLI."""
    from backends import load_namespace

    settings = Settings.from_json(os.environ[SETTINGS_ENV])
    return create_app(load_namespace(settings.impl, settings.properties), settings)
