"""One Lance session per worker, shared by every table the backend opens: an index loaded
once (by PrewarmTableIndex, or the first search) stays loaded for the native and the generic
operations alike, and a table dropped and created again at the same path reads as new. A
session is renewed once the versions opened would have filled its metadata cache, with the
indexes prewarmed loaded into the new one first."""

from __future__ import annotations

import threading
from pathlib import Path

import lance
import pyarrow as pa
from lance_namespace import (
    CreateTableIndexRequest,
    CreateTableRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    QueryTableRequest,
)
from lance_namespace_urllib3_client.models import QueryTableRequestVector

from app.session_renewal import SessionRenewer
from app.settings import Settings
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


def _renewable(tmp_path: Path, versions: int = 0) -> tuple[object, list[lance.Session]]:
    """A dir backend whose sessions are made by `new_session` (each recorded); with
    `versions`, a table `t` written and opened that many times after its creation."""
    made: list[lance.Session] = []
    namespace = load_namespace("dir", {"root": str(tmp_path)}, session=_new_session(made))
    if versions:
        namespace.create_table(CreateTableRequest(id=["t"]), _rows(10))
        _write_versions(namespace, "t", versions)
    return namespace, made


def _new_session(made: list[lance.Session]) -> lance.Session:
    session = lance.Session(index_cache_size_bytes=1 << 28, metadata_cache_size_bytes=1 << 26)
    made.append(session)
    return session


def _write_versions(namespace, table: str, count: int) -> None:
    for round_ in range(count):
        namespace.insert_into_table(InsertIntoTableRequest(id=[table]), _rows(1, round_))
        _search(namespace, table)  # opens the new version


def test_a_session_is_renewed_once_the_versions_opened_would_fill_its_metadata_cache(
    tmp_path: Path,
) -> None:
    namespace, made = _renewable(tmp_path, versions=6)
    # Seven versions seen: about 315 KiB of metadata, which a 1 MiB cache still holds.
    assert not namespace.renew_lance_session(lambda: _new_session(made), 1 << 20)
    assert len(made) == 1
    assert namespace.renew_lance_session(lambda: _new_session(made), 256 << 10)
    assert len(made) == 2 and namespace.lance_session is made[1]
    # The new session serves the latest version, and starts counting again.
    assert len(_search(namespace, k=20)) == 16
    assert not namespace.renew_lance_session(lambda: _new_session(made), 256 << 10)


def test_the_indexes_prewarmed_are_loaded_into_the_renewed_session_first(
    tmp_path: Path,
) -> None:
    namespace, made = _renewable(tmp_path)
    _indexed(namespace, "warmed")
    _indexed(namespace, "searched")
    _indexed(namespace, "dropped")
    for table in ("warmed", "dropped"):
        namespace.prewarm_table_index(PrewarmTableIndexRequest(id=[table],
                                                               index_name="vector_idx"))
    _search(namespace, "searched")
    namespace.drop_table(DropTableRequest(id=["dropped"]))
    assert namespace.renew_lance_session(lambda: _new_session(made), 1)
    renewed = made[-1]
    loaded = renewed.index_cache_size_bytes()
    assert loaded > 2_000  # the prewarmed index, before any search
    _search(namespace, "warmed")
    assert renewed.index_cache_size_bytes() - loaded < 2_000
    _search(namespace, "searched")  # only searched: loaded again by its search
    assert renewed.index_cache_size_bytes() - loaded > 2_000
    # The dropped table's index is no longer loaded into the next session.
    _write_versions(namespace, "warmed", 1)
    assert namespace.renew_lance_session(lambda: _new_session(made), 1)
    assert 2_000 < made[-1].index_cache_size_bytes() < loaded + 2_000


def test_the_server_renews_a_session_only_when_asked_to(tmp_path: Path) -> None:
    namespace, made = _renewable(tmp_path, versions=3)
    never = SessionRenewer(namespace, Settings(impl="dir", lance_session_renewal=0))
    assert not never.check()
    renewer = SessionRenewer(namespace, Settings(impl="dir", lance_metadata_cache_bytes=1))
    assert renewer.check() and renewer.renewals == 1
    assert namespace.lance_session is not made[0]
    assert not renewer.check()  # nothing opened since


def test_the_renewing_thread_hands_the_old_sessions_memory_back_after_a_renewal(
    tmp_path: Path,
) -> None:
    namespace, made = _renewable(tmp_path, versions=3)
    released = threading.Event()
    renewer = SessionRenewer(
        namespace, Settings(impl="dir", lance_session_renewal=0.05,
                            lance_metadata_cache_bytes=1), released.set)
    renewer.start()
    try:
        assert released.wait(30)
    finally:
        renewer.stop()
    assert renewer.renewals == 1 and namespace.lance_session is not made[0]
