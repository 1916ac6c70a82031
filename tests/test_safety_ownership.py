"""Ownership is recorded with the data (`backends/ownership.py`): a location belongs to one
table, whatever the request order, rename history or shared location; DropTable deletes only
data whose record names the table dropped. Each test reproduces a way one namespace reached
another's data, on every backend (fixture `catalog`, `tests/support/containment_catalogs.py`,
hive3 included),
and asserts what was not registered, read or deleted."""

from __future__ import annotations

import threading
from pathlib import Path

import lance
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeTableRequest,
    DropTableRequest,
    InvalidInputError,
    RegisterTableRequest,
    RenameTableRequest,
    TableExistsRequest,
    TableNotFoundError,
)

from backends import load_namespace
from backends.core.locations import resolve_stored
from backends.guard import GuardedNamespace
from backends.owner_record import OWNER_FILE, Record, read_record, write_record
from backends.ownership_claims import CLAIM_DATASET
from tests.support.containment_catalogs import WITH_HIVE3, Catalog, create_table
from tests.support.glue import MotoEndpoint, s3_storage
from tests.support.lance_data import arrow_stream, sample_table, tree_snapshot


def _other_namespace(catalog: Catalog, suffix: str) -> list[str]:
    other = [*catalog.parent[:-1], catalog.parent[-1] + suffix]
    catalog.namespace.create_namespace(CreateNamespaceRequest(id=other))
    return other


def _refused(catalog: Catalog, request: RegisterTableRequest, why: str) -> None:
    before = tree_snapshot(catalog.root)
    with pytest.raises(InvalidInputError, match=why):
        catalog.namespace.register_table(request)
    assert tree_snapshot(catalog.root) == before
    with pytest.raises(TableNotFoundError):
        catalog.namespace.table_exists(TableExistsRequest(id=request.id))


@pytest.mark.parametrize("catalog", WITH_HIVE3, indirect=True)
def test_a_created_table_records_its_owner_with_its_data(catalog: Catalog) -> None:
    location = create_table(catalog, "recorded")
    record = read_record(location, None)
    assert record is not None and record.owner == catalog.table("recorded") and record.placed
    assert lance.dataset(location).count_rows() == 3  # Lance reads past the record


@pytest.mark.parametrize("catalog", WITH_HIVE3, indirect=True)
def test_a_location_registered_once_is_not_registered_again(catalog: Catalog) -> None:
    """Admin registers `hr$ext` somewhere; another namespace's admin registering the same
    location gets 13, and cannot read or write through it."""
    location = create_table(catalog, "ext")
    thief = [*_other_namespace(catalog, "steal"), "steal"]
    _refused(catalog, RegisterTableRequest(id=thief, location=location),
             r"owned by table .*ext|own path of table")
    # Places in the root that are no id's own path (on Unity: a segment no name can have).
    no_ones = {"dir": "hrdata", "hive2": "hrdata", "hive3": "hrdata", "unity": "hr.lance"}
    if catalog.kind in no_ones:
        elsewhere = catalog.root / "external" / no_ones[catalog.kind]
        lance.write_dataset(sample_table(2), str(elsewhere))
        catalog.namespace.register_table(
            RegisterTableRequest(id=catalog.table("shared"), location=str(elsewhere)))
        _refused(catalog, RegisterTableRequest(id=thief, location=str(elsewhere)),
                 r"is owned by table .*shared; a location belongs to one table")
        same_namespace = RegisterTableRequest(id=catalog.table("twin"), location=str(elsewhere))
        _refused(catalog, same_namespace, r"is owned by table .*shared")


@pytest.mark.parametrize("catalog", WITH_HIVE3, indirect=True)
def test_data_left_by_a_rename_to_another_namespace_is_not_adopted(catalog: Catalog) -> None:
    """`sales$mv` renamed to `hr$payroll` keeps its data in `sales$mv`'s path; a table of
    `sales` registering that path ("adopting" what the gone id left) is refused: the record
    names `hr$payroll`, which lives there."""
    location = create_table(catalog, "mv")
    hr = _other_namespace(catalog, "hr")
    catalog.namespace.rename_table(RenameTableRequest(
        id=catalog.table("mv"), new_namespace_id=hr, new_table_name="payroll"))
    moved = catalog.namespace.describe_table(DescribeTableRequest(id=[*hr, "payroll"])).location
    assert moved == location, "a rename keeps the data where it is"
    record = read_record(location, None)
    assert record is not None and record.owner == [*hr, "payroll"]
    _refused(catalog, RegisterTableRequest(id=catalog.table("grab"), location=location),
             r"owned by table .*payroll")
    catalog.namespace.drop_table(DropTableRequest(id=[*hr, "payroll"]))
    with pytest.raises(ValueError, match="was not found"):
        lance.dataset(location)  # the owner's drop deletes it: it was the owner's


