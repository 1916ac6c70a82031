"""What an Iceberg REST refusal (a 404/409, or the server's exception type) means, per kind
of call."""

from __future__ import annotations

from lance_namespace import (
    ConcurrentModificationError,
    InvalidInputError,
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
    "NoSuchNamespaceException": NamespaceNotFoundError,
    "AlreadyExistsException": NamespaceAlreadyExistsError,
}
DROP_NAMESPACE_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    409: NamespaceNotEmptyError,
    "NoSuchNamespaceException": NamespaceNotFoundError,
    "NamespaceNotEmptyException": NamespaceNotEmptyError,
}
TABLE_ERRORS: ErrorRules = {
    404: TableNotFoundError,
    409: TableAlreadyExistsError,
    "NoSuchTableException": TableNotFoundError,
    "NoSuchNamespaceException": NamespaceNotFoundError,
    "AlreadyExistsException": TableAlreadyExistsError,
}
CREATE_TABLE_ERRORS: ErrorRules = {**TABLE_ERRORS, 404: NamespaceNotFoundError}
WAREHOUSE_ERRORS: ErrorRules = {404: NamespaceNotFoundError}
# 422: a key both updated and removed.
NAMESPACE_PROPERTIES_ERRORS: ErrorRules = {**NAMESPACE_ERRORS, 422: InvalidInputError}
COMMIT_ERRORS: ErrorRules = {
    **TABLE_ERRORS,
    409: ConcurrentModificationError,
    "CommitFailedException": ConcurrentModificationError,
}
