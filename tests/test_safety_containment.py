"""Containment and ownership on every backend: a client-named location must lie inside the
storage root, outside the catalog's files and outside every other id's own path, or it is
code 13 and nothing is written; DropTable deletes only data its table owns
(`backends/containment.py`)."""

from __future__ import annotations

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

from tests.support.containment_catalogs import Catalog, create_table
from tests.support.lance_data import arrow_stream, sample_table, tree_snapshot

# Why a location is refused (the key part of each message).
INSIDE = "must lie inside the server's storage root"
DOTS = r"must not contain '\.' or '\.\.' segments"
PERCENT = "must not contain '%'"
QUERY = r"must not contain '\?' or '#'"
EMPTY = r"must not contain empty segments \('//'\)"
HOST = "must not name a host other than localhost"
NAMESPACE_DIR = "could hold other tables' own paths"
NO_TABLE = "no Lance table at"


def own_path_of(name: str) -> str:
    """Refused as `name`'s: by the layout (its own path) or by the ownership record there."""
    return (rf"the location lies in the own path of table (\w+\$)*{name}$"
            rf"|the location (is owned by|lies inside the data of) table (\w+\$)*{name}; "
            "a location belongs to one table")


def gone(name: str) -> str:
    """Each backend's words for a missing table `name`."""
    return rf"table id '.*\${name}'|table (\w+\.)?{name} not found|: .*\.{name}$"


def _refused(catalog: Catalog, request: object, why: str) -> None:
    """`request` (RegisterTable or DeclareTable) is code 13 for the reason `why` (a regex of
    the message) and changes no file."""
    before = tree_snapshot(catalog.root)
    method = (
        catalog.namespace.register_table
        if isinstance(request, RegisterTableRequest)
        else catalog.namespace.declare_table
    )
    with pytest.raises(InvalidInputError, match=why):
        method(request)
    assert tree_snapshot(catalog.root) == before
    with pytest.raises(TableNotFoundError, match=gone(request.id[-1])):
        catalog.namespace.table_exists(TableExistsRequest(id=request.id))


def test_locations_outside_the_root_or_at_it_are_refused(catalog: Catalog, tmp_path: Path):
    outside = tmp_path / "outside.lance"
    lance.write_dataset(sample_table(2), str(outside))
    root = str(catalog.root)
    # Each backend reads a relative location its own way (glue and iceberg, as a path where
    # no table is: refused for that alone).
    relative = (r"must be absolute or a URI|no Lance table at relative\.lance|"
                rf"{own_path_of('relative')}|{NAMESPACE_DIR}")
    for location, why in ((root, INSIDE), (f"{root}/", INSIDE), (f"file://{root}", INSIDE),
                          (f"{root}/x/..", DOTS), (str(outside), INSIDE),
                          (f"{root}/../outside.lance", DOTS),
                          (f"{root}/%2E%2E/outside.lance", PERCENT),
                          (f"file://{root}/%252E%252E/outside.lance", PERCENT),
                          ("relative.lance", relative),
                          ("", "RegisterTable needs the location of an existing Lance table")):
        _refused(catalog, RegisterTableRequest(id=catalog.table("alias"), location=location), why)
    for location, why in ((root, INSIDE), (str(outside), INSIDE),
                          (f"{root}/a/../../outside.lance", DOTS)):
        _refused(catalog, DeclareTableRequest(id=catalog.table("alias"), location=location), why)
    assert lance.dataset(str(outside)).count_rows() == 2


def test_another_tables_location_is_refused_and_the_table_survives(catalog: Catalog):
    location = create_table(catalog, "owner")
    owner = own_path_of("owner")
    for alias, why in ((location, owner), (location.rstrip("/") + "/", owner),
                       (location + "/data", owner), (location + "/x/..", DOTS)):
        _refused(catalog, RegisterTableRequest(id=catalog.table("alias"), location=alias), why)
    _refused(catalog, DeclareTableRequest(id=catalog.table("alias"), location=location), owner)
    assert lance.dataset(location).count_rows() == 3


def test_a_location_without_a_lance_table_is_refused(catalog: Catalog):
    _refused(
        catalog,
        RegisterTableRequest(id=catalog.table("alias"), location=str(catalog.root / "nothing")),
        # dir and hive2 have places in their root that are no table's and no database's
        # (hive3's first level holds its catalogs' directories).
        NO_TABLE if catalog.kind in ("dir", "hive2") else NAMESPACE_DIR,
    )


def _own_path(catalog: Catalog, name: str) -> Path:
    """Where the backend's layout puts the table `name` of the catalog's namespace."""
    parent = catalog.parent
    if catalog.kind == "dir":  # nested: `<8 hex>_<namespace$table>`
        return catalog.root / f"0123abcd_{'$'.join([*parent, name])}"
    if catalog.kind in ("hive2", "hive3"):  # hive3: the default catalog's, below the root
        return catalog.root.joinpath(f"{parent[-1]}.db", name)
    if catalog.kind in ("unity", "iceberg"):  # Iceberg: the seed's {warehouse}/{namespace}/…
        return catalog.root.joinpath(*parent, name)
    return catalog.root.joinpath(*parent, f"{name}.lance")


