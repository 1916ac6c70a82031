"""The metastore's objects as Lance sees them: which tables are Lance tables, and how namespace
properties map to the fields of a Database or Catalog.

A Lance table is an HMS table, external or managed, whose `table_type` parameter is `lance` (key
and value in any case). The server registers EXTERNAL_TABLE with EXTERNAL=TRUE;
lance-namespace-impls registers tables that HMS 2.x stores as MANAGED_TABLE, with `managed_by` and
`empty_table` parameters (see `mark_written`).

Namespace properties live in the Database object (`database.description`,
`database.location-uri`, `database.owner`, `database.owner-type` map to the Database fields,
every other key to its parameters; lance-namespace-impls' keys `comment`, `location` and `owner`
name the same fields) and, for hive3, in the Catalog object (`description`,
`catalog.location.uri`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from hive_metastore.ttypes import (
    Catalog,
    Database,
    PrincipalType,
    SerDeInfo,
    StorageDescriptor,
    Table,
)
from lance_namespace import InvalidInputError

from backends.core.lance_tables import (
    EXTERNAL_TABLE,
    LANCE_TABLE_TYPE,
    TABLE_TYPE_KEY,
    has_lance_table_type,
)
from backends.hive.names import DatabaseRef, plain_location

DESCRIPTION_KEY = "database.description"
LOCATION_KEY = "database.location-uri"
OWNER_KEY = "database.owner"
OWNER_TYPE_KEY = "database.owner-type"
# lance-namespace-impls' keys of the same Database fields.
IMPLS_FIELD_KEYS = {DESCRIPTION_KEY: "comment", LOCATION_KEY: "location", OWNER_KEY: "owner"}
_SPEC_KEY_OF = {alias: key for key, alias in IMPLS_FIELD_KEYS.items()}
# Namespace properties kept in Database fields, which always have a value.
DATABASE_FIELD_KEYS = frozenset(
    {DESCRIPTION_KEY, LOCATION_KEY, OWNER_KEY, OWNER_TYPE_KEY, *IMPLS_FIELD_KEYS.values()}
)
CATALOG_DESCRIPTION_KEY = "description"
CATALOG_LOCATION_KEY = "catalog.location.uri"
# Table parameters the backend owns; request properties cannot override them.
RESERVED_TABLE_PARAMETERS = frozenset({TABLE_TYPE_KEY, "EXTERNAL"})
MANAGED_TABLE = "MANAGED_TABLE"


def is_lance_table(table: Table) -> bool:
    table_type = (table.tableType or "").upper()
    return table_type in (EXTERNAL_TABLE, MANAGED_TABLE) and has_lance_table_type(
        table.parameters
    )


def is_external(table: Table) -> bool:
    """Whether HMS leaves the table's data alone (no move on rename, no delete on drop)."""
    external = (table.parameters or {}).get("EXTERNAL", "")
    return (table.tableType or "").upper() == EXTERNAL_TABLE and external.upper() == "TRUE"


def made_external(table: Table) -> Table:
    """`table` as an external table: HMS moves a managed table's directory when it is renamed."""
    table.tableType = EXTERNAL_TABLE
    table.parameters = {**(table.parameters or {}), "EXTERNAL": "TRUE"}
    return table


def owner_type(value: str) -> int:
    principal = PrincipalType._NAMES_TO_VALUES.get(value.strip().upper())
    if principal is None:
        raise InvalidInputError(f"{OWNER_TYPE_KEY} must be USER, ROLE or GROUP, got {value!r}")
    return principal


def spec_keyed(properties: Mapping[str, str]) -> dict[str, str]:
    """`properties` with impls' keys of Database fields renamed to the spec keys; 13 when both
    keys of one field are given with different values."""
    keyed: dict[str, str] = {}
    for key, value in properties.items():
        spec_key = _SPEC_KEY_OF.get(key, key)
        if keyed.get(spec_key, value) != value:
            raise InvalidInputError(f"{spec_key} and {IMPLS_FIELD_KEYS[spec_key]} differ")
        keyed[spec_key] = value
    return keyed


def spec_keys(keys: Iterable[str]) -> frozenset[str]:
    return frozenset(_SPEC_KEY_OF.get(key, key) for key in keys)


def with_impls_keys(properties: Mapping[str, str]) -> dict[str, str]:
    """Spec-keyed `properties` with each Database field also under impls' key."""
    aliases = {
        alias: properties[key] for key, alias in IMPLS_FIELD_KEYS.items() if key in properties
    }
    return {**properties, **aliases}


def database_properties(database: Database) -> dict[str, str]:
    """The Database's properties under the spec keys and under impls' keys."""
    return with_impls_keys(database_fields(database))


def database_fields(database: Database) -> dict[str, str]:
    """The Database's properties, its fields under the spec keys."""
    properties = dict(database.parameters or {})
    if database.description is not None:
        properties[DESCRIPTION_KEY] = database.description
    if database.locationUri is not None:
        properties[LOCATION_KEY] = plain_location(database.locationUri) or ""
    if database.ownerName is not None:
        properties[OWNER_KEY] = database.ownerName
    if database.ownerType is not None:
        properties[OWNER_TYPE_KEY] = PrincipalType._VALUES_TO_NAMES[database.ownerType]
    return properties


def database_object(
    ref: DatabaseRef, properties: dict[str, str], default_location: str, owner: str
) -> Database:
    """The Database of `properties`; the keys kept in its fields are taken out of them."""
    location = properties.pop(LOCATION_KEY, None) or default_location
    owner_type_name = properties.pop(OWNER_TYPE_KEY, None)
    return Database(
        name=ref.name,
        catalogName=ref.catalog,
        description=properties.pop(DESCRIPTION_KEY, None),
        locationUri=location,
        ownerName=properties.pop(OWNER_KEY, None) or owner,
        ownerType=owner_type(owner_type_name) if owner_type_name else PrincipalType.USER,
        parameters=properties,
    )


def catalog_properties(catalog: Catalog) -> dict[str, str]:
    properties: dict[str, str] = {}
    if catalog.description is not None:
        properties[CATALOG_DESCRIPTION_KEY] = catalog.description
    if catalog.locationUri is not None:
        properties[CATALOG_LOCATION_KEY] = plain_location(catalog.locationUri) or ""
    return properties


def lance_table(
    ref: DatabaseRef,
    name: str,
    location: str,
    properties: Mapping[str, str] | None,
    owner: str,
) -> Table:
    """The HMS table that registers the Lance table at `location`."""
    parameters = {
        key: value
        for key, value in (properties or {}).items()
        if key not in RESERVED_TABLE_PARAMETERS and key.lower() != TABLE_TYPE_KEY
    }
    # HMS 2.x turns an EXTERNAL_TABLE without EXTERNAL=TRUE into a managed table.
    parameters.update({TABLE_TYPE_KEY: LANCE_TABLE_TYPE, "EXTERNAL": "TRUE"})
    storage = StorageDescriptor(
        cols=[],
        location=location,
        serdeInfo=SerDeInfo(parameters={}),
        parameters={},
        bucketCols=[],
        sortCols=[],
    )
    return Table(
        tableName=name,
        dbName=ref.name,
        catName=ref.catalog,
        owner=owner,
        createTime=int(time.time()),
        sd=storage,
        partitionKeys=[],
        parameters=parameters,
        tableType=EXTERNAL_TABLE,
    )
