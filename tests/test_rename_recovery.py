"""A rename cut off between its two catalog calls (forged here by its first steps: the record
handed to the new id, the new id registered at the data) leaves both ids naming the data; the
next maintenance pass deregisters the old one (`backends/rename_recovery.py`), on every
backend, and never an entry another tool made beside a table (no rename noted in the record)."""

from __future__ import annotations

import pytest
from lance_namespace import (
    CountTableRowsRequest,
    DescribeTableRequest,
    RegisterTableRequest,
    TableExistsRequest,
    TableNotFoundError,
)

from backends.maintenance import MaintenancePolicy, maintain_all
from backends.owner_record import read_record
from tests.support.containment_catalogs import WITH_HIVE3, Catalog, create_table


def _half_renamed(catalog: Catalog, old: str, new: str) -> str:
    location = create_table(catalog, old)
    assert catalog.namespace.containment.records.hand_over(
        catalog.table(old), catalog.table(new), location)
    catalog.namespace.backend.register_table(
        RegisterTableRequest(id=catalog.table(new), location=location))
    return location


@pytest.mark.parametrize("catalog", WITH_HIVE3, indirect=True)
def test_the_old_name_of_a_half_done_rename_is_deregistered(catalog: Catalog) -> None:
    location = _half_renamed(catalog, "before", "after")
    namespace = catalog.namespace
    assert namespace.finish_cut_off_rename(catalog.table("before"))
    with pytest.raises(TableNotFoundError):
        namespace.table_exists(TableExistsRequest(id=catalog.table("before")))
    assert namespace.count_table_rows(CountTableRowsRequest(id=catalog.table("after"))).count == 3
    record = read_record(location, None)
    assert record is not None and record.owner == catalog.table("after")
    assert record.renamed_from is None
    assert not namespace.finish_cut_off_rename(catalog.table("after"))


@pytest.mark.parametrize("catalog", ["dir", "hive2"], indirect=True)
def test_an_entry_beside_a_table_is_not_taken_for_a_half_done_rename(catalog: Catalog) -> None:
    location = create_table(catalog, "owner")
    catalog.namespace.backend.register_table(  # another tool's entry naming the same data
        RegisterTableRequest(id=catalog.table("alias"), location=location))
    assert not catalog.namespace.finish_cut_off_rename(catalog.table("alias"))
    assert not catalog.namespace.finish_cut_off_rename(catalog.table("owner"))
    for name in ("owner", "alias"):
        catalog.namespace.describe_table(DescribeTableRequest(id=catalog.table(name)))


@pytest.mark.parametrize("catalog", ["dir"], indirect=True)
def test_a_maintenance_pass_finishes_it(catalog: Catalog) -> None:
    _half_renamed(catalog, "x", "y")
    outcomes = {done.table: done for done in maintain_all(catalog.namespace, MaintenancePolicy())}
    old = "$".join(catalog.table("x"))
    assert outcomes[old].actions == ["deregistered: the old name of a rename cut off half-way"]
    assert outcomes["$".join(catalog.table("y"))].error is None
    with pytest.raises(TableNotFoundError):
        catalog.namespace.table_exists(TableExistsRequest(id=catalog.table("x")))
