"""Credential vending on a server of several catalogs (`backends.federation`): each catalog
vends with its own `vending.*` properties, or not at all, for the tables of its ids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from backends.vending.vendor import CredentialVendor, VendedCredentials, VendListener


class CatalogVendor:
    """One catalog's vendor, handed the catalog's own ids (the id without its first part)."""

    def __init__(self, vendor: CredentialVendor) -> None:
        self._vendor = vendor

    def asked(self, vend_credentials: bool | None) -> bool:
        return self._vendor.asked(vend_credentials)

    def vend(
        self, location: str, identity: str | None, table_id: Sequence[str],
        caller_token: str | None = None, may_write: bool = True,
    ) -> VendedCredentials | None:
        return self._vendor.vend(location, identity, list(table_id[1:]), caller_token,
                                 may_write)


class CatalogVendors:
    """The vendors of the catalogs that vend (name -> vendor)."""

    def __init__(self, vendors: Mapping[str, CredentialVendor]) -> None:
        self._vendors = {name: CatalogVendor(vendor) for name, vendor in vendors.items()}
        self._inner = dict(vendors)

    def for_table(self, table_id: Sequence[str]) -> CatalogVendor | None:
        """The vendor of the table's catalog; None where that catalog does not vend."""
        return self._vendors.get(table_id[0]) if table_id else None

    def add_listener(self, listener: VendListener) -> None:
        for vendor in self._inner.values():
            vendor.add_listener(listener)
