"""Every request field has an effect or a refusal, over the operations
tests/contract/test_request_fields.py does not walk (`tests.support.field_walk_operations`):
each field, changed alone on fresh objects, changes the answer or what the catalog and Lance
hold afterwards, or is refused (code 13); an operation a backend does not support answers code 0
for every field. On the directory backend (pylance's native operations) and on Glue (the
generic ones)."""

from __future__ import annotations

import pytest

from app.spec import load_operations
from tests.support.contract_backends import ContractBackend
from tests.support.field_walk import QUERY_FORM_VARIANTS, SERVER_FIELDS, Walk
from tests.support.field_walk_operations import (
    EXPLAIN_VARIANTS,
    PLAN_BLIND,
    PLAN_QUERY_VARIANTS,
    SCALAR_INDEX_VARIANTS,
    UNSUPPORTED,
    UNWALKED,
    VARIANTS,
    WALKED_ELSEWHERE,
    plan,
    scalar_index_record,
    unique,
)
from tests.support.field_walk_scene import code_of, is_refused, new_scene, run

OPERATIONS = {operation.operation_id: operation for operation in load_operations()}
WALKED = ["dir", "glue"]


def covered(operation_id: str) -> set[str]:
    if operation_id == "CreateTableScalarIndex":
        return set(SCALAR_INDEX_VARIANTS)
    if operation_id == "AnalyzeTableQueryPlan":
        return set(PLAN_QUERY_VARIANTS) - set(QUERY_FORM_VARIANTS)
    if operation_id == "ExplainTableQueryPlan":
        return set(EXPLAIN_VARIANTS)
    return {name for operation, name in VARIANTS if operation == operation_id}


def test_every_field_of_every_other_operation_has_a_variant_or_a_reason() -> None:
    for operation_id, operation in OPERATIONS.items():
        if operation.target_id or operation_id in WALKED_ELSEWHERE:
            continue
        fields = set(operation.request_model.model_fields) - SERVER_FIELDS
        unwalked = {name for op, name in UNWALKED if op == operation_id}
        assert not covered(operation_id) & unwalked, operation_id
        assert covered(operation_id) | unwalked == fields, operation_id
    assert {operation for operation, _ in VARIANTS} <= set(OPERATIONS)


@pytest.mark.parametrize("backend", WALKED, indirect=True)
@pytest.mark.parametrize("key", list(VARIANTS), ids=[f"{op}.{name}" for op, name in VARIANTS])
def test_each_field_changes_the_answer_or_the_state_or_is_refused(
    backend: ContractBackend, key: tuple[str, str]
) -> None:
    operation = key[0]
    variant = VARIANTS[key]
    scene = new_scene(backend.url, backend.fresh_namespace)
    expected = run(scene, operation, variant, dict(variant.baseline))
    if not variant.reads:  # a write needs a scene of its own
        scene = new_scene(backend.url, backend.fresh_namespace)
    answered = run(scene, operation, variant, dict(variant.variant), build=not variant.reads)
    if operation in UNSUPPORTED[backend.name]:
        # Not supported by this backend at all: every field is refused with the operation.
        assert code_of(expected) == 0, (key, expected)
        assert code_of(answered) in (0, 13), (key, answered)
        return
    assert not is_refused(expected), (key, "the baseline is refused", expected)
    assert is_refused(answered) or answered != expected, (key, expected)


@pytest.mark.parametrize("backend", WALKED, indirect=True)
@pytest.mark.parametrize("field", list(SCALAR_INDEX_VARIANTS))
def test_each_scalar_index_field_changes_the_index_or_is_refused(walk: Walk, field: str) -> None:
    baseline, variant = SCALAR_INDEX_VARIANTS[field]
    expected = scalar_index_record(walk, unique("scalar"), baseline)
    assert not isinstance(expected, tuple), (field, "the baseline is refused", expected)
    recorded = scalar_index_record(walk, unique("scalar"), variant)
    assert recorded == ("refused", 13) or recorded != expected, field


@pytest.mark.parametrize("backend", WALKED, indirect=True)
@pytest.mark.parametrize("field", list(PLAN_QUERY_VARIANTS))
def test_each_query_field_reaches_the_analyzed_plan_or_is_refused(walk: Walk, field: str) -> None:
    table, baseline, variant = PLAN_QUERY_VARIANTS[field]
    expected = plan(walk, table, "analyze_plan", baseline)
    assert not isinstance(expected, tuple), (field, "the baseline is refused", expected)
    analyzed = plan(walk, table, "analyze_plan", variant)
    assert analyzed == ("refused", 13) or analyzed != expected, field


@pytest.mark.parametrize("backend", WALKED, indirect=True)
@pytest.mark.parametrize("field", [*EXPLAIN_VARIANTS, *(
    f"query.{name}" for name in PLAN_QUERY_VARIANTS if name not in PLAN_BLIND)])
def test_each_explain_field_changes_the_plan_or_is_refused(walk: Walk, field: str) -> None:
    if field.startswith("query."):
        table, query, other = PLAN_QUERY_VARIANTS[field.removeprefix("query.")]
        baseline, variant = {"query": query}, {"query": other}
    else:
        table, baseline, variant = EXPLAIN_VARIANTS[field]
    expected = plan(walk, table, "explain_plan", baseline)
    assert not isinstance(expected, tuple), (field, "the baseline is refused", expected)
    explained = plan(walk, table, "explain_plan", variant)
    assert explained == ("refused", 13) or explained != expected, field