@pytest.mark.parametrize("catalog", WITH_HIVE3, indirect=True)
def test_entries_the_server_did_not_record_never_lose_their_data(catalog: Catalog) -> None:
    """Three entries written by other tools (straight to the catalog, no record) at one
    location, the own path of an id the catalog no longer holds: DropTable of one of them
    removes only that entry."""
    location = create_table(catalog, "gone")
    catalog.namespace.backend.deregister_table(DeregisterTableRequest(id=catalog.table("gone")))
    _remove_record(location)
    for name in ("one", "two", "three"):
        # Straight to the backend, not through the guard: as another tool writes entries.
        catalog.namespace.backend.register_table(
            RegisterTableRequest(id=catalog.table(name), location=location))
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("one")))
    assert lance.dataset(location).count_rows() == 3
    for name in ("two", "three"):
        described = catalog.namespace.describe_table(DescribeTableRequest(id=catalog.table(name)))
        assert lance.dataset(described.location).count_rows() == 3


@pytest.mark.parametrize("catalog", WITH_HIVE3, indirect=True)
def test_drop_deletes_only_what_the_record_names(catalog: Catalog) -> None:
    """A table whose record names another id (the record was moved by a rename the catalog
    then lost, say) is only deregistered by DropTable."""
    location = create_table(catalog, "named")
    assert read_record(location, None) is not None
    write_record(location, None, Record([*catalog.parent, "someone_else"], True))
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("named")))
    assert lance.dataset(location).count_rows() == 3


