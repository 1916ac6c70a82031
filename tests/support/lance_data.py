"""Arrow data for the tests: rows with ints, strings and a fixed-size float vector."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from lance_namespace import ListTablesRequest

VECTOR_DIMENSION = 8


def sample_table(rows: int, start: int = 0, seed: int = 7) -> pa.Table:
    generator = np.random.default_rng(seed + start)
    vectors = generator.random((rows, VECTOR_DIMENSION), dtype=np.float32)
    return pa.table(
        {
            "id": pa.array(range(start, start + rows), pa.int64()),
            "name": pa.array([f"row-{i}" for i in range(start, start + rows)], pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.ravel(), pa.float32()), VECTOR_DIMENSION
            ),
        }
    )


def write_ids(location: str, rows: int = 3) -> None:
    """A Lance table of `rows` ids at `location`, written by pylance directly."""
    import lance

    lance.write_dataset(pa.table({"id": list(range(rows))}), location)


def arrow_stream(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def read_arrow_file(data: bytes) -> pa.Table:
    return pa.ipc.open_file(pa.BufferReader(data)).read_all()


def nearest_ids(table: pa.Table, query: list[float], k: int, where=None) -> list[int]:
    """Brute-force L2 top-k ids, the reference for vector search results."""
    rows = table if where is None else table.filter(where)
    vectors = np.stack(rows.column("vector").to_numpy(zero_copy_only=False))
    distances = ((vectors - np.asarray(query, np.float32)) ** 2).sum(axis=1)
    order = np.argsort(distances, kind="stable")[:k]
    return [rows.column("id")[int(i)].as_py() for i in order]


def error_code(body: str | bytes) -> int:
    return json.loads(body)["code"]


def tree_snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` with the digest of its content ("dir" for a directory): two equal
    snapshots prove an operation wrote nothing."""
    return {
        str(path.relative_to(root)):
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        for path in root.rglob("*")
    }


def all_list_pages(namespace: Any, limit: int, **request: Any) -> list[list[str]]:
    """Every page of ListAllTables at `limit`, following the page tokens to the end."""
    pages, token = [], None
    while True:
        response = namespace.list_all_tables(
            ListTablesRequest(limit=limit, page_token=token, **request)
        )
        pages.append(response.tables)
        token = response.page_token
        if not token:
            return pages


def zeros_stream(rows: int, columns: int = 1, codec: str | None = "zstd") -> bytes:
    """`columns` int64 columns of `rows` zeros as a (compressed) Arrow IPC stream: small on
    the wire, `8 * rows * columns` bytes once decoded. The zeros are never written: numpy's are
    the kernel's zero page."""
    zeros = pa.array(np.zeros(rows, np.int64))
    table = pa.table({f"c{index}": zeros for index in range(columns)})
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
