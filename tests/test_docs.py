"""Swagger UI at /docs and /openapi.json (rest.yaml and the POST /<OperationId> routes it
implies), with no asset fetched from the web."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import yaml

from app.spec import SPEC_PATH, load_operations
from tests.support.adapter import running_server


def test_openapi_json_is_rest_yaml_with_the_operation_id_routes(dir_server: str) -> None:
    # The document is built on the first request: seconds on a loaded machine.
    answer = httpx.get(f"{dir_server}/openapi.json", timeout=60)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    document, spec = answer.json(), yaml.safe_load(SPEC_PATH.read_text())
    assert {key: value for key, value in document.items() if key not in ("paths", "servers")} == {
        key: value for key, value in spec.items() if key not in ("paths", "servers")}
    assert document["servers"] == [{"url": ".", "description": "this server"}]
    assert all(document["paths"][path] == _inlined(item, spec["components"]["parameters"])
               for path, item in spec["paths"].items())
    added = set(document["paths"]) - set(spec["paths"])
    assert added == {f"/{op.operation_id}" for op in load_operations() if op.path is not None}
    as_yaml = httpx.get(f"{dir_server}/rest.yaml", timeout=60)
    assert as_yaml.headers["content-type"].startswith("application/yaml")
    assert yaml.safe_load(as_yaml.text) == document


def _inlined(value: object, parameters: dict) -> object:
    """`value` with every reference to one of `parameters` replaced by it."""
    if isinstance(value, list):
        return [_inlined(item, parameters) for item in value]
    if not isinstance(value, dict):
        return value
    reference = value.get("$ref", "")
    if reference.startswith("#/components/parameters/"):
        return parameters[reference.rsplit("/", 1)[-1]]
    return {key: _inlined(item, parameters) for key, item in value.items()}


def test_the_docs_page_loads_every_asset_from_the_server_itself(dir_server: str) -> None:
    page = httpx.get(f"{dir_server}/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    references = re.findall(r'(?:src|href|url:)\s*=?\s*"([^"]+)"', page.text)
    assert sorted(references) == sorted(["docs/swagger-ui.css", "docs/favicon-32x32.png",
                                         "docs/swagger-ui-bundle.js", "openapi.json"])
    assert "://" not in page.text  # nothing from a CDN: deployments may have no internet
    for reference in references:
        asset = httpx.get(f"{dir_server}/{reference}")
        assert asset.status_code == 200, reference
        assert len(asset.content) > 500, reference
    script = httpx.get(f"{dir_server}/docs/swagger-ui-bundle.js").text
    assert "SwaggerUIBundle" in script


def test_only_the_ui_assets_are_served(dir_server: str) -> None:
    assert httpx.get(f"{dir_server}/docs/index.html").status_code == 404
    escape = httpx.get(f"{dir_server}/docs/..%2F..%2F..%2F..%2Fetc%2Fpasswd")
    assert escape.status_code >= 400 and "root:" not in escape.text


def test_the_docs_work_behind_a_gateway_prefix(tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}, root_path="/lance") as url:
        page = httpx.get(f"{url}/lance/docs")
        spec = httpx.get(f"{url}/lance/openapi.json")
        asset = httpx.get(f"{url}/lance/docs/swagger-ui.css")
    assert (page.status_code, spec.status_code, asset.status_code) == (200, 200, 200)
