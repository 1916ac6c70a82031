"""InsertIntoTable reads its Arrow body as it arrives (`app.streamed_bodies`): what a body holds
in a worker is the piece being read and the batch being decoded, not the whole body, so an
insert larger than everything the server may hold for bodies at once is written; the limits
still apply mid-stream, and a body that fails half-way commits nothing."""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import lancedb
import pyarrow as pa
import pytest

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
MAX_BODY = 8 * 2**20
MAX_IN_FLIGHT = 3 * 2**20


def _batched_stream(table: pa.Table, rows_per_batch: int) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=rows_per_batch)
    return sink.getvalue()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "root"
    with running_server("dir", {"root": str(root)}, max_body_bytes=MAX_BODY,
                        max_in_flight_body_bytes=MAX_IN_FLIGHT) as url:
        created = httpx.post(f"{url}/v1/table/t/create", headers=ARROW,
                             content=arrow_stream(sample_table(3)))
        created.raise_for_status()
        yield url, root


def _rows(url: str) -> int:
    return int(httpx.post(f"{url}/v1/table/t/count_rows", json={}, timeout=60).json())


def test_an_insert_larger_than_all_bodies_held_at_once_is_written_as_it_arrives(
    served: tuple[str, Path],
) -> None:
    """A 6 MiB body of small batches, where the server may hold 3 MiB of bodies at once: an
    insert reads it as it arrives (200, every row read back); a merge, which reads its body
    whole, is refused (503 / code 17) without writing anything."""
    url, _ = served
    table = sample_table(120_000, start=100)
    body = _batched_stream(table, 5_000)
    assert MAX_IN_FLIGHT < len(body) < MAX_BODY
    merged = httpx.post(f"{url}/v1/table/t/merge_insert?on=id", headers=ARROW, content=body,
                        timeout=60)
    assert (merged.status_code, merged.json()["code"]) == (503, 17)
    inserted = httpx.post(f"{url}/v1/table/t/insert", headers=ARROW, content=body, timeout=60)
    assert inserted.status_code == 200, inserted.text
    assert _rows(url) == 3 + 120_000


def test_a_body_past_the_limit_mid_stream_is_413_and_commits_nothing(
    served: tuple[str, Path],
) -> None:
    """Sent without a length (chunked), the body passes `max_body_bytes` after batches the
    writer has read already: 413 / code 13 naming the limit, and no row written."""
    url, root = served
    body = _batched_stream(sample_table(200_000, start=100), 5_000)
    assert len(body) > MAX_BODY

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 256 * 1024):
            yield body[start:start + 256 * 1024]

    answer = httpx.post(f"{url}/v1/table/t/insert", headers=ARROW, content=chunks(), timeout=60)
    assert (answer.status_code, answer.json()["code"]) == (413, 13), answer.text
    assert "max_body_bytes" in answer.json()["error"]
    assert _rows(url) == 3
    assert lance.dataset(str(root / "t.lance")).version == 1


def test_a_stream_cut_off_after_good_batches_is_400_and_commits_nothing(
    served: tuple[str, Path],
) -> None:
    url, root = served
    body = _batched_stream(sample_table(10_000, start=100), 1_000)
    answer = httpx.post(f"{url}/v1/table/t/insert", headers=ARROW,
                        content=body[: len(body) * 2 // 3], timeout=60)
    assert (answer.status_code, answer.json()["code"]) == (400, 13), answer.text
    assert "not an Arrow IPC stream" in answer.json()["error"]
    assert _rows(url) == 3
    assert lance.dataset(str(root / "t.lance")).version == 1


def test_lancedb_adds_many_batches_as_embedded_lancedb_does(
    served: tuple[str, Path], tmp_path: Path,
) -> None:
    url, _ = served
    batches = sample_table(20_000, start=100).to_batches(max_chunksize=1_000)
    remote = lancedb.connect("db://lance", api_key="any", host_override=url,
                             region="local").open_table("t")
    remote.add(pa.RecordBatchReader.from_batches(batches[0].schema, iter(batches)))
    local = lancedb.connect(str(tmp_path / "embedded")).create_table(
        "t", sample_table(3))
    local.add(pa.RecordBatchReader.from_batches(batches[0].schema, iter(batches)))
    assert remote.count_rows() == local.count_rows() == 20_003
    served_ids = remote.search().limit(30_000).to_arrow().sort_by("id").column("id")
    assert served_ids == local.search().limit(30_000).to_arrow().sort_by("id").column("id")


def test_slow_senders_of_inserts_hold_no_thread_other_requests_need(tmp_path: Path) -> None:
    """Inserts whose clients stop sending wait on threads of their own: with every backend
    thread of the server (2) outnumbered by such inserts (3), a count is answered at once."""
    root = tmp_path / "root"
    with running_server("dir", {"root": str(root)}, max_concurrency=2,
                        body_read_timeout=60) as url:
        httpx.post(f"{url}/v1/table/t/create", headers=ARROW,
                   content=arrow_stream(sample_table(3))).raise_for_status()
        body = _batched_stream(sample_table(50_000, start=100), 1_000)
        host, port = url.removeprefix("http://").split(":")
        stalled = []
        for _ in range(3):
            connection = socket.create_connection((host, int(port)), timeout=30)
            connection.sendall(
                f"POST /v1/table/t/insert HTTP/1.1\r\nhost: {host}\r\ncontent-type: "
                f"{ARROW['content-type']}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
                + body[: len(body) // 2])
            stalled.append(connection)
        try:
            counted = httpx.post(f"{url}/v1/table/t/count_rows", json={}, timeout=10)
            assert counted.json() == 3
        finally:
            for connection in stalled:
                connection.close()
