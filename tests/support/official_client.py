"""The official clients of the adapter, as the contract tests use them.

`OfficialClient` is pylance's `RestNamespace`; the three operations it lacks in 0.13
(UpdateFieldMetadata, BatchCreateTableVersions, BatchCommitTables) go through the other official
client, `lance_namespace_urllib3_client`, so every operation is sent by an official client. The
three it takes as dicts (CreateTableVersion, DescribeTableVersion, BatchDeleteTableVersions) get
the request model as a dict and answer the response model, like every other operation.
Errors of either client arrive as the typed `LanceNamespaceError` of their code.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import lance_namespace as ln
from lance.namespace import RestNamespace
from lance_namespace_urllib3_client import ApiClient, Configuration
from lance_namespace_urllib3_client.api import TableApi, TransactionApi
from lance_namespace_urllib3_client.exceptions import ApiException
from pydantic import BaseModel


@contextlib.contextmanager
def typed_errors() -> Iterator[None]:
    """Turn the urllib3 client's ApiException into the error its body's code names."""
    try:
        yield
    except ApiException as error:
        body = json.loads(error.body or "{}")
        raise ln.from_error_code(body.get("code", 18), body.get("error", "")) from error


class OfficialClient(RestNamespace):
    """pylance's RestNamespace at `url`, every operation taking and answering its model; with
    `token`, RestNamespace's own requests carry it as `Authorization: Bearer`."""

    def __init__(self, url: str, token: str | None = None) -> None:
        headers = {} if token is None else {"header.Authorization": f"Bearer {token}"}
        super().__init__(uri=url, **headers)
        self.api_client = ApiClient(Configuration(host=url))

    def update_field_metadata(
        self, request: ln.UpdateFieldMetadataRequest
    ) -> ln.UpdateFieldMetadataResponse:
        with typed_errors():
            return TableApi(self.api_client).update_field_metadata(
                "$".join(request.id), request, delimiter="$"
            )

    def batch_create_table_versions(
        self, request: ln.BatchCreateTableVersionsRequest
    ) -> ln.BatchCreateTableVersionsResponse:
        with typed_errors():
            return TableApi(self.api_client).batch_create_table_versions(request, delimiter="$")

    def batch_commit_tables(
        self, request: ln.BatchCommitTablesRequest
    ) -> ln.BatchCommitTablesResponse:
        with typed_errors():
            return TransactionApi(self.api_client).batch_commit_tables(request, delimiter="$")

    def create_table_version(  # type: ignore[override]
        self, request: ln.CreateTableVersionRequest
    ) -> ln.CreateTableVersionResponse:
        answer = super().create_table_version(as_dict(request))
        return ln.CreateTableVersionResponse.from_dict(answer)

    def describe_table_version(  # type: ignore[override]
        self, request: ln.DescribeTableVersionRequest
    ) -> ln.DescribeTableVersionResponse:
        answer = super().describe_table_version(as_dict(request))
        return ln.DescribeTableVersionResponse.from_dict(answer)

    def batch_delete_table_versions(  # type: ignore[override]
        self, request: ln.BatchDeleteTableVersionsRequest
    ) -> ln.BatchDeleteTableVersionsResponse:
        answer = super().batch_delete_table_versions(as_dict(request))
        return ln.BatchDeleteTableVersionsResponse.from_dict(answer)


def as_dict(request: BaseModel) -> dict[str, Any]:
    return request.model_dump(exclude_none=True)
