"""`lance-adapter record-owners`: tables made before ownership records (forged here by
removing a table's record and claim) get a record when one entry alone names their location,
after which the rules of recorded data hold for them; a location two entries name is left to
the operator."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lance
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DropTableRequest,
    InvalidInputError,
    RegisterTableRequest,
)

from app.cli import main
from backends import load_namespace
from backends.owner_backfill import Backfilled, record_owners
from backends.owner_record import OWNER_FILE, Record, read_record
from backends.ownership_claims import CLAIM_DATASET
from tests.support.containment_catalogs import Catalog, create_table
from tests.support.lance_data import sample_table


def _forget_records(location: str | Path) -> None:
    """Make the table at `location` one from before records: no record, no claim."""
    place = Path(str(location).removeprefix("file://"))
    (place / OWNER_FILE).unlink(missing_ok=True)
    shutil.rmtree(place / CLAIM_DATASET, ignore_errors=True)


def _register_unrecorded(catalog: Catalog, table: list[str], place: Path) -> None:
    catalog.namespace.register_table(RegisterTableRequest(id=table, location=str(place)))
    _forget_records(place)


def _ours(catalog: Catalog, other: list[str]) -> dict[str, Backfilled]:
    """What `record-owners` did to this test's tables, by name (a shared metastore holds
    other tests' tables too: their locations lie outside this test's root, so are untouched)."""
    ours = {"$".join(catalog.parent), "$".join(other)}
    return {done.table.rsplit("$", 1)[-1]: done for done in record_owners(catalog.namespace)
            if done.table.rsplit("$", 1)[0] in ours}


@pytest.mark.parametrize("catalog", ["dir", "hive2", "hive3", "unity"], indirect=True)
def test_tables_from_before_records_are_recorded_unless_shared(catalog: Catalog) -> None:
    own = create_table(catalog, "own")
    _forget_records(own)
    external = catalog.root / "external"
    lance.write_dataset(sample_table(2), str(external / "hrdata.lance"))
    lance.write_dataset(sample_table(2), str(external / "shared.lance"))
    _register_unrecorded(catalog, catalog.table("ext"), external / "hrdata.lance")
    other = [*catalog.parent[:-1], catalog.parent[-1] + "other"]
    catalog.namespace.create_namespace(CreateNamespaceRequest(id=other))
    # Before records, a second entry could name the same location (the hole records close).
    _register_unrecorded(catalog, catalog.table("first"), external / "shared.lance")
    _register_unrecorded(catalog, [*other, "second"], external / "shared.lance")

    outcomes = _ours(catalog, other)

    assert {name: done.outcome for name, done in outcomes.items()} == {
        "own": "recorded", "ext": "recorded", "first": "shared", "second": "shared"}
    assert read_record(own, None) == Record(catalog.table("own"), False)
    assert read_record(str(external / "hrdata.lance"), None) == Record(catalog.table("ext"), False)
    assert read_record(str(external / "shared.lance"), None) is None
    with pytest.raises(InvalidInputError, match=r"is owned by table .*ext"):
        catalog.namespace.register_table(
            RegisterTableRequest(id=[*other, "steal"], location=str(external / "hrdata.lance")))
    # Its own path: DropTable deletes its data again, as a recorded table's.
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("own")))
    assert not Path(own.removeprefix("file://")).exists()
    again = {name: done.outcome for name, done in _ours(catalog, other).items()}
    assert again == {"ext": "recorded already", "first": "shared", "second": "shared"}


def test_the_command_prints_a_line_a_table_and_fails_while_one_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "root"
    arguments = ["record-owners", "--impl", "dir", "--prop", f"root={root}"]
    assert main(arguments) == 0  # nothing to record
    assert capsys.readouterr().out == ""
    namespace = load_namespace("dir", {"root": str(root)})
    catalog = Catalog(namespace, root, ["ns"], "dir")
    namespace.create_namespace(CreateNamespaceRequest(id=["ns"]))
    _forget_records(create_table(catalog, "t"))
    lance.write_dataset(sample_table(2), str(root / "external" / "both"))
    _register_unrecorded(catalog, ["ns", "a"], root / "external" / "both")
    _register_unrecorded(catalog, ["ns", "b"], root / "external" / "both")
    assert main(arguments) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted((line["table"], line["outcome"]) for line in lines) == [
        ("ns$a", "shared"), ("ns$b", "shared"), ("ns$t", "recorded")]
    assert all("deregister all but one" in line["detail"]
               for line in lines if line["outcome"] == "shared")
