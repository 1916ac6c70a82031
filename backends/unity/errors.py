"""What a Unity Catalog refusal means, per kind of call. Unity answers "already exists" with
409 ALREADY_EXISTS (older servers) or 400 <KIND>_ALREADY_EXISTS (newer ones)."""

from __future__ import annotations

from lance_namespace import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from backends.rest_catalog import ErrorRules

NAMESPACE_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    409: NamespaceAlreadyExistsError,
    "ALREADY_EXISTS": NamespaceAlreadyExistsError,
    "SCHEMA_ALREADY_EXISTS": NamespaceAlreadyExistsError,
    "RESOURCE_ALREADY_EXISTS": NamespaceAlreadyExistsError,
}
DROP_SCHEMA_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    "FAILED_PRECONDITION": NamespaceNotEmptyError,
}
TABLE_ERRORS: ErrorRules = {404: TableNotFoundError}
CREATE_TABLE_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    409: TableAlreadyExistsError,
    "ALREADY_EXISTS": TableAlreadyExistsError,
    "TABLE_ALREADY_EXISTS": TableAlreadyExistsError,
    "RESOURCE_ALREADY_EXISTS": TableAlreadyExistsError,
}
