"""Ownership records for tables made before the server wrote them (`lance-adapter
record-owners`): each table whose location has no record, and which is the only entry naming
that location, is recorded as its owner, as a RegisterTable at the same location would.

A location two entries name (other tools' entries, or a registration made twice before
records) is left unrecorded and reported: which of them owns the data is the operator's
choice, made by deregistering the others and running this again. So is a location outside the
root and the external locations (the server writes nothing there), and one lying inside a
recorded location. Each record is written after a claim, as a registration's is, so a
registration of the same location under way in a serving replica is never overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lance_namespace import DescribeTableRequest, LanceNamespaceError

from backends.containment import CATALOG_ENTRIES, Containment
from backends.core.locations import StorageLocation, physically_inside, resolve_stored
from backends.core.names import ID_DELIMITER
from backends.core.settings import ConfigurationError
from backends.guard import GuardedNamespace
from backends.maintenance import table_ids
from backends.owner_record import Record, read_record, write_record
from backends.ownership_claims import claim_location

logger = logging.getLogger("lance_adapter.ownership")
# Outcomes that leave nothing to the operator.
DONE = frozenset({"recorded", "recorded already"})


@dataclass(frozen=True)
class Backfilled:
    """What happened to one table's location."""

    table: str
    outcome: str  # recorded, recorded already, shared, inside another, outside, failed
    detail: str = ""


def record_owners(namespace: GuardedNamespace,
                  observe: Callable[[Backfilled], None] | None = None) -> list[Backfilled]:
    """Record the owner of every unrecorded table location of `namespace` that one entry
    alone names. Two passes: the first finds the unrecorded locations and the entries naming
    each (it holds those alone, not the catalog), the second writes their records."""
    containment = namespace.containment
    if containment is None:
        raise ConfigurationError("this backend names no storage root: it keeps no ownership "
                                 "records")
    outcomes: list[Backfilled] = []
    naming: dict[StorageLocation, list[list[str]]] = {}
    for table_id, place, done in _unrecorded(namespace, containment):
        if done is not None:
            outcomes.append(done)
        elif place is not None:
            naming.setdefault(place, []).append(table_id)
    for place, owners in naming.items():
        outcomes.extend(_record(containment, place, owners))
    for done in outcomes:
        if observe is not None:
            observe(done)
    return outcomes


def _unrecorded(
    namespace: GuardedNamespace, containment: Containment
) -> Iterator[tuple[list[str], StorageLocation | None, Backfilled | None]]:
    """Each table with its location, and its outcome when nothing is to be recorded."""
    for table_id in table_ids(namespace):
        name = ID_DELIMITER.join(table_id)
        try:
            entry = namespace.backend.describe_table_entry(DescribeTableRequest(id=table_id))
            place = resolve_stored(entry.location or "", containment.root)
        except LanceNamespaceError as error:
            yield table_id, None, Backfilled(name, "failed", str(error))
            continue
        if _base(containment, place) is None:
            yield table_id, place, Backfilled(
                name, "outside", "not inside the root or an external location")
        elif read_record(place.uri, _options(containment)) is not None:
            yield table_id, place, Backfilled(name, "recorded already")
        else:
            yield table_id, place, None


def _record(containment: Containment, place: StorageLocation,
            owners: list[list[str]]) -> list[Backfilled]:
    names = [ID_DELIMITER.join(owner) for owner in owners]
    if len(owners) > 1:
        shared = f"named by {len(owners)} entries: {', '.join(names)}; deregister all but one"
        return [Backfilled(name, "shared", shared) for name in names]
    base = _base(containment, place)
    assert base is not None  # checked by `_unrecorded`
    around = containment.records.recorded_around(place, base)
    if around is not None:
        inside = f"lies inside the recorded data of {ID_DELIMITER.join(around[0].owner)}"
        return [Backfilled(names[0], "inside another", inside)]
    try:
        claimant = claim_location(place.uri, _options(containment), owners[0],
                                  containment.records.catalog)
        if claimant is not None and (claimant.owner != owners[0]
                                     or claimant.catalog != containment.records.catalog):
            return [Backfilled(names[0], "shared",
                               f"being registered by {ID_DELIMITER.join(claimant.owner)}")]
        write_record(place.uri, _options(containment), Record(owners[0], placed=False,
                                                                catalog=containment.records.catalog))
    except (LanceNamespaceError, OSError) as error:
        logger.warning("the record of table %s was not written: %s", names[0], error)
        return [Backfilled(names[0], "failed", str(error))]
    return [Backfilled(names[0], "recorded")]


def _base(containment: Containment, place: StorageLocation) -> StorageLocation | None:
    """The root or external location `place` lies in, where records are kept; None outside."""
    outside = containment.external_of(place)
    if outside is not None:
        return outside.prefix if physically_inside(place, outside.prefix) else None
    relative = place.relative_to(containment.root)
    if not relative or relative[0] in CATALOG_ENTRIES:
        return None
    return containment.root if physically_inside(place, containment.root) else None


def _options(containment: Containment) -> dict[str, str]:
    return dict(containment.namespace.root_storage_options())
