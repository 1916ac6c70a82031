"""Swagger UI at /docs and the OpenAPI document of every route served at /openapi.json and
/rest.yaml (`app.openapi`: rest.yaml with the `POST /<OperationId>` routes it implies).

The UI's scripts and styles are served from the swagger-ui-bundle package, not a CDN, so
the page works where the service has no internet access. Every URL in the page is
relative, so it also works behind a gateway's path prefix (root_path).
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from swagger_ui_bundle import swagger_ui_path

from app.observability import named_route
from app.openapi import openapi_document, openapi_yaml

UI_ASSETS = ("swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png")

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>lance-namespace-adapter: Lance REST Namespace API</title>
  <link rel="stylesheet" href="docs/swagger-ui.css">
  <link rel="icon" type="image/png" href="docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({url: "openapi.json", dom_id: "#swagger-ui"});
  </script>
</body>
</html>
"""


async def _openapi(_: Request) -> Response:
    return JSONResponse(openapi_document())


async def _openapi_yaml(_: Request) -> Response:
    return Response(openapi_yaml(), media_type="application/yaml")


async def _page(_: Request) -> Response:
    return HTMLResponse(_PAGE)


async def _asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in UI_ASSETS:
        return Response(status_code=404)
    return FileResponse(Path(swagger_ui_path) / name)


def docs_routes() -> list[Route]:
    return [
        named_route("/openapi.json", _openapi, "openapi.json"),
        named_route("/rest.yaml", _openapi_yaml, "rest.yaml"),
        named_route("/docs", _page, "docs"),
        named_route("/docs/{name}", _asset, "docs-asset"),
    ]
