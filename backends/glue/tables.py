"""Glue's table objects as Lance tables: how one is recognised, written and located.

A Glue table is a Lance table when its Parameters hold `table_type=lance` (key and value in
any case), whatever its `TableType`: lance-namespace-impls marks its tables with
`table_type=LANCE` and reads no TableType, and the server registers its own as glue.md says
(`EXTERNAL_TABLE`, `table_type=lance`). impls also writes `managed_by=storage` (the table's
versions are Lance's own manifests at the location, as everywhere in this server) and
`empty_table=true` at DeclareTable; `empty_table` means "declared, no Lance data yet", so the
server sets it to `false` when it writes a table's first data
(`backends.core.lance_tables.settled_parameters`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lance_namespace import InvalidInputError

from backends.core.lance_tables import (
    EXTERNAL_TABLE,
    LANCE_TABLE_TYPE,
    TABLE_TYPE_KEY,
    has_lance_table_type,
)
from backends.core.locations import join_location, local_directory
from backends.core.names import joined_id
from backends.glue.names import validate_parameters


def is_lance_table(table: Mapping[str, Any]) -> bool:
    return has_lance_table_type(table.get("Parameters"))


def lance_parameters(properties: Mapping[str, str] | None) -> dict[str, str]:
    """A Lance table's Glue parameters: the request's, with `table_type=lance`."""
    parameters = validate_parameters(properties)
    declared_type = parameters.get(TABLE_TYPE_KEY, LANCE_TABLE_TYPE)
    if declared_type.lower() != LANCE_TABLE_TYPE:
        raise InvalidInputError(f"property {TABLE_TYPE_KEY} must be '{LANCE_TABLE_TYPE}'")
    return {**parameters, TABLE_TYPE_KEY: LANCE_TABLE_TYPE}


def table_input(table: str, location: str, parameters: dict[str, str]) -> dict[str, Any]:
    return {
        "Name": table,
        "TableType": EXTERNAL_TABLE,
        "Parameters": parameters,
        "StorageDescriptor": {"Location": location},
    }


def stored_location(glue_table: Mapping[str, Any]) -> str | None:
    return (glue_table.get("StorageDescriptor") or {}).get("Location")


def table_location(glue_table: Mapping[str, Any], table_id: list[str]) -> str:
    location = stored_location(glue_table)
    if not location:
        raise InvalidInputError(f"table {joined_id(table_id)} has no location")
    return location


def default_location(
    root: str, database: Mapping[str, Any], namespace: list[str], table: str
) -> str:
    """Under the database's LocationUri when it has one, else `<root>/<namespace…>/`."""
    database_location = database.get("LocationUri")
    if database_location:
        return join_location(database_location, f"{table}.lance")
    return join_location(root, *namespace, f"{table}.lance")


def table_uri(location: str) -> str:
    """`location` as a URI: a local directory as `file:///…`."""
    directory = local_directory(location)
    return location if directory is None else directory.as_uri()
