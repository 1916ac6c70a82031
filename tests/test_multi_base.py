"""Multi-base tables the operator allows (issue 68, item 5): a table whose manifest names
extra bases (pylance's `initial_bases` / `add_bases`) is served when each base lies in an
external location bound to the table's namespace, recorded as the table's when it is
registered; a base anywhere else, a base another table has, or one added after registration
is refused at every open. On a local `dir` root, through the server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest

from backends.owner_record import read_record
from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream


def rows(*values: int) -> pa.Table:
    return pa.table({"v": list(values)})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    bound = {str(tmp_path / "ext" / "sales"): "sales", str(tmp_path / "ext" / "hr"): "hr"}
    with running_server("dir", {"root": str(tmp_path / "root")},
                        external_locations=bound) as url:
        for namespace in ("sales", "hr"):
            post(url, f"namespace/{namespace}/create", {}).raise_for_status()
        yield url


def post(url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v1/{path}", json=body, timeout=30)


def multi_base(location: Path, base: Path, *values: int) -> None:
    """A table at `location` whose rows are written to its extra base `base`."""
    lance.write_dataset(rows(*values), str(location),
                        initial_bases=[lance.DatasetBasePath(str(base), name="extra")],
                        target_bases=["extra"])


def refused(answer: httpx.Response) -> bool:
    return ((answer.status_code, answer.json().get("code")) == (400, 13)
            and "outside this table" in answer.json()["error"])


def test_a_base_in_the_namespaces_external_location_is_read_as_the_tables(
    served: str, tmp_path: Path,
) -> None:
    url, root, base = served, tmp_path / "root", tmp_path / "ext" / "sales" / "b1"
    multi_base(root / "sales" / "mb", base, 1, 2, 3)
    answer = post(url, "table/sales$mb/register", {"location": str(root / "sales" / "mb")})
    assert answer.status_code == 200, answer.text
    assert read_record(str(base), None).owner == ["sales", "mb"]
    assert post(url, "table/sales$mb/count_rows", {}).json() == 3
    inserted = httpx.post(f"{url}/v1/table/sales$mb/insert", timeout=30,
                          content=arrow_stream(rows(4)),
                          headers={"content-type": "application/vnd.apache.arrow.stream"})
    assert inserted.status_code == 200, inserted.text

    renamed = post(url, "table/sales$mb/rename", {"new_table_name": "mb2"})
    assert renamed.status_code == 200, renamed.text
    assert post(url, "table/sales$mb2/count_rows", {}).json() == 4
    assert read_record(str(base), None).owner == ["sales", "mb2"]


def test_a_base_not_bound_to_the_namespace_or_another_tables_is_refused(
    served: str, tmp_path: Path,
) -> None:
    url, root, ext = served, tmp_path / "root", tmp_path / "ext"
    multi_base(root / "sales" / "elsewhere", tmp_path / "unbound" / "b", 1)
    multi_base(root / "sales" / "in_hr", ext / "hr" / "b", 1)
    for table in ("elsewhere", "in_hr"):
        answer = post(url, f"table/sales${table}/register",
                      {"location": str(root / "sales" / table)})
        assert refused(answer), answer.text
    assert read_record(str(ext / "hr" / "b"), None) is None

    multi_base(root / "sales" / "first", ext / "sales" / "shared", 1)
    multi_base(root / "sales" / "second", ext / "sales" / "shared", 2)
    assert post(url, "table/sales$first/register",
                {"location": str(root / "sales" / "first")}).status_code == 200
    answer = post(url, "table/sales$second/register", {"location": str(root / "sales" / "second")})
    assert (answer.status_code, answer.json()["code"]) == (400, 13), answer.text
    assert "another table owns" in answer.json()["error"]
    assert post(url, "table/sales$second/exists", {}).status_code == 404


def test_a_base_added_after_registration_is_refused_at_every_open(
    served: str, tmp_path: Path,
) -> None:
    url, root, ext = served, tmp_path / "root", tmp_path / "ext"
    multi_base(root / "sales" / "grows", ext / "sales" / "b1", 1)
    assert post(url, "table/sales$grows/register",
                {"location": str(root / "sales" / "grows")}).status_code == 200
    dataset = lance.dataset(str(root / "sales" / "grows"))
    dataset = dataset.add_bases([lance.DatasetBasePath(str(ext / "sales" / "b2"), name="b2")])
    lance.write_dataset(rows(2), dataset, mode="append", target_bases=["b2"])
    for path in ("count_rows", "describe"):
        body = {"load_detailed_metadata": True} if path == "describe" else {}
        assert refused(post(url, f"table/sales$grows/{path}", body))

