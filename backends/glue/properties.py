"""Namespace properties on Glue: the `Parameters` map, plus the object's own `Description`
and (databases only) `LocationUri` fields.

Those two fields read as properties under both spellings in use: the server's spec keys
(`database.description`, `database.location-uri`, as on Hive) and the keys of
lance-namespace-impls (`description`, `location`). Written under either key, a value goes to
the field, never to `Parameters`, so every Glue client sees it where Glue keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lance_namespace import InvalidInputError

from backends.core.locations import check_own_path, join_location, resolve_stored
from backends.core.properties import PropertyChanges
from backends.glue.names import validate_parameters

DESCRIPTION = "Description"
LOCATION_URI = "LocationUri"
FIELD_KEYS: dict[str, tuple[str, ...]] = {
    DESCRIPTION: ("database.description", "description"),
    LOCATION_URI: ("database.location-uri", "location"),
}
DATABASE_FIELDS = (DESCRIPTION, LOCATION_URI)
CATALOG_FIELDS = (DESCRIPTION,)  # a Glue catalog has no location


def namespace_properties(entry: Mapping[str, Any] | None) -> dict[str, str]:
    """A database's or catalog's properties: its Parameters and its fields, under both keys
    (a field wins over a parameter of the same key)."""
    properties = dict((entry or {}).get("Parameters") or {})
    for field, keys in FIELD_KEYS.items():
        value = (entry or {}).get(field)
        if value:
            properties.update(dict.fromkeys(keys, str(value)))
    return properties


def split_properties(
    properties: Mapping[str, str] | None, fields: tuple[str, ...]
) -> tuple[dict[str, str], dict[str, str]]:
    """(the Glue fields, the Parameters) of namespace properties; a field given under both of
    its keys must have one value."""
    parameters = validate_parameters(properties)
    values: dict[str, str] = {}
    for field in fields:
        given = {parameters.pop(key) for key in FIELD_KEYS[field] if key in parameters}
        if len(given) > 1:
            keys = " and ".join(FIELD_KEYS[field])
            raise InvalidInputError(f"properties {keys} name one field and must be equal")
        if given:
            values[field] = given.pop()
    return values, parameters


def namespace_input(
    properties: dict[str, str], root: str, namespace: list[str], namespace_type: str
) -> dict[str, Any]:
    """The DatabaseInput/CatalogInput (without `Name`) of CreateNamespace's properties. A
    database gets a `LocationUri`, `<root>/<namespace…>` unless given, so every Glue client
    (impls, other engines, this server) puts its tables in the same place."""
    fields = CATALOG_FIELDS if namespace_type == "catalog" else DATABASE_FIELDS
    values, parameters = split_properties(properties, fields)
    if namespace_type == "database":
        if LOCATION_URI in values:
            check_namespace_location(values[LOCATION_URI], root, namespace)
        values.setdefault(LOCATION_URI, join_location(root, *namespace))
    return {**values, "Parameters": parameters}


def altered_input(
    current: dict[str, Any],
    changes: PropertyChanges,
    root: str,
    namespace: list[str] | None,
) -> dict[str, Any]:
    """`current` (a DatabaseInput, else a CatalogInput) after AlterNamespace's changes: a
    field's keys set or unset the field, and also clear any parameter spelled like one of its
    keys. `namespace` is the database's id; None for a catalog."""
    database = namespace is not None
    fields = DATABASE_FIELDS if database else CATALOG_FIELDS
    set_fields, set_parameters = split_properties(changes.updates, fields)
    if LOCATION_URI in set_fields and set_fields[LOCATION_URI] != current.get(LOCATION_URI):
        check_namespace_location(set_fields[LOCATION_URI], root, namespace or [])
    touched = {field for field in fields if set(FIELD_KEYS[field]) & changes.removals}
    touched |= set_fields.keys()
    shadowed = {key for field in touched for key in FIELD_KEYS[field]}
    parameters = {
        key: value
        for key, value in (current.get("Parameters") or {}).items()
        if key not in changes.removals and key not in shadowed
    }
    altered = {key: value for key, value in current.items() if key not in touched}
    return {**altered, **set_fields, "Parameters": {**parameters, **set_parameters}}


def check_namespace_location(location: str, root: str, namespace: list[str]) -> None:
    """A location given through the server must be the namespace's own path,
    `<root>/<namespace…>` (`backends.core.locations.check_own_path`)."""
    check_own_path(location, resolve_stored(root).child(*namespace))
