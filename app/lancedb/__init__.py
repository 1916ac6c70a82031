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

import functools
from collections.abc import Callable, Mapping
from typing import Any

from lance_namespace import (
    DescribeTableRequest,
    ErrorCode,
    InvalidInputError,
    LanceNamespace,
    LanceNamespaceError,
    NamespaceExistsRequest,
    TableNotFoundError,
)

from app.dialect import SPEC, Dialect
from app.lancedb.answers import lancedb_answer, lancedb_backend_call
from app.lancedb.requests import (
    in_database,
    lancedb_fields_from_arrow,
    lancedb_request_fields,
)
from backends.core.names import ID_DELIMITER
from backends.core.operations import Subject, traits_of

LANCEDB_DATABASE_HEADER = "x-lancedb-database"
SERVER_VERSION_HEADER = "phalanx-version"
SERVER_VERSION = "0.3.0"
# The codes LanceDB's "not found" (404) stands for.
NOT_FOUND_CODES = frozenset({ErrorCode.TABLE_NOT_FOUND, ErrorCode.NAMESPACE_NOT_FOUND})


class LanceDBDialect(Dialect):
    """LanceDB's dialect for one request, to `database` (a child namespace of the root, or
    None for the root, whose name is `root_database`)."""

    def __init__(self, database: str | None = None, root_database: str = "lance") -> None:
        self.database = database
        self.root_database = root_database

    def request_fields(self, operation_id: str, fields: dict[str, Any]) -> None:
        lancedb_request_fields(operation_id, fields)
        if self.database is not None:
            in_database(operation_id, fields, self.database)

    def fields_from_arrow(self, operation_id: str, body: bytes) -> dict[str, Any] | None:
        return lancedb_fields_from_arrow(operation_id, body)

    def backend_call(
        self, namespace: LanceNamespace, operation_id: str
    ) -> Callable[[Any], Any] | None:
        call = lancedb_backend_call(namespace, operation_id)
        if operation_id == "DescribeTable" and self.database is not None and call is not None:
            return functools.partial(_described_in_database, namespace, call)
        return call

    def answer(self, operation_id: str, payload: dict[str, Any]) -> Any:
        return lancedb_answer(operation_id, payload)

    def answer_headers(self) -> dict[str, str]:
        return {SERVER_VERSION_HEADER: SERVER_VERSION}

    def refusal(
        self, error: LanceNamespaceError, operation_id: str, fields: dict[str, Any]
    ) -> tuple[LanceNamespaceError, int]:
        """A database that does not exist is said to be one (a 400: the client would read a
        404 as "table not found" and show its own words); other errors keep their words."""
        if self._database_missing(error, operation_id, fields):
            return InvalidInputError(
                f"LanceDB database {self.database!r} does not exist on this server: "
                f"db://{self.root_database} is the root database (setting "
                "lancedb_root_database); create this one with lancedb.connect_catalog(<this "
                f"server's URL>, api_key=...).create_database({self.database!r})"), 400
        return error, self._status(error, operation_id)

    def _database_missing(
        self, error: LanceNamespaceError, operation_id: str, fields: dict[str, Any]
    ) -> bool:
        """Whether `error` says the request's database is missing: a namespace not found
        where the one namespace the request names (a table's, or its own) is the database."""
        if self.database is None or error.code != ErrorCode.NAMESPACE_NOT_FOUND:
            return False
        database = self.database.split(ID_DELIMITER)
        identifier = fields.get("id")
        if not isinstance(identifier, list) or fields.get("new_namespace_id") not in (
                None, database):
            return False
        try:
            on_table = traits_of(operation_id).subject is Subject.TABLE
        except KeyError:
            return False
        return (identifier[:-1] if on_table else identifier) == database

    def _status(self, error: LanceNamespaceError, operation_id: str) -> int:
        """The client reads every 404 as "table not found" and retries every 409: any other
        missing thing, and anything already there, is a 400 for it, as LanceDB raises a
        ValueError for them embedded. A concurrent modification stays 409: retrying it is
        right, the write did not take effect. `index_stats` of a missing index stays 404:
        the client returns None for it, as embedded LanceDB does."""
        status = super().refusal(error, operation_id, {})[1]
        code = ErrorCode(error.code)
        if (operation_id, code) == ("DescribeTableIndexStats", ErrorCode.TABLE_INDEX_NOT_FOUND):
            return status
        if status == 404 and code not in NOT_FOUND_CODES:
            return 400
        if status == 409 and code is not ErrorCode.CONCURRENT_MODIFICATION:
            return 400
        return status


def _described_in_database(
    namespace: LanceNamespace, call: Callable[[Any], Any], request: DescribeTableRequest
) -> Any:
    """DescribeTable (`open_table`), whose table not found is the database's own absence
    where the database does not exist (`refusal` then says so)."""
    try:
        return call(request)
    except TableNotFoundError:
        namespace.namespace_exists(NamespaceExistsRequest(  # NamespaceNotFound: no database
            id=request.id[:-1], identity=request.identity, context=request.context))
        raise


def dialect_of(headers: Mapping[str, str], root_database: str = "") -> Dialect:
    """LanceDB's dialect for its remote client's requests (to the database the header names;
    `root_database` is the root's name), the spec's for any other."""
    database = headers.get(LANCEDB_DATABASE_HEADER)
    if database is None:
        return SPEC
    return LanceDBDialect(None if database == root_database else database, root_database)
