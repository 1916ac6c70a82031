"""The same lifecycle through the spec's `POST /<OperationId>` routes with plain httpx."""

from __future__ import annotations

import httpx
import pyarrow as pa

from tests.support.lance_data import arrow_stream, read_arrow_file, sample_table

ARROW_STREAM = {"content-type": "application/vnd.apache.arrow.stream"}


def call(client: httpx.Client, operation: str, body: dict | None = None) -> httpx.Response:
    return client.post(f"/{operation}", json=body or {})


def test_lifecycle_through_operation_id_routes(dir_server: str) -> None:
    with httpx.Client(base_url=dir_server) as client:
        assert call(client, "CreateNamespace", {"id": ["a"], "properties": {"k": "v"}}).json() == {
            "properties": {"k": "v"}
        }
        call(client, "CreateNamespace", {"id": ["a", "b"]}).raise_for_status()
        assert call(client, "ListNamespaces", {"id": []}).json()["namespaces"] == ["a"]
        assert call(client, "ListNamespaces", {"id": ["a"]}).json()["namespaces"] == ["b"]
        assert call(client, "DescribeNamespace", {"id": ["a"]}).json()["properties"] == {"k": "v"}
        assert call(client, "NamespaceExists", {"id": ["a", "b"]}).status_code == 200
        missing = call(client, "NamespaceExists", {"id": ["a", "x"]})
        assert (missing.status_code, missing.json()["code"]) == (404, 1)

        rows = sample_table(30)
        created = client.post(
            "/CreateTable", params={"id": "a$b$t"}, content=arrow_stream(rows), headers=ARROW_STREAM
        )
        assert created.status_code == 200, created.text
        assert created.json()["version"] == 1
        appended = client.post(
            "/InsertIntoTable",
            params={"id": "a.b.t", "delimiter": ".", "mode": "Append"},
            content=arrow_stream(sample_table(10, start=30)),
            headers=ARROW_STREAM,
        )
        assert appended.json()["version"] == 2
        assert call(client, "CountTableRows", {"id": ["a", "b", "t"]}).json() == {"count": 40}
        queried = call(client, "QueryTable", {"id": ["a", "b", "t"], "k": 100, "vector": {}})
        assert queried.headers["content-type"] == "application/vnd.apache.arrow.file"
        everything = pa.concat_tables([rows, sample_table(10, start=30)])
        assert read_arrow_file(queried.content).sort_by("id").equals(everything)
        described = call(
            client, "DescribeTable", {"id": ["a", "b", "t"], "load_detailed_metadata": True}
        ).json()
        assert described["version"] == 2
        assert [f["name"] for f in described["schema"]["fields"]] == ["id", "name", "vector"]
        versions = call(client, "ListTableVersions", {"id": ["a", "b", "t"]}).json()["versions"]
        assert [v["version"] for v in versions] == [1, 2]
        assert call(client, "ListTables", {"id": ["a", "b"]}).json()["tables"] == ["t"]
        assert call(client, "TableExists", {"id": ["a", "b", "t"]}).status_code == 200

        conflict = call(client, "CreateNamespace", {"id": ["a"]})
        assert (conflict.status_code, conflict.json()["code"]) == (409, 2)
        not_empty = call(client, "DropNamespace", {"id": ["a", "b"]})
        assert (not_empty.status_code, not_empty.json()["code"]) == (409, 3)

        assert call(client, "DropTable", {"id": ["a", "b", "t"]}).json()["id"] == ["a", "b", "t"]
        gone = call(client, "DescribeTable", {"id": ["a", "b", "t"]})
        assert (gone.status_code, gone.json()["code"]) == (404, 4)
        call(client, "DropNamespace", {"id": ["a", "b"]}).raise_for_status()
        call(client, "DropNamespace", {"id": ["a"]}).raise_for_status()
        assert call(client, "ListNamespaces", {}).json()["namespaces"] == []


def test_v1_answers_keep_the_upstream_wire_format(dir_server: str) -> None:
    with httpx.Client(base_url=dir_server) as client:
        client.post("/v1/namespace/n/create", json={}).raise_for_status()
        client.post(
            "/v1/table/n$t/create", content=arrow_stream(sample_table(7)), headers=ARROW_STREAM
        ).raise_for_status()
        count = client.post("/v1/table/n$t/count_rows", json={})
        assert count.headers["content-type"] == "application/json"
        assert count.text == "7"
        exists = client.post("/v1/table/n$t/exists", json={})
        assert (exists.status_code, exists.content) == (200, b"")
        assert client.get("/v1/namespace/$/list").json() == {"namespaces": ["n"]}
        error = client.post("/v1/table/n$missing/describe", json={}).json()
        assert set(error) == {"error", "code", "detail", "instance"}
        assert error["code"] == 4
        assert error["instance"] == "/v1/table/n$missing/describe"
