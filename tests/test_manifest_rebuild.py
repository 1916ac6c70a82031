"""The `dir` catalog rebuilt when none of its recent versions reads (issue 69): every data
file of the root's `__manifest` gone, the next request is answered 503 / code 17 ("rebuilt")
and from then on every table whose data is there is found again under its own id (a renamed
one under the id its ownership record names), a declared table too, a dropped one not, and
their namespaces exist; the rows read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def post(url: str, path: str, body: dict[str, Any] | pa.Table) -> httpx.Response:
    if isinstance(body, pa.Table):
        return httpx.post(f"{url}/v1/{path}", content=arrow_stream(body), headers=ARROW,
                          timeout=30)
    return httpx.post(f"{url}/v1/{path}", json=body, timeout=30)


def test_a_manifest_with_no_version_that_reads_is_rebuilt_from_the_tables(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    with running_server("dir", {"root": str(root)}, metadata_cache=False) as url:
        for path, body in (("namespace/a/create", {}), ("namespace/a$b/create", {}),
                           ("table/a$t/create", pa.table({"v": [1, 2, 3]})),
                           ("table/a$b$deep/create", pa.table({"v": [7]})),
                           ("table/r/create", pa.table({"v": [5]})),
                           ("table/a$u/declare", {}),
                           ("table/a$old/create", pa.table({"v": [9, 9]})),
                           ("table/a$old/rename", {"new_table_name": "new"}),
                           ("table/a$gone/create", pa.table({"v": [0]})),
                           ("table/a$gone/drop", {})):
            assert post(url, path, body).status_code == 200, path
        for data_file in (root / "__manifest" / "data").iterdir():
            data_file.unlink()  # no version of the catalog reads now

        first = httpx.get(f"{url}/v1/namespace/a/table/list", timeout=30)
        assert (first.status_code, first.json()["code"]) == (503, 17), first.text
        assert "rebuilt" in first.json()["error"]

        listed = httpx.get(f"{url}/v1/namespace/a/table/list", timeout=30)
        assert sorted(listed.json()["tables"]) == ["new", "t", "u"], listed.text
        counts = {table: post(url, f"table/{table}/count_rows", {}).json()
                  for table in ("a$t", "a$new", "a$b$deep", "r")}
        assert counts == {"a$t": 3, "a$new": 2, "a$b$deep": 1, "r": 1}
        assert post(url, "table/a$u/describe", {}).status_code == 200
        assert post(url, "table/a$gone/exists", {}).status_code == 404
        assert post(url, "table/a$old/exists", {}).status_code == 404
        assert post(url, "table/a$t/insert", pa.table({"v": [4]})).status_code == 200
        assert post(url, "table/a$t/count_rows", {}).json() == 4


def test_a_rebuild_keeps_what_its_newest_whole_version_held(tmp_path: Path) -> None:
    """The two latest versions of the catalog damaged (their data files gone): the version
    before them is the rebuild's base, so a namespace's properties and a namespace without
    tables survive; what came after it is found again from the tables."""
    root = tmp_path / "root"
    with running_server("dir", {"root": str(root)}, metadata_cache=False) as url:
        assert post(url, "namespace/p/create", {"properties": {"team": "x"}}).status_code == 200
        assert post(url, "namespace/empty/create", {}).status_code == 200
        base = lance.dataset(str(root / "__manifest"))
        kept = {file.path for fragment in base.get_fragments()
                for file in fragment.metadata.files}
        for path, body in (("table/p$t/create", pa.table({"v": [1]})),
                           ("table/p$u/create", pa.table({"v": [2, 3]}))):
            assert post(url, path, body).status_code == 200, path
        for data_file in (root / "__manifest" / "data").iterdir():
            if data_file.name not in kept:
                data_file.unlink()

        first = post(url, "namespace/p/describe", {})
        assert (first.status_code, first.json()["code"]) == (503, 17), first.text
        assert "rebuilt" in first.json()["error"]
        assert post(url, "namespace/p/describe", {}).json()["properties"] == {"team": "x"}
        assert post(url, "namespace/empty/exists", {}).status_code == 200
        counts = {table: post(url, f"table/{table}/count_rows", {}).json()
                  for table in ("p$t", "p$u")}
        assert counts == {"p$t": 1, "p$u": 2}
