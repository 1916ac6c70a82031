"""A field the request model lacks is named at any depth (`app.fields`): in nested models and
in lists of models; lists of plain values (an id, a vector) hold none to name."""

from __future__ import annotations

from app.fields import unknown_fields
from app.spec import load_operations

OPERATIONS = {operation.operation_id: operation for operation in load_operations()}


def test_unknown_fields_are_named_in_nested_models_and_lists_of_models() -> None:
    model = OPERATIONS["QueryTable"].request_model
    fields = {
        "id": ["ns", "t"], "k": 3, "typo_k": 1,
        "vector": {"single_vector": [0.5] * 128, "bogus": 1},
        "order_by": [{"column_name": "a"}, {"column_name": "b", "oops": True}],
    }
    assert unknown_fields(model, fields) == ["typo_k", "vector.bogus", "order_by[1].oops"]


def test_lists_of_plain_values_and_known_fields_name_nothing() -> None:
    model = OPERATIONS["QueryTable"].request_model
    fields = {"id": ["t"], "k": 3, "vector": {"multi_vector": [[0.5, 0.25], [1.0, 2.0]]},
              "columns": {"column_names": ["id", "v"]}}
    assert unknown_fields(model, fields) == []


def test_entries_of_an_alteration_are_walked() -> None:
    model = OPERATIONS["AlterTableAlterColumns"].request_model
    fields = {"id": ["t"], "alterations": [{"path": "a", "rename": "b", "nullable_typo": True}]}
    assert unknown_fields(model, fields) == ["alterations[0].nullable_typo"]
