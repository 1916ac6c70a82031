"""What CreateNamespace of a Hive Metastore catalog may ask (HMS 3+): the metastore's Catalog
object holds a name, a description and a location, so any other property is refused rather
than dropped; and a location a client names (`catalog.location.uri`) is held to a table's
rules: strictly inside the root, apart from every other catalog's location, and holding
nothing yet (never another namespace's or table's data: the tables of the catalog are made
below it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow.fs as pafs
from lance_namespace import InvalidInputError

from backends.core.filesystems import table_filesystem
from backends.core.locations import StorageLocation, parse_location, resolve_stored
from backends.hive.objects import CATALOG_DESCRIPTION_KEY, CATALOG_LOCATION_KEY

CATALOG_KEYS = frozenset({CATALOG_DESCRIPTION_KEY, CATALOG_LOCATION_KEY})


def check_catalog_properties(properties: Mapping[str, str]) -> None:
    """Code 13 for a property the metastore's Catalog object cannot hold."""
    unknown = sorted(set(properties) - CATALOG_KEYS)
    if unknown:
        raise InvalidInputError(
            f"a Hive Metastore catalog holds only a {CATALOG_DESCRIPTION_KEY!r} and a "
            f"{CATALOG_LOCATION_KEY!r}: {', '.join(map(repr, unknown))} cannot be stored; "
            "create the catalog without them")


def check_catalog_location(location: str, root: str, others: Iterable[str],
                           options: Mapping[str, str] | None) -> None:
    """Code 13 unless the client-named `location` lies strictly inside `root`, neither holds
    nor lies in any of the `others` catalogs' locations, and holds nothing yet."""
    place = parse_location(location)
    if place.relative_to(resolve_stored(root)) is None:
        raise InvalidInputError(
            f"{CATALOG_LOCATION_KEY} must lie strictly inside the backend's root")
    for other in others:
        try:
            taken = resolve_stored(other)
        except InvalidInputError:
            continue
        if taken.contains(place) or place.contains(taken):
            raise InvalidInputError(
                f"{CATALOG_LOCATION_KEY} overlaps the location of another catalog")
    if _holds_files(place, options):
        raise InvalidInputError(
            f"{CATALOG_LOCATION_KEY} already holds data; a catalog's location must be empty")


def _holds_files(place: StorageLocation, options: Mapping[str, str] | None) -> bool:
    filesystem, path = table_filesystem(place.uri, options)
    selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
    return bool(filesystem.get_file_info(selector))