def _at_once(namespace: GuardedNamespace,
             requests: list[RegisterTableRequest]) -> list[Exception | None]:
    """Send `requests` from one thread each, released together; what each raised."""
    outcomes: list[Exception | None] = [None] * len(requests)
    start = threading.Barrier(len(requests))

    def register(index: int) -> None:
        start.wait(timeout=30)
        try:
            namespace.register_table(requests[index])
        except Exception as error:  # the outcome under test
            outcomes[index] = error

    threads = [threading.Thread(target=register, args=(index,)) for index in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes


def _one_owner_after_a_race(namespace: GuardedNamespace, location: str,
                            contenders: list[list[str]], options: dict[str, str] | None) -> None:
    """Registrations of the unrecorded `location` by each of `contenders` at once: exactly
    one is registered and recorded; the others are refused (13) and left no entry."""
    outcomes = _at_once(namespace, [RegisterTableRequest(id=table, location=location)
                                    for table in contenders])
    won = [table for table, outcome in zip(contenders, outcomes, strict=True) if outcome is None]
    assert len(won) == 1, outcomes
    record = read_record(location, options)
    assert record is not None and record.owner == won[0]
    for table, outcome in zip(contenders, outcomes, strict=True):
        if table != won[0]:
            assert isinstance(outcome, InvalidInputError), outcome
            with pytest.raises(TableNotFoundError):
                namespace.table_exists(TableExistsRequest(id=table))


@pytest.mark.parametrize("catalog", ["dir", "hive2", "hive3", "unity"], indirect=True)
def test_two_registrations_of_one_location_at_once_leave_one_owner(catalog: Catalog) -> None:
    """Two namespaces' tables registering one free location at once (the record is written
    after the catalog entry, so both passed its check before the location was claimed)."""
    other = _other_namespace(catalog, "race")
    for attempt in range(4):
        place = catalog.root / "external" / f"raced{attempt}.lance"
        lance.write_dataset(sample_table(2), str(place))
        _one_owner_after_a_race(catalog.namespace, str(place), [
            catalog.table(f"mine{attempt}"), [*other, f"theirs{attempt}"]], None)


def test_on_object_storage_registrations_at_once_leave_one_owner(
    dir_on_s3: GuardedNamespace, clean_moto: MotoEndpoint,
) -> None:
    """The same race on an S3 root: Lance's conditional put decides the claim."""
    options = s3_storage(clean_moto.url)
    for attempt in range(4):
        place = f"s3://lake/root/external/raced{attempt}.lance"
        lance.write_dataset(sample_table(2), place, storage_options=options)
        _one_owner_after_a_race(dir_on_s3, place, [
            ["sales", f"mine{attempt}"], ["hr", f"theirs{attempt}"], ["hr", f"more{attempt}"]],
            options)


@pytest.mark.parametrize("catalog", ["dir"], indirect=True)
def test_a_claim_is_released_by_a_failed_registration_and_kept_by_a_cut_off_one(
    catalog: Catalog,
) -> None:
    """A registration the catalog refuses leaves no claim behind; one cut off between its
    claim and its record (a kill, forged here by claiming alone) keeps the location from
    other tables, and lets its own table finish."""
    place = catalog.root / "external" / "claimed.lance"
    lance.write_dataset(sample_table(2), str(place))
    with pytest.raises(Exception, match=r"not found|not exist"):
        catalog.namespace.register_table(
            RegisterTableRequest(id=["no_such_namespace", "t"], location=str(place)))
    assert not (place / CLAIM_DATASET).exists()
    cut_off = catalog.table("cut_off")
    assert catalog.namespace.containment.records.claim_first(
        cut_off, resolve_stored(str(place)),
        RegisterTableRequest(id=cut_off, location=str(place)))
    _refused(catalog, RegisterTableRequest(id=catalog.table("next"), location=str(place)),
             rf"being registered by table .*cut_off .*remove {CLAIM_DATASET}")
    catalog.namespace.register_table(RegisterTableRequest(id=cut_off, location=str(place)))
    assert read_record(str(place), None) == Record(cut_off, False)


@pytest.mark.parametrize("catalog", ["dir", "unity"], indirect=True)
def test_a_place_inside_a_location_being_registered_is_not_registered(catalog: Catalog) -> None:
    """While `x` is being registered (claimed, not yet recorded: forged by claiming alone),
    another table may not register a place inside it, whose keys would reach into `x`."""
    outer = catalog.root / "external" / "nest.lance"
    lance.write_dataset(sample_table(2), str(outer / "sub.lance"))
    lance.write_dataset(sample_table(2), str(outer))
    registering = catalog.table("registering")
    assert catalog.namespace.containment.records.claim_first(
        registering, resolve_stored(str(outer)),
        RegisterTableRequest(id=registering, location=str(outer)))
    thief = [*_other_namespace(catalog, "inside"), "inside"]
    _refused(catalog, RegisterTableRequest(id=thief, location=str(outer / "sub.lance")),
             r"inside one being registered by table .*registering")
    catalog.namespace.register_table(RegisterTableRequest(id=registering, location=str(outer)))


@pytest.mark.parametrize("catalog", ["dir"], indirect=True)
def test_a_location_and_a_place_inside_it_registered_at_once_never_both_win(
    catalog: Catalog,
) -> None:
    """Registrations at once of `x` and of `x/sub`: each looks for the other after claiming,
    so at most one is registered (both may be refused), and a refused one leaves no claim."""
    other = _other_namespace(catalog, "nest")
    for attempt in range(6):
        outer = catalog.root / "external" / f"nested{attempt}.lance"
        lance.write_dataset(sample_table(2), str(outer / "sub.lance"))
        lance.write_dataset(sample_table(2), str(outer))
        tables = [catalog.table(f"outer{attempt}"), [*other, f"inner{attempt}"]]
        places = [outer, outer / "sub.lance"]
        outcomes = _at_once(catalog.namespace, [
            RegisterTableRequest(id=table, location=str(place))
            for table, place in zip(tables, places, strict=True)])
        assert outcomes.count(None) <= 1, outcomes
        for table, place, outcome in zip(tables, places, outcomes, strict=True):
            if outcome is None:
                assert read_record(str(place), None) == Record(table, False)
                continue
            assert isinstance(outcome, InvalidInputError), outcome
            assert not (place / CLAIM_DATASET).exists()
            with pytest.raises(TableNotFoundError):
                catalog.namespace.table_exists(TableExistsRequest(id=table))


@pytest.mark.parametrize("catalog", ["dir", "hive2", "hive3", "unity"], indirect=True)
def test_a_location_holding_another_tables_data_is_not_registered(catalog: Catalog) -> None:
    """`hr$a` is registered at `x/sub.lance`; another namespace's admin may not register `x`
    around it (keys vended for `x` would read `hr$a`'s data), nor may a table of `hr`."""
    outer = catalog.root / "external" / "x.lance"
    lance.write_dataset(sample_table(2), str(outer / "sub.lance"))
    lance.write_dataset(sample_table(2), str(outer))
    catalog.namespace.register_table(
        RegisterTableRequest(id=catalog.table("inner"), location=str(outer / "sub.lance")))
    thief = [*_other_namespace(catalog, "around"), "around"]
    for table in (thief, catalog.table("around")):
        _refused(catalog, RegisterTableRequest(id=table, location=str(outer)),
                 r"holds the data of table .*inner \(at sub.lance\)")


def test_on_object_storage_a_location_holding_another_tables_data_is_refused(
    dir_on_s3: GuardedNamespace, clean_moto: MotoEndpoint,
) -> None:
    options = s3_storage(clean_moto.url)
    outer = "s3://lake/root/external/x.lance"
    lance.write_dataset(sample_table(2), f"{outer}/sub.lance", storage_options=options)
    lance.write_dataset(sample_table(2), outer, storage_options=options)
    dir_on_s3.register_table(
        RegisterTableRequest(id=["hr", "inner"], location=f"{outer}/sub.lance"))
    with pytest.raises(InvalidInputError, match=r"holds the data of table hr\$inner"):
        dir_on_s3.register_table(RegisterTableRequest(id=["sales", "around"], location=outer))


def _remove_record(location: str) -> None:
    (Path(resolve_stored(location).uri) / OWNER_FILE).unlink()


@pytest.fixture
def dir_on_s3(clean_moto: MotoEndpoint) -> GuardedNamespace:
    """`dir` on a root in moto's S3, loaded as the server loads it."""
    clean_moto.client("s3").create_bucket(Bucket="lake")  # type: ignore[attr-defined]
    storage = {f"storage.{key}": value for key, value in s3_storage(clean_moto.url).items()}
    namespace = load_namespace("dir", {"root": "s3://lake/root", **storage})
    for name in ("sales", "hr"):
        namespace.create_namespace(CreateNamespaceRequest(id=[name]))
    return namespace


def test_on_object_storage_a_rename_keeps_its_data_and_moves_its_record(
    dir_on_s3: GuardedNamespace, clean_moto: MotoEndpoint,
) -> None:
    """A nested table renamed on an S3 root (answered 400 before), a declared one too; the
    record follows, and another namespace cannot register the data left behind."""
    options = s3_storage(clean_moto.url)
    dir_on_s3.create_table(CreateTableRequest(id=["sales", "mv"]), arrow_stream(sample_table(3)))
    location = dir_on_s3.describe_table(DescribeTableRequest(id=["sales", "mv"])).location
    dir_on_s3.rename_table(RenameTableRequest(
        id=["sales", "mv"], new_namespace_id=["hr"], new_table_name="payroll"))
    moved = dir_on_s3.describe_table(DescribeTableRequest(id=["hr", "payroll"])).location
    assert moved == location
    assert read_record(location, options) == Record(["hr", "payroll"], True)
    with pytest.raises(InvalidInputError, match=r"is owned by table hr\$payroll"):
        dir_on_s3.register_table(RegisterTableRequest(id=["sales", "grab"], location=location))
    dir_on_s3.declare_table(DeclareTableRequest(id=["sales", "draft"]))
    dir_on_s3.rename_table(RenameTableRequest(id=["sales", "draft"], new_table_name="final"))
    final = dir_on_s3.describe_table(DescribeTableRequest(id=["sales", "final"])).location
    assert read_record(final, options) == Record(["sales", "final"], True)
    dir_on_s3.drop_table(DropTableRequest(id=["hr", "payroll"]))
    with pytest.raises(ValueError, match="was not found"):
        lance.dataset(location, storage_options=options)


@pytest.mark.parametrize("catalog", ["iceberg"], indirect=True)
def test_where_paths_nest_a_table_and_a_namespace_never_share_an_id(catalog: Catalog) -> None:
    """Iceberg's seed layout puts `wh$ns$t` at `<root>/wh/ns/t`, which is also where the
    namespace `wh$ns$t` keeps its tables: one of the two is refused, so no table's data (nor
    its DropTable, nor its vended keys) reaches another table's."""
    location = create_table(catalog, "both")
    assert location == str(catalog.root.joinpath(*catalog.parent, "both"))  # the seed's path
    with pytest.raises(InvalidInputError, match=r"a table .*both exists: in this backend's"):
        catalog.namespace.create_namespace(CreateNamespaceRequest(id=catalog.table("both")))
    catalog.namespace.create_namespace(CreateNamespaceRequest(id=catalog.table("space")))
    with pytest.raises(InvalidInputError, match=r"a namespace .*space exists: in this"):
        create_table(catalog, "space")
    with pytest.raises(InvalidInputError, match=r"a namespace .*space exists: in this"):
        catalog.namespace.rename_table(RenameTableRequest(
            id=catalog.table("both"), new_table_name="space"))
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("both")))
    with pytest.raises(ValueError, match="was not found"):
        lance.dataset(location)
