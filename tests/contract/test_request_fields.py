"""Every request field has an effect or a refusal (`tests.support.field_walk`): each field of
QueryTable and CreateTableIndex, changed alone, changes the answer or what Lance records, or is
refused; on the directory backend (pylance's native operations) and on Glue (the generic
ones); and a field no operation takes is refused on every route."""

from __future__ import annotations

import uuid

import httpx
import pytest

from app.spec import load_operations
from tests.support.contract_backends import ContractBackend
from tests.support.field_walk import (
    INDEX_UNWALKED,
    INDEX_VARIANTS,
    QUERY_FORM_VARIANTS,
    QUERY_VARIANTS,
    SERVER_FIELDS,
    Walk,
    index_record,
    query_answer,
)

OPERATIONS = {operation.operation_id: operation for operation in load_operations()}
WALKED = ["dir", "glue"]


def test_every_field_of_the_walked_models_has_a_variant() -> None:
    query_fields = set(OPERATIONS["QueryTable"].request_model.model_fields)
    assert query_fields - SERVER_FIELDS == set(QUERY_VARIANTS)
    index_fields = set(OPERATIONS["CreateTableIndex"].request_model.model_fields)
    assert not set(INDEX_VARIANTS) & set(INDEX_UNWALKED)
    assert index_fields - SERVER_FIELDS == set(INDEX_VARIANTS) | set(INDEX_UNWALKED)


@pytest.mark.parametrize("backend", WALKED, indirect=True)
@pytest.mark.parametrize("field", [*QUERY_VARIANTS, *QUERY_FORM_VARIANTS])
def test_each_query_field_changes_the_answer_or_is_refused(walk: Walk, field: str) -> None:
    table, baseline, variant = {**QUERY_VARIANTS, **QUERY_FORM_VARIANTS}[field]
    expected = query_answer(walk, table, baseline)
    assert not isinstance(expected, tuple), (field, "the baseline is refused", expected)
    answered = query_answer(walk, table, variant)
    assert answered == ("refused", 13) or answered != expected, field


@pytest.mark.parametrize("backend", WALKED, indirect=True)
@pytest.mark.parametrize("field", list(INDEX_VARIANTS))
def test_each_index_field_changes_the_index_or_is_refused(walk: Walk, field: str) -> None:
    baseline, variant = INDEX_VARIANTS[field]
    expected = index_record(walk, f"index_{uuid.uuid4().hex[:8]}", baseline)
    assert not isinstance(expected, tuple), (field, "the baseline is refused", expected)
    recorded = index_record(walk, f"index_{uuid.uuid4().hex[:8]}", variant)
    assert recorded == ("refused", 13) or recorded != expected, field


@pytest.mark.parametrize("backend", ["dir"], indirect=True)
@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_a_field_no_operation_takes_is_refused_on_every_route(
    backend: ContractBackend, operation_id: str
) -> None:
    """In the JSON body (where the body is the request model) and in the query string."""
    operation = OPERATIONS[operation_id]
    refusals = [httpx.post(f"{backend.url}/{operation_id}", params={"unheard_of": "1"},
                           json={}, timeout=30)]
    if not operation.takes_data:
        refusals.append(httpx.post(f"{backend.url}/{operation_id}", json={"unheard_of": 1},
                                   timeout=30))
    if operation.path is not None and "{" not in operation.path.replace("{id}", "a"):
        path = operation.path.replace("{id}", "a$b")
        refusals.append(httpx.request(operation.method, f"{backend.url}{path}",
                                      params={"unheard_of": "1"}, timeout=30))
    for answer in refusals:
        assert answer.status_code == 400, (operation_id, answer.text)
        assert answer.json()["code"] == 13 and "unheard_of" in answer.json()["error"]
