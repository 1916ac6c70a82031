"""A search that names its columns is answered with its score after them (`_distance`, `_score`),
as Lance adds it, without Lance's deprecation warning for adding it logged on every search."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance_namespace import QueryTableRequest

from backends.tables.reads import query


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> lance.LanceDataset:
    root: Path = tmp_path_factory.mktemp("scores")
    vectors = np.random.default_rng(3).random((300, 8), dtype=np.float32)
    table = pa.table({
        "id": pa.array(range(300), pa.int64()),
        "text": [f"word{index % 7} other" for index in range(300)],
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8),
    })
    written = lance.write_dataset(table, str(root / "t.lance"))
    written.create_scalar_index("text", "INVERTED")
    return lance.dataset(str(root / "t.lance"))


def _answer(dataset: lance.LanceDataset, **fields: object) -> pa.Table:
    request = QueryTableRequest.model_validate({"id": ["t"], "k": 5, **fields})
    return pa.ipc.open_file(query(dataset, request).to_bytes()).read_all()


VECTOR = {"single_vector": [0.5] * 8}
CASES = [
    ({"vector": VECTOR, "columns": {"column_names": ["id"]}}, ["id", "_distance"]),
    ({"vector": VECTOR, "columns": {"column_names": ["_distance", "id"]}}, ["_distance", "id"]),
    ({"vector": VECTOR, "columns": {"column_aliases": {"x": "id"}}}, ["x", "_distance"]),
    ({"vector": VECTOR, "columns": {"column_names": []}}, ["_distance"]),
    ({"vector": VECTOR}, ["id", "text", "vector", "_distance"]),
    ({"vector": {}, "full_text_query": {"string_query": {"query": "word3"}},
      "columns": {"column_names": ["id"]}}, ["id", "_score"]),
    ({"vector": {}, "columns": {"column_names": ["id"]}}, ["id"]),
]


@pytest.mark.parametrize(("fields", "columns"), CASES)
def test_the_score_follows_the_named_columns_and_nothing_is_logged(
    dataset: lance.LanceDataset, fields: dict, columns: list[str],
    capfd: pytest.CaptureFixture[str],
) -> None:
    answered = _answer(dataset, **fields)
    assert answered.schema.names == columns
    assert answered.num_rows == 5
    assert "Deprecation" not in capfd.readouterr().err


def test_the_answer_equals_lance_adding_the_score_itself(dataset: lance.LanceDataset) -> None:
    nearest = {"column": "vector", "q": np.array(VECTOR["single_vector"], np.float32), "k": 5}
    expected = dataset.to_table(columns=["id"], nearest=nearest)
    answered = _answer(dataset, vector=VECTOR, columns={"column_names": ["id"]})
    assert answered.equals(expected)
