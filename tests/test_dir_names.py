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


@pytest.mark.parametrize("name", ["ünï", "%41"])
def test_every_kind_of_operation_reaches_such_a_root_table(http: httpx.Client, name: str) -> None:
    route = f"/v1/table/{quote(name, safe='')}"
    created = http.post(f"{route}/create", content=arrow_stream(sample_table(4)), headers=ARROW)
    assert created.status_code == 200, created.text
    again = http.post(f"{route}/declare", json={})
    assert (again.status_code, again.json()["code"]) == (409, 5)
    inserted = http.post(f"{route}/insert", content=arrow_stream(sample_table(3, 100)),
                         headers=ARROW)
    assert inserted.status_code == 200, inserted.text
    assert inserted.json()["num_inserted_rows"] == 3
    assert http.post(f"{route}/count_rows", json={}).json() == 7
    deleted = http.post(f"{route}/delete", json={"predicate": "id >= 100"})
    assert deleted.status_code == 200, deleted.text
    assert http.post(f"{route}/count_rows", json={}).json() == 4
    tagged = http.post(f"{route}/tags/create", json={"tag": "first", "version": 1})
    assert tagged.status_code == 200, tagged.text
    tags = http.post(f"{route}/tags/list", json={})
    assert list(tags.json()["tags"]) == ["first"], tags.text
    versions = http.post(f"{route}/version/list", json={})
    assert len(versions.json()["versions"]) == 3, versions.text
    stats = http.post(f"{route}/stats", json={})
    assert stats.status_code == 200, stats.text
    assert http.post(f"{route}/drop", json={}).status_code == 200


def test_a_renamed_root_table_frees_its_name_and_is_listed_under_the_new_one(
    http: httpx.Client,
) -> None:
    for name, rows in (("old_a", 4), ("old_c", 3)):
        created = http.post(f"/v1/table/{name}/create", content=arrow_stream(sample_table(rows)),
                            headers=ARROW)
        assert created.status_code == 200, created.text
    assert http.post("/v1/namespace/nsr/create", json={}).status_code == 200
    assert http.post("/v1/table/old_a/rename", json={"new_table_name": "new_b"}).status_code == 200
    moved = http.post("/v1/table/old_c/rename",
                      json={"new_table_name": "y", "new_namespace_id": ["nsr"]})
    assert moved.status_code == 200, moved.text
    listed = set(http.get("/v1/namespace/$/table/list").json()["tables"])
    assert {"new_b"} <= listed and not {"old_a", "old_c"} & listed
    assert http.get("/v1/namespace/nsr/table/list").json()["tables"] == ["y"]
    recreated = http.post("/v1/table/old_a/create", content=arrow_stream(sample_table(2)),
                          headers=ARROW)
    assert recreated.status_code == 200, recreated.text
    counts = [http.post(f"/v1/table/{t}/count_rows", json={}).json()
              for t in ("old_a", "new_b", "nsr$y")]
    assert counts == [2, 4, 3]
    described = http.post("/v1/table/new_b/describe", json={}).json()
    assert Path(described["location"]).name == "new_b.lance"


def test_a_hundred_nesting_levels_work_and_a_table_too_deep_to_store_is_13(
    http: httpx.Client,
) -> None:
    levels = [f"deep{level}" for level in range(100)]
    for depth in range(1, len(levels) + 1):
        created = http.post(f"/v1/namespace/{'$'.join(levels[:depth])}/create", json={})
        assert created.status_code == 200, (depth, created.text)
    listed = http.get(f"/v1/namespace/{'$'.join(levels[:-1])}/list").json()
    assert listed["namespaces"] == ["deep99"]
    too_deep = http.post(f"/v1/table/{'$'.join(levels)}$t/create",
                         content=arrow_stream(sample_table(3)), headers=ARROW)
    assert (too_deep.status_code, too_deep.json()["code"]) == (400, 13)
    assert http.get(f"/v1/namespace/{'$'.join(levels)}/table/list").json()["tables"] == []
    shallow = http.post(f"/v1/table/{'$'.join(levels[:10])}$t/create",
                        content=arrow_stream(sample_table(3)), headers=ARROW)
    assert shallow.status_code == 200, shallow.text
