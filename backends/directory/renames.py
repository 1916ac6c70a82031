"""Renames on a local `dir` root that a kill cannot leave half-done.

A rename registers the new id, then deregisters the old one; a root table's also first moves
its directory (its name is its id: the native namespace finds root tables by listing
`<name>.lance`). A kill between those steps would leave both ids naming the data, or the old
id named in the manifest with its data gone and the new one found by its directory alone.
So the rename first writes its intent, a small
JSON file in `<root>/_lance_adapter_renames/`, and removes it once done; the next request
served after the intent has aged past `rename_recovery_after` (far longer than any rename
takes, so a rename under way in another replica is never touched) finishes it: forward when
the directory was moved (the new id registered, the old one deregistered, the ownership record
naming the new id), back when it was not (the intent removed). An empty intents directory
costs a request one directory scan.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lance_namespace import DeregisterTableRequest, LanceNamespaceError, RegisterTableRequest

from backends.core.locations import local_directory
from backends.core.names import joined_id
from backends.directory.layout import in_root
from backends.directory.orphans import manifest_tables
from backends.owner_record import read_record, write_record

logger = logging.getLogger("lance_adapter")
INTENTS_DIRECTORY = "_lance_adapter_renames"


@dataclass(frozen=True)
class Intent:
    """A rename under way: from `old_id` at directory `old` to `new_id` at `new` (paths
    relative to the root; the same for a table whose directory does not move)."""

    old_id: list[str]
    new_id: list[str]
    old: str
    new: str


class RootRenames:
    """The intents of one local root's renames, written before and removed after each; on
    object storage (`root` None) there are none (a root table is not renamed there)."""

    def __init__(self, root: Path | None, recovery_after: float) -> None:
        self.directory = root / INTENTS_DIRECTORY if root is not None else None
        self.recovery_after = recovery_after

    @contextlib.contextmanager
    def intent(self, old_id: list[str], new_id: list[str], old: str,
               new: str) -> Iterator[None]:
        """Hold the intent of renaming `old_id` (directory `old`) to `new_id` (directory
        `new`) on disk while the rename's steps run; a failed rename (moved back by the
        caller) removes it too."""
        intent = Intent(old_id, new_id, old, new)
        assert self.directory is not None  # a local root's rename
        self.directory.mkdir(exist_ok=True)
        path = self.directory / f"{uuid.uuid4().hex}.json"
        staged = path.with_suffix(".tmp")
        staged.write_text(json.dumps(dataclasses.asdict(intent)))
        with staged.open("rb") as written:
            os.fsync(written.fileno())
        os.rename(staged, path)  # whole or absent
        try:
            yield
        finally:
            path.unlink(missing_ok=True)

    def in_place(self, old_id: list[str], new_id: list[str],
                 location: str) -> contextlib.AbstractContextManager[None]:
        """The intent of a rename whose data stays at `location`; none outside the root."""
        try:
            place = local_directory(location)
            relative = (place.relative_to(self.directory.parent)
                        if place and self.directory else None)
        except (LanceNamespaceError, ValueError):
            relative = None
        if relative is None:
            return contextlib.nullcontext()
        return self.intent(old_id, new_id, str(relative), str(relative))

    def finish_cut_off(self, namespace: Any) -> None:
        """Finish every rename whose intent is older than `recovery_after` (its process is
        gone: no rename takes that long) through `namespace`, the `dir` backend."""
        if self.directory is None:
            return
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return
        now = time.time()
        for entry in entries:
            if not entry.name.endswith(".json"):
                continue
            try:
                if now - entry.stat().st_mtime < self.recovery_after:
                    continue
                intent = Intent(**json.loads(Path(entry.path).read_text()))
            except (OSError, ValueError, TypeError):
                continue  # removed meanwhile by another request, or not ours
            self._finish(namespace, intent)
            Path(entry.path).unlink(missing_ok=True)

    def _finish(self, namespace: Any, intent: Intent) -> None:
        assert self.directory is not None
        root = self.directory.parent
        old, new = root / intent.old, root / intent.new
        if old == new and not _registered_at(root, intent.new_id, new):
            return  # cut off before the new id's registration: nothing to undo
        if old != new and (old.exists() or not new.exists()):
            logger.warning("a rename of table %s cut off before its directory moved: undone",
                           "$".join(intent.old_id))
            return
        logger.warning("a rename of table %s to %s cut off half-way: finished",
                       "$".join(intent.old_id), "$".join(intent.new_id))
        if not _registered_at(root, intent.new_id, new):
            namespace.register_table(RegisterTableRequest(id=intent.new_id, location=str(new)))
        if _registered_at(root, intent.old_id, old):
            namespace.deregister_entry(DeregisterTableRequest(id=intent.old_id))
        record = read_record(str(new), None)
        if record is not None and record.owner == intent.old_id:
            write_record(str(new), None, dataclasses.replace(record, owner=intent.new_id))


def _registered_at(root: Path, table_id: list[str], place: Path) -> bool:
    """Whether the manifest names `table_id`, at `place` (a table found by its directory
    alone is not in it)."""
    stored = (manifest_tables(str(root)) or {}).get(joined_id(table_id))
    if stored is None:
        return False
    try:
        return local_directory(in_root(str(root), stored) if stored else "") == place
    except LanceNamespaceError:
        return False
