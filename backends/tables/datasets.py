"""Reaching a table's data: where it lives, and opening it once at the requested version, tag
or branch (request bodies: `backends.tables.bodies`)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

import lance
from lance import LanceDataset
from lance_namespace import (
    InvalidInputError,
    InvalidTableStateError,
    ServiceUnavailableError,
    TableBranchNotFoundError,
)

from backends.core.access import Reader, every_table
from backends.core.external import ExternalLocation
from backends.core.messages import without_paths
from backends.core.names import joined_id
from backends.tables.errors import lance_errors, translate
from backends.tables.latest import LatestVersions
from backends.tables.reach import IdKey, check_no_links, check_reach

logger = logging.getLogger("lance_adapter")
# The pauses before a failed deletion of a table's data is tried again (seconds).
_DELETE_PAUSES = (0.1, 0.5)


@dataclass(frozen=True)
class TableLocation:
    """What a catalog knows of a table: its identifier, where its data is and how to reach it."""

    id: list[str]
    location: str
    storage_options: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    # The worker's Lance session (index and metadata caches) the table is opened with.
    session: lance.Session | None = field(default=None, compare=False, repr=False)
    # The worker's remembered latest versions, which spare listing a local table's versions.
    latest: LatestVersions | None = field(default=None, compare=False, repr=False)
    # Whether the caller may read a table: asked of a shallow clone's sources at each open.
    may_read: Reader = field(default=every_table, compare=False, repr=False)
    # How the catalog spells an id for comparison (its layout's `key`): a local table's
    # ownership record is compared with `id` so (`backends.tables.reach`).
    key: IdKey = field(default=tuple, compare=False, repr=False)
    # The external locations of its catalog: an extra base recorded in one admitting the
    # table is read as its own (`backends.tables.reach`).
    external: tuple[ExternalLocation, ...] = field(default=(), compare=False, repr=False)

    @property
    def options(self) -> dict[str, str] | None:
        return dict(self.storage_options) or None

    def with_options(self, storage_options: dict[str, str] | None) -> TableLocation:
        """The same table reached with `storage_options` too (a request's own)."""
        return replace(self, storage_options={**self.storage_options, **(storage_options or {})})


def latest_dataset(table: TableLocation) -> LanceDataset | None:
    """The table's dataset at its latest version, or None while it has no Lance data. A
    storage that does not answer is code 17, never taken for a table without data."""
    try:
        if table.latest is not None:
            return table.latest.open(table.location, table.options, table.session)
        return lance.dataset(table.location, storage_options=table.options, session=table.session)
    except (OSError, ValueError, RuntimeError) as error:
        translated = translate(error, table.location)
        if isinstance(translated, ServiceUnavailableError):
            raise translated from error
        return None


def has_data(table: TableLocation) -> bool:
    return latest_dataset(table) is not None


def open_dataset(
    table: TableLocation,
    version: int | None = None,
    tag: str | None = None,
    branch: str | None = None,
) -> LanceDataset:
    """The table's dataset checked out at `tag`, or at `version` of `branch` (latest by default)."""
    return checkout(table, latest_dataset(table), version, tag, branch)


def checkout(
    table: TableLocation,
    latest: LanceDataset | None,
    version: int | None = None,
    tag: str | None = None,
    branch: str | None = None,
) -> LanceDataset:
    """`latest`, the table's dataset as opened (None: no data), at `tag` or at `version` of
    `branch`; it is not opened again for the latest version of the main branch. Every table
    the server reads or changes is reached here, and checked to reach only its own bytes
    (`backends.tables.reach`)."""
    if latest is None:
        raise InvalidTableStateError(f"table {joined_id(table.id)} has no Lance data yet")
    if tag is not None and (version is not None or branch is not None):
        raise InvalidInputError("name either a tag or a version and branch, not both")
    with lance_errors(table.location):
        dataset = _checked_out(latest, version, tag, branch)
    check_reach(table.id, table.location, dataset, table.options, table.may_read, table.key,
                table.external)
    return dataset


def _checked_out(
    latest: LanceDataset, version: int | None, tag: str | None, branch: str | None
) -> LanceDataset:
    if tag is not None:
        return latest.checkout_version(tag)
    if branch is not None and branch != "main":
        return _checkout_branch(latest, branch, version)
    if version is not None and version != latest.version:
        return latest.checkout_version(version)
    return latest


def _checkout_branch(dataset: LanceDataset, branch: str, version: int | None) -> LanceDataset:
    if branch not in dataset.branches.list():
        raise TableBranchNotFoundError(f"branch {branch} does not exist")
    return dataset.checkout_version((branch, version))


def remove_data(table: TableLocation) -> bool:
    """The table's data deleted; never through a link out of it (code 13 before anything).
    A storage that fails is asked again (a delete whose answer was lost took effect, and
    deleting again what is gone is no error); whether all of it is gone."""
    check_no_links(table.id, table.location)
    for pause in (*_DELETE_PAUSES, None):
        try:
            LanceDataset.drop(table.location, storage_options=table.options,
                              ignore_not_found=True)
            return True
        except (ValueError, OSError, RuntimeError) as error:
            if pause is None:
                logger.warning("the data of table %s was not all deleted: %s",
                               joined_id(table.id), without_paths(str(error), [table.location]))
                return False
            time.sleep(pause)
    return False
