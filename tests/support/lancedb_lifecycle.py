"""A table's whole life through LanceDB, each step checked by reading the table back.

Shared by the LanceDB tests of every backend: `run_lifecycle(db, namespace)` drives one
LanceDB connection (the remote client or a namespace connection) against the adapter.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

DIMENSION = 8
ROWS = 100


def sample_rows(start: int = 0, count: int = ROWS) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "vector": pa.array(
            [[float(i % 13)] * DIMENSION for i in ids], pa.list_(pa.float32(), DIMENSION)
        ),
        "label": [f"label-{i % 5}" for i in ids],
    })


def _ids(table: Any) -> list[int]:
    return sorted(table.to_arrow()["id"].to_pylist())


def run_lifecycle(db: Any, namespace: list[str], name: str = "items") -> None:
    """Create, add, search, update, delete, merge, index, evolve, version, tag and drop."""
    table = db.create_table(name, sample_rows(), namespace_path=namespace)
    assert table.count_rows() == ROWS
    assert name in db.table_names(namespace_path=namespace)

    table.add(sample_rows(ROWS, 5))
    assert table.count_rows() == ROWS + 5

    nearest = table.search([3.0] * DIMENSION).limit(4).to_arrow()
    assert nearest.num_rows == 4
    assert set(nearest["id"].to_pylist()) <= {i for i in range(ROWS + 5) if i % 13 == 3}

    filtered = table.search([3.0] * DIMENSION).where("id > 50").limit(3).to_arrow()
    assert filtered.num_rows == 3
    assert all(i > 50 for i in filtered["id"].to_pylist())

    assert table.update(where="id < 3", values={"label": "updated"}).rows_updated == 3
    labels = table.search().where("label = 'updated'").limit(50).to_arrow()
    assert sorted(labels["id"].to_pylist()) == [0, 1, 2]

    assert table.delete("id = 99").num_deleted_rows == 1
    assert table.count_rows() == ROWS + 4
    assert 99 not in _ids(table.search().limit(1000))
    assert table.delete("id = 99").num_deleted_rows == 0

    upsert = sample_rows(103, 4)  # 103 and 104 exist, 105 and 106 are new
    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        upsert
    )
    assert table.count_rows() == ROWS + 6

    table.create_scalar_index("id")
    assert any(index.columns == ["id"] for index in table.list_indices())

    table.add_columns({"double_id": "id * 2"})
    rows = table.search().where("id = 21").limit(1).to_arrow()
    assert rows["double_id"].to_pylist() == [42]

    versions = table.list_versions()
    assert len(versions) == table.version

    table.tags.create("first", 1)
    assert table.tags.list()["first"]["version"] == 1
    table.checkout("first")
    assert table.count_rows() == ROWS
    table.checkout_latest()

    db.drop_table(name, namespace_path=namespace)
    assert name not in db.table_names(namespace_path=namespace)
