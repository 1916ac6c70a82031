"""The contract lifecycle over HTTP on every backend: every table operation of the official
clients (the steps of `tests/support/table_steps.py`), the namespace operations with their
modes, and the spec's own routes (ListOperations, GetTable, GetNamespace, AlterNamespace,
AlterTable)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from lance_namespace import (
    AlterTableBackfillColumnsRequest,
    AlterTransactionRequest,
    BatchCommitTablesRequest,
    BatchCreateTableVersionsRequest,
    CreateMaterializedViewRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    CreateTableVersionRequest,
    DeclareTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DescribeTransactionRequest,
    DropNamespaceRequest,
    LanceNamespaceError,
    ListNamespacesRequest,
    NamespaceExistsRequest,
    NamespaceNotFoundError,
    RefreshMaterializedViewRequest,
    UnsupportedOperationError,
)
from lance_namespace_urllib3_client.models import AlterTransactionAction, AlterTransactionSetStatus

from tests.support.contract_backends import NAMESPACE_PROPERTIES, ContractBackend
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.table_steps import StepLayout, run_every_step

# Operations every backend serves, and the spec's names of two of them.
CORE_OPERATIONS = {
    "CreateNamespace", "ListNamespaces", "DescribeNamespace", "DropNamespace", "NamespaceExists",
    "ListTables", "ListAllTables", "DescribeTable", "RegisterTable", "DeregisterTable",
    "TableExists", "DropTable", "DeclareTable", "CreateTable", "RenameTable", "InsertIntoTable",
    "MergeInsertIntoTable", "UpdateTable", "DeleteFromTable", "CountTableRows", "QueryTable",
    "CreateTableIndex", "CreateTableScalarIndex", "ListTableIndices", "DescribeTableIndexStats",
    "DropTableIndex", "AlterTableAddColumns", "AlterTableAlterColumns", "AlterTableDropColumns",
    "UpdateTableSchemaMetadata", "UpdateFieldMetadata", "ListTableVersions",
    "DescribeTableVersion", "BatchDeleteTableVersions", "CreateTableTag", "ListTableTags",
    "GetTableTagVersion", "UpdateTableTag", "DeleteTableTag", "CreateTableBranch",
    "ListTableBranches", "DeleteTableBranch", "RestoreTable", "GetTableStats",
    "ExplainTableQueryPlan", "AnalyzeTableQueryPlan", "ListOperations", "GetTable",
    "GetNamespace",
}  # fmt: skip


def post(backend: ContractBackend, operation: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{backend.url}/{operation}", json=body, timeout=60)


def assert_code_0(response: httpx.Response, operation: str, backend: ContractBackend) -> None:
    """The answer of an operation the backend cannot do: code 0 naming it and the backend."""
    payload = response.json()
    assert (response.status_code, payload["code"]) == (406, 0), payload
    message = payload["error"].lower().replace("_", "")
    assert operation.lower() in message and any(
        label.lower() in message for label in backend.conventions.labels), payload


def test_every_table_operation_over_http(backend: ContractBackend) -> None:
    run_every_step(backend.client(), backend.new_layout())


def test_list_all_tables_of_a_namespace_answers_only_the_tables_below_it(
    backend: ContractBackend,
) -> None:
    """What a grant of one namespace covers (the official client's `GET /v1/table` carries no
    id, so the operation route is called)."""
    layout = backend.new_layout()
    client = backend.client()
    for table_id in (layout.other, [*layout.rename_target, "scoped"]):
        client.create_table(CreateTableRequest(id=table_id), arrow_stream(sample_table(2)))
    answer = httpx.post(f"{backend.url}/ListAllTables", json={"id": layout.rename_target},
                        timeout=60)
    assert answer.status_code == 200, answer.text
    inside = "$".join(layout.rename_target) + "$"
    assert "$".join([*layout.rename_target, "scoped"]) in answer.json()["tables"]
    assert [table for table in answer.json()["tables"] if not table.startswith(inside)] == []


def test_namespace_operations_and_their_modes(backend: ContractBackend) -> None:
    client, namespace = backend.client(), backend.fresh_namespace()
    client.create_namespace(CreateNamespaceRequest(id=namespace, properties={"a": "1"}))
    described = client.describe_namespace(DescribeNamespaceRequest(id=namespace)).properties
    assert described["a"] == "1"
    client.namespace_exists(NamespaceExistsRequest(id=namespace))
    listed = client.list_namespaces(ListNamespacesRequest(id=namespace[:-1])).namespaces
    assert namespace[-1] in listed

    again = CreateNamespaceRequest(id=namespace, mode="exist_ok", properties={"b": "2"})
    client.create_namespace(again)
    kept = client.describe_namespace(DescribeNamespaceRequest(id=namespace)).properties
    assert kept.get("a") == "1" and "b" not in kept, "ExistOk keeps the namespace as it was"
    replace = CreateNamespaceRequest(id=namespace, mode="overwrite", properties={"b": "2"})
    client.create_namespace(replace)
    replaced = client.describe_namespace(DescribeNamespaceRequest(id=namespace)).properties
    assert replaced.get("b") == "2" and "a" not in replaced, "Overwrite replaces it"

    client.drop_namespace(DropNamespaceRequest(id=namespace))
    with pytest.raises(NamespaceNotFoundError, match=re.escape(namespace[-1])):
        client.namespace_exists(NamespaceExistsRequest(id=namespace))
    client.drop_namespace(DropNamespaceRequest(id=namespace, mode="skip"))
    assert (
        namespace[-1]
        not in client.list_namespaces(ListNamespacesRequest(id=namespace[:-1])).namespaces
    )


def test_drop_namespace_cascade(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    client.declare_table(DeclareTableRequest(id=layout.table))
    cascade = DropNamespaceRequest(id=layout.namespace, behavior="cascade")
    if backend.conventions.cascades:
        client.drop_namespace(cascade)
        with pytest.raises(NamespaceNotFoundError, match=re.escape(layout.namespace[-1])):
            client.namespace_exists(NamespaceExistsRequest(id=layout.namespace))
        return
    with pytest.raises(UnsupportedOperationError, match=r"(?i)restrict") as refused:
        client.drop_namespace(cascade)
    assert refused.value.code == 0
    client.namespace_exists(NamespaceExistsRequest(id=layout.namespace))


def test_list_operations_names_what_the_backend_supports(backend: ContractBackend) -> None:
    response = post(backend, "ListOperations", backend.conventions.operations_body())
    assert response.status_code == 200
    operations = set(response.json()["operations"])
    assert operations >= CORE_OPERATIONS, CORE_OPERATIONS - operations
    assert ("AlterNamespace" in operations) == backend.conventions.alters_namespaces
    assert ("AlterTable" in operations) == backend.conventions.alters_tables


def test_get_table_and_get_namespace(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    client.declare_table(DeclareTableRequest(id=layout.table))
    described = client.describe_table(DescribeTableRequest(id=layout.table))
    got = post(backend, "GetTable", {"id": layout.table})
    assert got.status_code == 200 and got.json()["location"] == described.location
    namespace = post(backend, "GetNamespace", {"id": layout.namespace})
    assert namespace.status_code == 200
    assert namespace.json()["properties"]["owner"] == NAMESPACE_PROPERTIES["owner"]
    missing = post(backend, "GetTable", {"id": [*layout.namespace, "missing"]})
    assert (missing.status_code, missing.json()["code"]) == (404, 4)


def test_alter_namespace_sets_then_unsets(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()

    def properties() -> dict[str, str]:
        described = client.describe_namespace(DescribeNamespaceRequest(id=layout.namespace))
        return described.properties or {}

    set_answer = post(
        backend, "AlterNamespace", {"id": layout.namespace, "set_properties": {"tier": "gold"}}
    )
    if not backend.conventions.alters_namespaces:
        assert_code_0(set_answer, "AlterNamespace", backend)
        assert "tier" not in properties()
        return
    assert set_answer.status_code == 200, set_answer.text
    assert properties()["tier"] == "gold" == set_answer.json()["properties"]["tier"]
    unset = post(backend, "AlterNamespace", {"id": layout.namespace, "unset_properties": ["tier"]})
    assert unset.status_code == 200, unset.text
    assert "tier" not in properties() and properties()["owner"] == "contract"


def test_alter_table_sets_then_unsets(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    client.declare_table(DeclareTableRequest(id=layout.table))

    def properties() -> dict[str, str]:
        described = client.describe_table(DescribeTableRequest(id=layout.table))
        return described.properties or {}

    set_answer = post(
        backend, "AlterTable", {"id": layout.table, "set_properties": {"tier": "gold"}}
    )
    if not backend.conventions.alters_tables:
        assert_code_0(set_answer, "AlterTable", backend)
        assert "tier" not in properties()
        return
    assert set_answer.status_code == 200, set_answer.text
    assert properties()["tier"] == "gold" == set_answer.json()["properties"]["tier"]
    unset = post(backend, "AlterTable", {"id": layout.table, "unset_properties": ["tier"]})
    assert unset.status_code == 200, unset.text
    assert "tier" not in properties()


def requests_beyond_the_steps(layout: StepLayout) -> dict[str, Any]:
    """A valid-looking request of each official operation the steps do not call."""
    view = [*layout.namespace, "view"]
    return {
        "CreateTableVersion": CreateTableVersionRequest(
            id=layout.table, version=99, manifest_path="_versions/99.manifest"
        ),
        "BatchCreateTableVersions": BatchCreateTableVersionsRequest(entries=[]),
        "DescribeTransaction": DescribeTransactionRequest(id=["no-such-transaction"]),
        "AlterTransaction": AlterTransactionRequest(
            id=["no-such-transaction"],
            actions=[
                AlterTransactionAction(
                    set_status_action=AlterTransactionSetStatus(status="Canceled")
                )
            ],
        ),
        "BatchCommitTables": BatchCommitTablesRequest(operations=[]),
        "CreateMaterializedView": CreateMaterializedViewRequest(
            id=view, kind="query", source_query="SELECT 1", output_schema="{}"
        ),
        "RefreshMaterializedView": RefreshMaterializedViewRequest(id=view),
        "AlterTableBackfillColumns": AlterTableBackfillColumnsRequest(
            id=layout.table, column="name"
        ),
    }


def test_operations_left_out_of_list_operations_answer_code_0(backend: ContractBackend) -> None:
    """ListOperations tells the truth: what it leaves out answers code 0 naming the operation
    and the backend; what it names never answers code 0."""
    client, layout = backend.client(), backend.new_layout()
    client.declare_table(DeclareTableRequest(id=layout.table))
    supported = set(post(backend, "ListOperations",
                         backend.conventions.operations_body()).json()["operations"])
    labels = [label.lower() for label in backend.conventions.labels]
    for operation, request in requests_beyond_the_steps(layout).items():
        method = getattr(client, re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower())
        try:
            method(request)
        except LanceNamespaceError as error:
            code, message = error.code, str(error).lower()
        else:
            code, message = None, ""
        if operation in supported:
            assert code != 0, (operation, message)
        else:
            assert code == 0, (operation, code, message)
            assert operation.lower() in message and any(
                label in message for label in labels), message
