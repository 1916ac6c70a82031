"""Claims of a location by the first of two registrations at once: a one-row Lance dataset,
`_lance_adapter_owner.claim`, beside the ownership record (`backends.ownership`), naming the
first claimant. Lance commits a dataset's first version for one writer only, on every store
it supports (a rename that does not replace locally, a conditional put on object stores), so
of two tables claiming one location at once exactly one wins, before either is in the
catalog."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import pyarrow as pa
from lance import LanceDataset, LanceOperation
from lance import dataset as open_dataset
from lance_namespace import ServiceUnavailableError

from backends.core.locations import StorageLocation, resolve_stored
from backends.owner_record import Record

CLAIM_DATASET = "_lance_adapter_owner.claim"
_CLAIM_SCHEMA = pa.schema([pa.field("owner_id", pa.list_(pa.string()), nullable=False)])


def claim_location(location: str, options: Mapping[str, str] | None, owner: list[str],
                   catalog: str | None = None) -> Record | None:
    """Commit `owner` (of `catalog`, on a server of several) as the first claimant of
    `location`: None when it won, else the claimant that did, as a record. The claim is a
    manifest alone (the owner in its schema's metadata), so a claim that loses writes
    nothing. A storage that does not answer is code 17."""
    uri = resolve_stored(location).child(CLAIM_DATASET).uri
    storage = dict(options or {}) or None
    metadata = {"owner_id": json.dumps(list(owner))}
    if catalog:
        metadata["catalog"] = catalog
    schema = _CLAIM_SCHEMA.with_metadata(metadata)
    for _attempt in range(3):  # a claim read while another is being committed is retried
        try:
            # No retries: a claim that lost the race to commit the first version must fail.
            LanceDataset.commit(uri, LanceOperation.Overwrite(schema, []), max_retries=0,
                                storage_options=storage)
            return None
        except (ValueError, OSError, RuntimeError):
            pass  # lost to an earlier claim, or the storage failed: the claim says which
        first = claimant_of(uri, storage)
        if first:
            return first
    raise ServiceUnavailableError("the storage did not answer for the location's claim; retry")


def claimant_of(uri: str, storage: dict[str, str] | None) -> Record | None:
    """The table the claim dataset at `uri` names, as a record (its owner and catalog); None
    where there is none (or it cannot be read yet)."""
    try:
        metadata = open_dataset(uri, storage_options=storage).schema.metadata or {}
        first = json.loads(metadata[b"owner_id"])
    except (ValueError, OSError, RuntimeError, KeyError):
        return None
    if not isinstance(first, list) or not first:
        return None
    catalog = metadata.get(b"catalog")
    return Record([str(part) for part in first], placed=False,
                  catalog=catalog.decode() if catalog else None)


def release_claim_at(place: StorageLocation, options: Mapping[str, str] | None,
             root: StorageLocation) -> None:
    """Remove the claim at `place`, and the empty directories up to `root` (local storage
    alone has them; the claim may have made them): a refused registration leaves nothing."""
    LanceDataset.drop(place.child(CLAIM_DATASET).uri,
                      storage_options=dict(options or {}) or None, ignore_not_found=True)
    while place.scheme == "file" and place != root and place.key:
        try:
            os.rmdir(place.uri)
        except OSError:  # not empty (it holds data, or other places), or gone already
            return
        place = StorageLocation(place.scheme, place.bucket, place.key[:-1])
        if not root.contains(place):
            return
