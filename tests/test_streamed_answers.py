"""QueryTable answers are written as Lance's scanner reads them (`ArrowFileAnswer`): a large
scan reaches the client in chunks before the server has read it all, reads back as the
same rows in-process Lance gives, and an answer whose reading fails half-way is cut off
without the Arrow file's footer, so the client fails instead of reading fewer rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import lancedb
import numpy as np
import pyarrow as pa
import pytest

from tests.support.adapter import running_server

ROWS_PER_FRAGMENT = 2_000
FRAGMENTS = 40


def _rows(start: int, count: int) -> pa.Table:
    ids = np.arange(start, start + count)
    vectors = np.random.default_rng(start).random((count, 64), dtype=np.float32)
    return pa.table({
        "id": ids,
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 64),
        "text": [f"row {index} " + "x" * 200 for index in ids],
    })


@pytest.fixture(scope="module")
def big_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One table of 40 fragments (about 40 MiB of answer when scanned whole)."""
    root = tmp_path_factory.mktemp("streamed")
    for fragment in range(FRAGMENTS):
        lance.write_dataset(_rows(fragment * ROWS_PER_FRAGMENT, ROWS_PER_FRAGMENT),
                            str(root / "big.lance"), mode="append" if fragment else "create")
    return root


@pytest.fixture(scope="module")
def server(big_root: Path) -> Iterator[str]:
    with running_server("dir", {"root": str(big_root)}) as url:
        yield url


SCAN = {"k": FRAGMENTS * ROWS_PER_FRAGMENT, "vector": {}}


def test_a_large_scan_arrives_in_chunks_and_equals_lance_in_process(
    server: str, big_root: Path,
) -> None:
    with httpx.Client(base_url=server, timeout=60) as http, http.stream(
        "POST", "/v1/table/big/query", json=SCAN
    ) as answer:
        assert answer.status_code == 200
        assert "content-length" not in answer.headers  # not built whole before it is sent
        chunks = [bytes(chunk) for chunk in answer.iter_raw()]
    body = b"".join(chunks)
    assert len(body) > 30 * 2**20 and len(chunks) > 5
    served = pa.ipc.open_file(pa.BufferReader(body)).read_all()
    assert served.equals(lance.dataset(str(big_root / "big.lance")).to_table())


def test_an_answer_that_fits_one_chunk_is_sent_whole_and_equals_lance_in_process(
    server: str, big_root: Path,
) -> None:
    """A search's k rows are read and encoded in the backend's call and sent as one body
    with its length (no chunked streaming for them)."""
    query = np.random.default_rng(3).random(64, dtype=np.float32)
    with httpx.Client(base_url=server, timeout=60) as http:
        answer = http.post("/v1/table/big/query", json={
            "k": 10, "vector": {"single_vector": query.tolist()},
            "columns": {"column_names": ["id"]}})
    assert answer.status_code == 200
    assert answer.headers["content-length"] == str(len(answer.content))
    assert "transfer-encoding" not in answer.headers
    served = pa.ipc.open_file(pa.BufferReader(answer.content)).read_all()
    expected = lance.dataset(str(big_root / "big.lance")).to_table(
        columns=["id"], nearest={"column": "vec", "q": query, "k": 10})
    assert served.column("id").to_pylist() == expected.column("id").to_pylist()


def test_lancedb_reads_a_streamed_scan_as_embedded_lancedb_does(
    server: str, big_root: Path,
) -> None:
    remote = lancedb.connect("db://lance", api_key="any", host_override=server,
                             region="local").open_table("big")
    local = lancedb.connect(str(big_root)).open_table("big")
    served = remote.search().where("id >= 1000").limit(50_000).to_arrow()
    expected = local.search().where("id >= 1000").limit(50_000).to_arrow()
    assert served.sort_by("id").equals(expected.sort_by("id"))


def test_an_answer_whose_reading_fails_half_way_never_reads_as_a_shorter_one(
    tmp_path: Path,
) -> None:
    """The data files of the last fragments vanish while the answer is being sent (the
    server reads them only as the client takes what came before): the client's reader
    fails; it never gets the first fragments' rows as the whole answer."""
    root = tmp_path / "root"
    for fragment in range(FRAGMENTS):
        lance.write_dataset(_rows(fragment * ROWS_PER_FRAGMENT, ROWS_PER_FRAGMENT),
                            str(root / "fading.lance"), mode="append" if fragment else "create")
    files = sorted((root / "fading.lance" / "data").iterdir(),
                   key=lambda path: path.stat().st_mtime)
    with running_server("dir", {"root": str(root)}) as url, httpx.Client(
        base_url=url, timeout=60
    ) as http, http.stream("POST", "/v1/table/fading/query", json=SCAN) as answer:
        assert answer.status_code == 200
        chunks = answer.iter_raw(chunk_size=2**20)
        received = [bytes(next(chunks))]
        for data_file in files[FRAGMENTS // 2:]:
            data_file.unlink()
        received.extend(bytes(chunk) for chunk in chunks)
    body = b"".join(received)
    with pytest.raises(pa.ArrowInvalid):
        pa.ipc.open_file(pa.BufferReader(body)).read_all()
