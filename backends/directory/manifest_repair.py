"""Keeping the directory backend's catalog, the `__manifest` Lance table at its root, readable
when the storage applied a commit but lost its answer.

pylance 14.0.2's native `DirectoryNamespace` commits each change to `__manifest` as a new
version, written with a conditional put. When S3 stores that version but its answer is lost,
the object store's retry of the put is refused (the version exists), Lance takes the refusal
for another writer's commit, and deletes the data file it wrote for it: the version stored
names a file that is gone, so every later operation of the namespace fails to read it, for
good. (A Lance bug: after a refused retry it should read the version back; reported upstream
with the reproduction in `tests/test_faults_catalog.py`.)

The server repairs what it finds so: the latest version is replaced by a restore of the one
before it, when that one reads whole. The change lost is the one whose commit Lance answered
as failed, so rolling it back loses nothing acknowledged. When the one before does not read
either, restoring an older one would undo acknowledged changes: the manifest is rebuilt from
its newest version that reads and what the tables record
(`backends.directory.manifest_rebuild`). The call that found the damage is answered 503 /
code 17 (retry), and the repair is logged. A CreateTable of a root table whose
commit was so rolled back has its directory removed too (`creating_root_table`): natively a
root table is whatever `<root>/<name>.lance` holds, so the retry would otherwise find it there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TypeVar

import lance
import pyarrow.fs as pafs
from lance_namespace import ServiceUnavailableError

from backends.core.filesystems import table_filesystem
from backends.core.locations import join_location, storage_root
from backends.directory.manifest_rebuild import rebuild
from backends.layouts import TABLE_SUFFIX

logger = logging.getLogger("lance_adapter")

MANIFEST = "__manifest"
Created = TypeVar("Created")


def is_manifest_damage(error: BaseException | None) -> bool:
    """Whether `error` (or the error it was raised from) is a read of a file of `__manifest`
    that is not there."""
    while error is not None:
        text = str(error).lower()
        if f"{MANIFEST}/data/" in text and ("notfound" in text or "not found" in text):
            return True
        error = error.__cause__
    return False


def repaired(root: str, options: Mapping[str, str] | None) -> ServiceUnavailableError:
    """Repair the manifest at `root` (see the module's docstring); the error to answer the
    call that found the damage with."""
    uri = f"{root.rstrip('/')}/{MANIFEST}"
    try:
        restored = _restore_newest_whole(uri, dict(options or {}) or None)
    except _NothingWhole:
        return _rebuilt(uri, root, options)
    except (OSError, RuntimeError, ValueError) as error:
        logger.error("the namespace manifest %s is damaged and could not be repaired: %s",
                     MANIFEST, error)
        return ServiceUnavailableError(
            "the namespace's catalog could not be read, nor repaired; retry later")
    if restored is not None:
        damaged, whole = restored
        logger.warning(
            "the namespace manifest's version %d named a data file that is gone (a commit "
            "whose answer the storage lost); restored version %d", damaged, whole)
    return ServiceUnavailableError(
        "the namespace's catalog had kept a change whose commit was answered as failed; it "
        "was rolled back: retry")


def _restore_newest_whole(uri: str, options: dict[str, str] | None) -> tuple[int, int] | None:
    """Restore the version of the manifest at `uri` before its latest when that one reads
    whole; the damaged latest version and the version restored, or None when the latest
    reads (another worker repaired it already, or the damage was elsewhere). Restoring an
    older one would undo acknowledged changes: when the one before does not read either,
    the manifest is rebuilt (`_NothingWhole`)."""
    dataset = lance.dataset(uri, storage_options=options)
    latest = dataset.version
    if _whole(dataset, latest) is not None:
        return None
    before = _whole(dataset, latest - 1) if latest > 1 else None
    if before is None:
        raise _NothingWhole(f"neither version {latest} nor the one before reads whole")
    before.restore()
    return latest, latest - 1


class _NothingWhole(RuntimeError):
    """No recent version of the manifest reads whole: it is rebuilt instead."""


def _rebuilt(uri: str, root: str, options: Mapping[str, str] | None) -> ServiceUnavailableError:
    """Rebuild the manifest at `uri` (`backends.directory.manifest_rebuild`); the error to
    answer the call that found the damage with."""
    try:
        done = rebuild(uri, root, options)
    except (OSError, RuntimeError, ValueError) as error:
        logger.error("the namespace manifest %s is damaged and could not be rebuilt: %s",
                     MANIFEST, error)
        return ServiceUnavailableError(
            "the namespace's catalog could not be read, nor rebuilt; retry later")
    logger.warning(
        "the namespace manifest had no recent version that reads whole; rebuilt it from "
        "version %d and the tables under the root: %d tables (%d of the base no longer "
        "there), %d namespaces", done.base_version, done.tables, done.dropped,
        done.namespaces)
    return ServiceUnavailableError(
        "the namespace's catalog could not be read and was rebuilt from the tables' own "
        "records: retry")


def _whole(dataset: lance.LanceDataset, version: int) -> lance.LanceDataset | None:
    """The manifest at `version` when all of it reads (a version cleaned up does not, and a
    storage that does not answer reads no version whole: then nothing is restored)."""
    try:
        candidate = dataset.checkout_version(version)
        candidate.to_table()
    except (OSError, RuntimeError, ValueError):
        return None
    return candidate


def creating_root_table(create: Callable[[], Created], root: str,
                        options: Mapping[str, str] | None, name: str) -> Created:
    """`create()`, a CreateTable (mode create) of the root table `name`. When it meets a
    damaged manifest, the directory it wrote is removed (one that was there before is not):
    the manifest is about to lose its commit, and the call is answered as not done."""
    filesystem, path = table_filesystem(
        join_location(storage_root(root), name + TABLE_SUFFIX), options)
    existed = filesystem.get_file_info(path).type != pafs.FileType.NotFound
    try:
        return create()
    except BaseException as error:
        if not existed and is_manifest_damage(error):
            try:
                filesystem.delete_dir(path)
            except (OSError, FileNotFoundError) as failure:  # answered as before: code 17
                logger.error("could not remove table %s's directory after its create was "
                             "rolled back: %s", name, failure)
        raise
