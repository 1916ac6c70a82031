"""What the namespaces of the REST catalog backends share."""

from __future__ import annotations

from collections.abc import Sequence

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
    `storage_options` and `client` and is decorated with `acts_for_the_caller`."""

    root: str
    storage_options: dict[str, str]
    client: RestCatalogClient

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
        with self.client.acting_as(caller_token):
            return self.catalog_credentials(list(table_id), access)

    def catalog_credentials(self, table_id: list[str], access: str) -> S3Credentials | None:
        """What the catalog vends for `table_id` with `access`; None: nothing."""
        raise NotImplementedError

    def has_data_at(self, location: str | None) -> bool:
        """Whether a Lance table with data is at a catalog entry's location."""
        return bool(location) and open_lance_table(str(location), self.storage_options) is not None
