"""What the namespaces of the REST catalog backends share."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Self

from lance_namespace import (
    DescribeNamespaceRequest,
    DescribeTableRequest,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    TableExistsRequest,
    TableExistsResponse,
)

from backends.base import MetadataNamespace
from backends.core.lance_tables import open_lance_table
from backends.rest_catalog.client import RestCatalogClient
from backends.vending import S3Credentials


class RestCatalogNamespace(MetadataNamespace):
    """A catalog backend reached through one `RestCatalogClient`; a subclass sets `root`,
    `storage_options`, `client` and `catalog` (its catalog's calls, made with `client`)."""

    root: str
    storage_options: dict[str, str]
    client: RestCatalogClient
    catalog: Any

    def for_caller(self, request: Any) -> Self:
        """With `forward_caller_token`, a view of this backend (sharing its connections and
        caches) whose catalog calls send the caller's bearer token; else this backend."""
        identity = getattr(request, "identity", None)
        return self.acting_as(getattr(identity, "auth_token", None))

    def acting_as(self, token: str | None) -> Self:
        client = self.client.as_caller(token)
        if client is self.client:
            return self
        view = copy.copy(self)
        view.client = client
        view.catalog = copy.copy(self.catalog)
        view.catalog.client = client
        return view

    def storage_root(self) -> str:
        return self.root

    def checks_callers(self) -> bool:
        return bool(self.client.settings.forward_caller_token)

    def root_storage_options(self) -> dict[str, str]:
        return dict(self.storage_options)

    def close(self) -> None:
        self.client.close()

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self.describe_namespace(DescribeNamespaceRequest(id=request.id))
        return NamespaceExistsResponse()

    def table_entry_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        self.describe_table(DescribeTableRequest(id=request.id))
        return TableExistsResponse()

    def relayed_credentials(
        self, table_id: Sequence[str], access: str, caller_token: str | None
    ) -> S3Credentials | None:
        """The catalog's own temporary credentials of a table (credential vending relays
        them), asked for as the caller when the backend forwards the caller's token."""
        return self.acting_as(caller_token).catalog_credentials(list(table_id), access)

    def catalog_credentials(self, table_id: list[str], access: str) -> S3Credentials | None:
        """What the catalog vends for `table_id` with `access`; None: nothing."""
        raise NotImplementedError

    def has_data_at(self, location: str | None) -> bool:
        """Whether a Lance table with data is at a catalog entry's location."""
        return bool(location) and open_lance_table(str(location), self.storage_options) is not None
