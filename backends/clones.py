"""CloneTable (LanceDB's `clone_table`): a new table made from another's version or tag.

A shallow clone (the default, as in LanceDB) writes only a manifest at the new table's own
path, which reads the source's data files where they are; a deep clone copies them. The source
is named by `source_id`, which the server fills from the client's `source_location` through
the source's ownership record (`GuardedNamespace.table_at`), so that the caller's read access
to the source is checked. The guard keeps the source's data from deletion once it is
shallow-cloned (`backends.containment`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lance_namespace import DeclareTableRequest, DescribeTableRequest, InvalidInputError

from backends.core.extensions import CloneTableRequest, CloneTableResponse
from backends.core.locations import resolve_stored
from backends.core.names import joined_id
from backends.tables.access import TableLocation, checkout, has_data, latest_dataset
from backends.tables.errors import lance_errors
from backends.tables.lifecycle import caller, undeclare

if TYPE_CHECKING:
    from lance import LanceDataset


class CloneTables:
    """The clone part of `MetadataNamespace` (which defines what it calls)."""

    locate: Any
    declare_table: Any
    lance_session: Any
    _rows_written: Any

    def clone_table(self, request: CloneTableRequest) -> CloneTableResponse:
        source = self._clone_source(request)
        dataset = checkout(source, latest_dataset(source), request.source_version,
                           request.source_tag)
        declared = self.declare_table(DeclareTableRequest(id=request.id, **caller(request)))
        if not declared.location:
            raise InvalidInputError(f"the backend declared {joined_id(request.id)} without "
                                    "a location")
        target = TableLocation(list(request.id or []), declared.location,
                               dict(declared.storage_options or {}), session=self.lance_session)
        if has_data(target):  # another table's data, or one left behind: never written over
            undeclare(self, request, None)
            raise InvalidInputError(f"a Lance table already lies at the location of "
                                    f"{joined_id(request.id)}; RegisterTable adopts it")
        try:
            cloned = _cloned(dataset, target, request)
        except BaseException:
            undeclare(self, request, target)
            raise
        response = CloneTableResponse(location=declared.location, version=cloned.version)
        return self._rows_written(request, response)

    def _clone_source(self, request: CloneTableRequest) -> TableLocation:
        if not request.source_id:
            raise InvalidInputError("CloneTable needs the source table: source_location")
        if request.source_version is not None and request.source_tag is not None:
            raise InvalidInputError("name either a source_version or a source_tag, not both")
        source: TableLocation = self.locate(
            DescribeTableRequest(id=request.source_id, **caller(request)))
        if request.source_location and not _same_place(request.source_location,
                                                       source.location):
            raise InvalidInputError("source_location is not the location of source_id")
        return source


def _cloned(dataset: LanceDataset, target: TableLocation,
            request: CloneTableRequest) -> LanceDataset:
    reference: int | str = request.source_tag or dataset.version
    with lance_errors(target.location):
        if request.is_shallow is False:
            return dataset.deep_clone(target.location, reference, storage_options=target.options)
        return dataset.shallow_clone(target.location, reference, storage_options=target.options)


def _same_place(one: str, other: str) -> bool:
    try:
        return resolve_stored(one) == resolve_stored(other)
    except InvalidInputError:
        return False