def test_a_table_registered_at_its_own_path_is_dropped_with_its_data(catalog: Catalog):
    own = _own_path(catalog, "adopted")
    lance.write_dataset(sample_table(4), str(own))
    catalog.namespace.register_table(
        RegisterTableRequest(id=catalog.table("adopted"), location=str(own))
    )
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("adopted")))
    assert not own.exists() or not any(own.rglob("*.lance"))


def test_a_table_registered_elsewhere_is_only_deregistered_by_drop(catalog: Catalog):
    """Outside every id's own path: dir and hive have such places in their root (a directory
    that is no table's and no database's); glue, unity and iceberg refuse them, since every
    such directory could be a namespace's and hold other tables' own paths."""
    elsewhere = catalog.root / "external" / "adopted"
    lance.write_dataset(sample_table(4), str(elsewhere))
    request = RegisterTableRequest(id=catalog.table("adopted"), location=str(elsewhere))
    if catalog.kind not in ("dir", "hive2", "hive3"):
        _refused(catalog, request, NAMESPACE_DIR)
        return
    catalog.namespace.register_table(request)
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("adopted")))
    with pytest.raises(TableNotFoundError, match=gone("adopted")):
        catalog.namespace.table_exists(TableExistsRequest(id=catalog.table("adopted")))
    assert lance.dataset(str(elsewhere)).count_rows() == 4


def test_another_tables_own_path_is_refused(catalog: Catalog):
    """While the id `later` exists, its own path is its alone; DeclareTable may not take any
    other id's own path even before that id exists (the table created there later would share
    it)."""
    create_table(catalog, "later")
    others = _own_path_of_existing(catalog, "later")
    _refused(catalog, RegisterTableRequest(id=catalog.table("alias"), location=str(others)),
             own_path_of("later"))
    vacant = _own_path(catalog, "vacant")
    # Iceberg's seed layout does not tell a vacant table path from a namespace's directory.
    why = NAMESPACE_DIR if catalog.kind == "iceberg" else own_path_of("vacant")
    _refused(catalog, DeclareTableRequest(id=catalog.table("alias"), location=str(vacant)), why)


def _own_path_of_existing(catalog: Catalog, name: str) -> Path:
    location = catalog.namespace.describe_table(DescribeTableRequest(id=catalog.table(name)))
    return Path(location.location.removeprefix("file://"))


def test_data_a_deregistered_table_left_is_adopted_by_another_id(catalog: Catalog):
    """Deregistering keeps the data; RegisterTable may then adopt it under another id, which
    owns it from then on (its DropTable deletes it)."""
    location = create_table(catalog, "first")
    catalog.namespace.deregister_table(DeregisterTableRequest(id=catalog.table("first")))
    catalog.namespace.register_table(
        RegisterTableRequest(id=catalog.table("second"), location=location))
    assert lance.dataset(location).count_rows() == 3
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("second")))
    with pytest.raises(ValueError, match="was not found"):
        lance.dataset(location)


def test_a_renamed_tables_data_is_not_adopted_from_another_namespace(catalog: Catalog):
    """The data stays at the old id's path after RenameTable; a table of another namespace
    (whose writers may have no grant here) must not reach it by registering that path."""
    location = create_table(catalog, "moved")
    catalog.namespace.rename_table(
        RenameTableRequest(id=catalog.table("moved"), new_table_name="renamed"))
    elsewhere = [*catalog.parent[:-1], catalog.parent[-1] + "x"]
    catalog.namespace.create_namespace(CreateNamespaceRequest(id=elsewhere))
    _refused(catalog, RegisterTableRequest(id=[*elsewhere, "thief"], location=location),
             own_path_of("renamed"))  # the record names the table living there
    assert lance.dataset(location).count_rows() == 3


def test_a_new_table_never_takes_over_the_data_left_at_its_own_path(catalog: Catalog):
    """A deregistered table's data stays; creating the id again must neither adopt it nor,
    when the first write fails, delete it. Only RegisterTable adopts it."""
    location = create_table(catalog, "kept")
    catalog.namespace.deregister_table(DeregisterTableRequest(id=catalog.table("kept")))
    if catalog.kind == "dir":
        # A nested dir table gets a new path each time: the old data cannot be in the way.
        assert create_table(catalog, "kept") != location
    else:
        with pytest.raises(InvalidInputError, match="lies at its own path"):
            catalog.namespace.create_table(
                CreateTableRequest(id=catalog.table("kept")), arrow_stream(sample_table(1))
            )
        with pytest.raises(InvalidInputError, match="lies at its own path"):
            catalog.namespace.declare_table(DeclareTableRequest(id=catalog.table("kept")))
        catalog.namespace.register_table(
            RegisterTableRequest(id=catalog.table("kept"), location=location))
    assert lance.dataset(location).count_rows() == 3


