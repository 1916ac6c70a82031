"""One Lance session per worker, shared by every table the backend opens: an index loaded
once (by PrewarmTableIndex, or the first search) stays loaded for the native and the generic
operations alike, and a table dropped and created again at the same path reads as new."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
from lance_namespace import (
    CreateTableIndexRequest,
    CreateTableRequest,
    DropTableRequest,
    QueryTableRequest,
)
from lance_namespace_urllib3_client.models import QueryTableRequestVector

from backends import load_namespace
from backends.core.extensions import PrewarmTableIndexRequest


def _rows(count: int, offset: float = 0.0) -> bytes:
    vectors = [[float(i) + offset, float(i % 7), 1.0, 2.0] for i in range(count)]
    table = pa.table({"id": list(range(count)),
                      "vector": pa.array(vectors, pa.list_(pa.float32(), 4))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _search(namespace, table: str = "t", k: int = 3) -> list[int]:
    answer = namespace.query_table(QueryTableRequest(
        id=[table], k=k, vector=QueryTableRequestVector(single_vector=[5.0, 5.0, 1.0, 2.0]),
        ))
    return pa.ipc.open_file(answer.data).read_all().column("id").to_pylist()


def _indexed(namespace, table: str) -> None:
    namespace.create_table(CreateTableRequest(id=[table]), _rows(300))
    namespace.create_table_index(CreateTableIndexRequest(
        id=[table], column="vector", index_type="IVF_FLAT", distance_type="l2"))


def test_an_index_loaded_once_serves_the_native_and_generic_operations(tmp_path: Path) -> None:
    session = lance.Session(index_cache_size_bytes=1 << 28, metadata_cache_size_bytes=1 << 26)
    namespace = load_namespace("dir", {"root": str(tmp_path)}, session=session)
    _indexed(namespace, "warmed")
    _indexed(namespace, "searched")
    # An IVF index of 300 rows takes a few kilobytes in the cache; small entries take bytes.
    loaded = 2_000

    before = session.index_cache_size_bytes()
    prewarm = PrewarmTableIndexRequest(id=["warmed"], index_name="vector_idx")
    namespace.prewarm_table_index(prewarm)  # a generic open
    after_prewarm = session.index_cache_size_bytes()
    assert after_prewarm - before > loaded
    first = _search(namespace, "warmed")  # pylance's native query
    assert session.index_cache_size_bytes() - after_prewarm < loaded
    assert _search(namespace, "warmed") == first

    before = session.index_cache_size_bytes()
    _search(namespace, "searched")
    after_search = session.index_cache_size_bytes()
    assert after_search - before > loaded
    namespace.prewarm_table_index(prewarm.model_copy(update={"id": ["searched"]}))
    assert session.index_cache_size_bytes() - after_search < loaded


def test_a_table_created_again_at_the_same_path_reads_as_new(tmp_path: Path) -> None:
    session = lance.Session(index_cache_size_bytes=1 << 28, metadata_cache_size_bytes=1 << 26)
    namespace = load_namespace("dir", {"root": str(tmp_path)}, session=session)
    namespace.create_table(CreateTableRequest(id=["t"]), _rows(10))
    assert len(_search(namespace, k=20)) == 10
    namespace.drop_table(DropTableRequest(id=["t"]))
    namespace.create_table(CreateTableRequest(id=["t"]), _rows(4))
    assert sorted(_search(namespace, k=20)) == [0, 1, 2, 3]


def test_a_server_of_one_worker_opens_its_tables_with_a_session(tmp_path: Path) -> None:
    """`serve` with one worker serves with the backend it loaded itself (no worker process
    loads another): that one too opens its tables with a Lance session and remembers their
    latest versions."""
    from app.cli import served_namespace
    from app.settings import Settings

    served = served_namespace(Settings(impl="dir", properties={"root": str(tmp_path)}))
    assert served.backend.lance_session is not None
    assert served.backend.latest_versions is not None
