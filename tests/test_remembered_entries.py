"""The `dir` backend's remembered catalog entries (`backends.directory.entries`): a table's
entry is answered again without the native lookup only while the root's manifest and
directory are unchanged, so a rename, a drop and a new table made by another server on the
same root (a replica) are seen by the next request; an entry handed out is a copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DescribeTableRequest,
    DropTableRequest,
    RenameTableRequest,
    TableNotFoundError,
)

from backends import load_namespace
from backends.directory.backend import DirectoryBackend


def _rows(count: int) -> bytes:
    table = pa.table({"id": pa.array(range(count), pa.int64())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _server(root: Path) -> DirectoryBackend:
    """One server's backend on `root`, as a worker holds it (with a Lance session)."""
    namespace = load_namespace("dir", {"root": str(root)})
    namespace.use_lance_session(lance.Session())
    return namespace.backend


def _count(backend: DirectoryBackend, table_id: list[str]) -> int:
    return backend.count_table_rows(CountTableRowsRequest(id=table_id)).count


@pytest.fixture
def replicas(tmp_path: Path) -> tuple[DirectoryBackend, DirectoryBackend]:
    first, second = _server(tmp_path), _server(tmp_path)
    first.create_namespace(CreateNamespaceRequest(id=["n"]))
    first.create_table(CreateTableRequest(id=["n", "t"]), _rows(3))
    first.create_table(CreateTableRequest(id=["r"]), _rows(4))
    return first, second


def _location(backend: DirectoryBackend, table_id: list[str]) -> str:
    return backend.describe_table_entry(DescribeTableRequest(id=table_id)).location


def test_a_rename_by_another_server_is_seen_at_once(replicas) -> None:
    first, second = replicas
    for table_id in (["n", "t"], ["r"]):
        _location(first, table_id)  # remembered
    second.rename_table(RenameTableRequest(id=["n", "t"], new_table_name="u"))
    second.rename_table(RenameTableRequest(id=["r"], new_table_name="s"))
    for old in (["n", "t"], ["r"]):
        with pytest.raises(TableNotFoundError):
            first.describe_table_entry(DescribeTableRequest(id=old))
    assert (_count(first, ["n", "u"]), _count(first, ["s"])) == (3, 4)


def test_a_table_dropped_and_made_again_elsewhere_is_read_where_it_now_is(replicas) -> None:
    first, second = replicas
    assert _count(first, ["n", "t"]) == 3  # its entry remembered
    second.drop_table(DropTableRequest(id=["n", "t"]))
    with pytest.raises(TableNotFoundError):
        first.count_table_rows(CountTableRowsRequest(id=["n", "t"]))
    second.create_table(CreateTableRequest(id=["n", "t"]), _rows(7))
    assert _count(first, ["n", "t"]) == 7
    assert _location(first, ["n", "t"]) == _location(second, ["n", "t"])


def test_an_entry_handed_out_is_a_copy(replicas) -> None:
    first, _ = replicas
    entry = first.describe_table_entry(DescribeTableRequest(id=["n", "t"]))
    location = entry.location
    entry.location = "/elsewhere"
    assert _location(first, ["n", "t"]) == location


def test_a_root_without_a_manifest_follows_its_directories(tmp_path: Path) -> None:
    """Tables other tools wrote as `<name>.lance` under a root the server never wrote to (no
    manifest yet): found, remembered, and gone with their directory."""
    lance.write_dataset(pa.table({"id": [1, 2]}), str(tmp_path / "a.lance"))
    backend = _server(tmp_path)
    assert not (tmp_path / "__manifest").exists()
    assert _count(backend, ["a"]) == _count(backend, ["a"]) == 2
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), str(tmp_path / "b.lance"))
    shutil.rmtree(tmp_path / "a.lance")
    assert _count(backend, ["b"]) == 3
    with pytest.raises(TableNotFoundError):
        backend.describe_table_entry(DescribeTableRequest(id=["a"]))