def test_a_renamed_table_keeps_its_data_and_is_dropped_with_it(catalog: Catalog):
    location = create_table(catalog, "before")
    catalog.namespace.rename_table(
        RenameTableRequest(id=catalog.table("before"), new_table_name="after")
    )
    renamed = catalog.namespace.describe_table(DescribeTableRequest(id=catalog.table("after")))
    assert renamed.location == location
    assert lance.dataset(location).count_rows() == 3
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("after")))
    with pytest.raises(ValueError, match="was not found"):
        lance.dataset(location)


def test_drop_of_an_entry_that_shares_a_location_keeps_the_data(catalog: Catalog):
    """An entry made behind the adapter's back (another tool, an old release) at another
    table's location: dropping it removes only the entry."""
    location = create_table(catalog, "owner")
    unguarded = catalog.namespace.backend  # the backend itself, not behind the guard
    unguarded.register_table(RegisterTableRequest(id=catalog.table("alias"),
                                                  location=location))
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("alias")))
    with pytest.raises(TableNotFoundError, match=gone("alias")):
        catalog.namespace.table_exists(TableExistsRequest(id=catalog.table("alias")))
    assert lance.dataset(location).count_rows() == 3


def test_locations_lance_would_open_elsewhere_are_refused(catalog: Catalog, tmp_path: Path):
    """Forms the old string check read as inside the root while Lance opens another place:
    `file:` without `//` (an absolute path, not one relative to the root), a query or a
    fragment, percent-encoding, empty and dot segments."""
    outside = tmp_path / "outside.lance"
    lance.write_dataset(sample_table(2), str(outside))
    root = str(catalog.root)
    hostile = ((f"file:{outside}", INSIDE), (f"file:{root}/../outside.lance", DOTS),
               (f"{root}/w1#/../../outside.lance", QUERY),
               (f"file://{root}/w1?x=/../../outside.lance", QUERY),
               (f"file://{root}/w1#/../../outside.lance", QUERY), (f"{root}/w1%3F", PERCENT),
               (f"{root}//w1", EMPTY), (f"{root}/./w1", DOTS),
               (f"file://elsewhere{root}/w1", HOST))
    for location, why in hostile:
        _refused(catalog, RegisterTableRequest(id=catalog.table("alias"), location=location), why)
        _refused(catalog, DeclareTableRequest(id=catalog.table("alias"), location=location), why)
    assert lance.dataset(str(outside)).count_rows() == 2


def test_drop_of_an_entry_lance_opens_outside_the_root_keeps_that_data(
    catalog: Catalog, tmp_path: Path
):
    """An entry written behind the adapter's back as `file:<path outside>` (which the old
    check read as relative to the root): DropTable removes the entry, never the data."""
    outside = tmp_path / "outside.lance"
    lance.write_dataset(sample_table(2), str(outside))
    register = catalog.namespace.backend.register_table  # the backend, not behind the guard
    entry = RegisterTableRequest(id=catalog.table("foreign"), location=f"file:{outside}")
    if catalog.kind == "dir":
        # `dir` keeps locations relative to its root: it reads this one as `<root>/file:...`.
        with pytest.raises(InvalidInputError, match="no Lance table at"):
            register(entry)
        return
    register(entry)
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("foreign")))
    with pytest.raises(TableNotFoundError, match=gone("foreign")):
        catalog.namespace.table_exists(TableExistsRequest(id=catalog.table("foreign")))
    assert lance.dataset(str(outside)).count_rows() == 2


def test_a_symbolic_link_in_the_root_leads_nowhere_outside(catalog: Catalog, tmp_path: Path):
    """A link an operator placed in a local root (`<root>/ext` -> a directory outside): a
    location below it is outside the root once the link is resolved, for RegisterTable and
    DeclareTable (refused) and for DropTable of an entry made behind the server's back (the
    entry goes, the data stays)."""
    outside = tmp_path / "linked-outside"
    lance.write_dataset(sample_table(2), str(outside / "t.lance"))
    (catalog.root / "ext").symlink_to(outside, target_is_directory=True)
    through_link = str(catalog.root / "ext" / "t.lance")
    _refused(catalog, RegisterTableRequest(id=catalog.table("linked"), location=through_link),
             INSIDE)
    _refused(catalog, DeclareTableRequest(id=catalog.table("linked"),
                                          location=str(catalog.root / "ext" / "new.lance")),
             INSIDE)
    register = catalog.namespace.backend.register_table  # the backend, not behind the guard
    register(RegisterTableRequest(
        id=catalog.table("linked"), location=through_link))
    catalog.namespace.drop_table(DropTableRequest(id=catalog.table("linked")))
    assert lance.dataset(str(outside / "t.lance")).count_rows() == 2
