"""Root tables of the `dir` backend whose names are not plain ASCII, or hold `%`, round-trip
over HTTP: the native lookup percent-encodes `<name>.lance` and misses them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
NAMES = ["été", "%2A", "表", "a%b"]


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("names-root")
    with running_server("dir", {"root": str(root)}) as url, \
            httpx.Client(base_url=url, timeout=60) as client:
        yield client


@pytest.mark.parametrize("name", NAMES)
def test_a_root_table_round_trips(http: httpx.Client, name: str) -> None:
    route = f"/v1/table/{quote(name, safe='')}"
    created = http.post(f"{route}/create", content=arrow_stream(sample_table(4)), headers=ARROW)
    assert created.status_code == 200, created.text
    assert name in http.get("/v1/namespace/$/table/list").json()["tables"]
    described = http.post(f"{route}/describe", json={})
    assert described.status_code == 200, described.text
    assert Path(described.json()["location"]).name == f"{name}.lance"
    assert http.post(f"{route}/exists", json={}).status_code == 200
    assert http.post(f"{route}/count_rows", json={}).json() == 4
    by_id = http.post("/CountTableRows", json={"id": [name]})
    assert by_id.json() == {"count": 4}
    assert http.post(f"{route}/drop", json={}).status_code == 200
    assert http.post(f"{route}/exists", json={}).status_code == 404
    assert name not in http.get("/v1/namespace/$/table/list").json()["tables"]
