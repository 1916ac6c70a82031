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

from lance_namespace import DescribeTableRequest, InvalidInputError

from backends.core.extensions import CloneTableRequest, CloneTableResponse
from backends.core.locations import resolve_stored
from backends.tables.datasets import TableLocation, checkout, latest_dataset
from backends.tables.errors import lance_errors
from backends.tables.lifecycle import caller, declare_new, undeclare

if TYPE_CHECKING:
    from lance import LanceDataset


class CloneTables:
    """The clone part of `MetadataNamespace` (which defines what it calls)."""

    locate: Any
    _rows_written: Any

    def clone_table(self, request: CloneTableRequest) -> CloneTableResponse:
        source = self._clone_source(request)
        dataset = checkout(source, latest_dataset(source), request.source_version,
                           request.source_tag)
        target = declare_new(self, request)
        try:
            cloned = _cloned(dataset, target, request)
        except BaseException:
            undeclare(self, request, target)
            raise
        response = CloneTableResponse(location=target.location, version=cloned.version)
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
