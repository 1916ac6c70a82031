"""LanceDB's remote client (`lancedb.connect("db://…", host_override=URL)`, the client of
LanceDB Cloud): its dialect of the Lance REST protocol, in and out, at one seam.

It calls the spec's /v1/ routes (with a trailing `/`) and marks every request with the
`x-lancedb-database` header, which picks this dialect (`dialect_of`). What it sends
differently is put in the spec's form by `app.lancedb.requests`; what it reads differently,
and the calls it means differently, are `app.lancedb.answers`.

The database the header names is a child namespace of the root (LanceDB's `connect_catalog`
and `connect_database`), whose name prefixes every id the client sends; the database named
by the `lancedb_root_database` setting is the root itself.

Every answer carries `phalanx-version`, the LanceDB Cloud server version whose protocol this
server speaks: the client switches features on by it. 0.3.0 means multivector queries (from
0.2.0) and structured full-text queries (from 0.3.0); not multipart writes (0.4.0) nor blob
fetches (0.5.0), whose routes are not served.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lance_namespace import ErrorCode, LanceNamespace, LanceNamespaceError

from app.dialect import SPEC, Dialect
from app.lancedb.answers import lancedb_answer, lancedb_backend_call
from app.lancedb.requests import (
    in_database,
    lancedb_fields_from_arrow,
    lancedb_request_fields,
)

LANCEDB_DATABASE_HEADER = "x-lancedb-database"
SERVER_VERSION_HEADER = "phalanx-version"
SERVER_VERSION = "0.3.0"
# The codes LanceDB's "not found" (404) stands for.
NOT_FOUND_CODES = frozenset({ErrorCode.TABLE_NOT_FOUND, ErrorCode.NAMESPACE_NOT_FOUND})


class LanceDBDialect(Dialect):
    """LanceDB's dialect for one request, to `database` (a child namespace of the root, or
    None for the root)."""

    def __init__(self, database: str | None = None) -> None:
        self.database = database

    def request_fields(self, operation_id: str, fields: dict[str, Any]) -> None:
        lancedb_request_fields(operation_id, fields)
        if self.database is not None:
            in_database(operation_id, fields, self.database)

    def fields_from_arrow(self, operation_id: str, body: bytes) -> dict[str, Any] | None:
        return lancedb_fields_from_arrow(operation_id, body)

    def backend_call(
        self, namespace: LanceNamespace, operation_id: str
    ) -> Callable[[Any], Any] | None:
        return lancedb_backend_call(namespace, operation_id)

    def answer(self, operation_id: str, payload: dict[str, Any]) -> Any:
        return lancedb_answer(operation_id, payload)

    def answer_headers(self) -> dict[str, str]:
        return {SERVER_VERSION_HEADER: SERVER_VERSION}

    def error_status(self, error: LanceNamespaceError, operation_id: str) -> int:
        """The client reads every 404 as "table not found" and retries every 409: any other
        missing thing, and anything already there, is a 400 for it, as LanceDB raises a
        ValueError for them embedded. A concurrent modification stays 409: retrying it is
        right, the write did not take effect. `index_stats` of a missing index stays 404:
        the client returns None for it, as embedded LanceDB does."""
        status = super().error_status(error, operation_id)
        code = ErrorCode(error.code)
        if (operation_id, code) == ("DescribeTableIndexStats", ErrorCode.TABLE_INDEX_NOT_FOUND):
            return status
            return 400
        if status == 409 and code is not ErrorCode.CONCURRENT_MODIFICATION:
            return 400
        return status


def dialect_of(headers: Mapping[str, str], root_database: str = "") -> Dialect:
    """LanceDB's dialect for its remote client's requests (to the database the header names;
    `root_database` is the root's name), the spec's for any other."""
    database = headers.get(LANCEDB_DATABASE_HEADER)
    if database is None:
        return SPEC
    return LanceDBDialect(None if database == root_database else database)
