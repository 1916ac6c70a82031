"""Finishing a rename cut off between its two catalog calls: the new id registered, the old
one not yet deregistered, so both name the data. The rename handed the data's ownership
record to the new id first, noting the old one (`Record.renamed_from`), so such a leftover is
told apart from other tools' entries naming the same data: the old entry is deregistered by
the next maintenance pass (`backends.maintenance`), which also clears the note. A rename on a
local `dir` root is finished sooner, by its intent (`backends.directory.renames`)."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from lance_namespace import DeregisterTableRequest, DescribeTableRequest, TableNotFoundError

from backends.core.names import joined_id
from backends.owner_record import read_record, write_record

if TYPE_CHECKING:
    from backends.containment import Containment

logger = logging.getLogger("lance_adapter")


def finish_cut_off_rename(containment: Containment, table_id: list[str]) -> bool:
    """Whether `table_id` was the old id of a rename cut off half-way, deregistered now: its
    entry's location is recorded as another table's, taken from `table_id` by a rename, and
    that table's entry names the same location."""
    namespace, records = containment.namespace, containment.records
    request = DescribeTableRequest(id=table_id)
    try:
        entry = namespace.describe_table_entry(request)
    except TableNotFoundError:
        return False
    if not entry.location:
        return False
    options = {**namespace.root_storage_options(), **(entry.storage_options or {})}
    record = read_record(entry.location, options)
    key = records.layout.key
    if (record is None or record.renamed_from is None
            or key(record.renamed_from) != key(table_id) or key(record.owner) == key(table_id)
            or not records.names(record.owner, entry.location, request)):
        return False
    namespace.deregister_entry(DeregisterTableRequest(id=table_id))
    write_record(entry.location, options, dataclasses.replace(record, renamed_from=None))
    logger.warning("a rename of table %s to %s cut off half-way: finished (the old entry "
                   "deregistered)", joined_id(table_id), joined_id(record.owner))
    return True
