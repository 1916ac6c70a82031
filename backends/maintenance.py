"""Tables that maintain themselves, as LanceDB Cloud's do: one maintenance pass over every table
a backend holds compacts small fragments, brings indexes up to date and removes versions past
a retention (`MaintenancePolicy`) with the idempotency keys' notes as old, after sweeping what
interrupted creates abandoned.

Each step is one Lance commit, resolved by Lance's conflict handling against concurrent
writers: a compaction only rewrites fragments (appends commit beside it; an update or delete
of rewritten rows is rebased by Lance), an index optimisation adds the rows written since, and
a cleanup never removes the latest version, nor a tagged one. A table that fails one step is
reported and the pass goes on with the next table.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lance import LanceDataset
from lance.fragment import FragmentMetadata
from lance.optimize import Compaction, CompactionOptions
from lance_namespace import DescribeTableRequest, ListTablesRequest

from backends.core.names import ID_DELIMITER
from backends.tables.errors import lance_errors
from backends.tables.keys import remove_stale_notes

logger = logging.getLogger("lance_adapter.maintenance")
# Tables listed a page at a time: a pass holds one page of ids, not the catalog's.
PAGE_SIZE = 1000


@dataclass(frozen=True)
class MaintenancePolicy:
    """When a table is compacted, re-indexed and cleaned up."""

    # Fragments of fewer rows than this are small; compaction writes fragments this large.
    target_rows_per_fragment: int = 1024 * 1024
    # A table is compacted once it holds this many small fragments.
    min_small_fragments: int = 8
    # Indexes are brought up to date once this many rows are not in them.
    min_unindexed_rows: int = 1
    # Versions older than this many seconds are removed (tagged ones are kept); 0 keeps all.
    version_retention: float = 7 * 24 * 3600.0
    # What an interrupted create left in storage is removed once nothing in it changed for
    # this many seconds: far longer than any create in flight, here or in another replica.
    abandoned_after: float = 3600.0
    # Compact by tiers (`_tiered_exclusions`), leaving the larger fragments alone: between
    # the passes, so that a table written without pause is not rewritten whole each time.
    tiered: bool = False


@dataclass
class TableMaintenance:
    """What one pass did to one table."""

    table: str
    fragments_before: int = 0
    fragments_after: int = 0
    compacted: bool = False
    indexed_rows: int = 0
    versions_removed: int = 0
    error: str | None = None
    actions: list[str] = field(default_factory=list)


def maintain_table(
    dataset: LanceDataset, policy: MaintenancePolicy, name: str = ""
) -> TableMaintenance:
    """One maintenance pass over the table `dataset` (its latest version)."""
    done = TableMaintenance(name)
    with lance_errors(dataset.uri):
        fragments = [fragment.metadata for fragment in dataset.get_fragments()]
        done.fragments_before = len(fragments)
        if _compaction_due(fragments, policy):
            dataset = _compact(dataset, policy)
            done.compacted = True
            done.actions.append("compacted")
        unindexed = _unindexed_rows(dataset)
        if unindexed >= policy.min_unindexed_rows:
            dataset = _beside_writers(
                dataset, lambda table: table.optimize.optimize_indices())
            done.indexed_rows = unindexed
            done.actions.append("indexed")
        if policy.version_retention > 0:
            retention = datetime.timedelta(seconds=policy.version_retention)
            removed = dataset.cleanup_old_versions(
                older_than=retention, error_if_tagged_old_versions=False)
            done.versions_removed = removed.old_versions
            if removed.old_versions:
                done.actions.append("cleaned")
            # A key's note is kept as long as the versions a retry with it looks through.
            if remove_stale_notes(dataset, retention):
                done.actions.append("key notes removed")
        done.fragments_after = len(dataset.get_fragments())
    return done


# Commits tried again after Lance gave up rebasing one on a busy writer's commits (each try
# is Lance's own retries), after a jittered pause so that the two stop colliding.
_ATTEMPTS_BESIDE_WRITERS = 8
_PAUSE_BESIDE_WRITERS = (0.02, 0.25)


def _beside_writers(
    dataset: LanceDataset, commit: Callable[[LanceDataset], object]
) -> LanceDataset:
    """Run `commit` (a compaction's commit, an index update) on the table's latest version.
    Beside a busy writer Lance may give up rebasing it on new commits (its retries spent):
    it is tried again on the then latest version, a bounded number of times."""
    for attempt in range(_ATTEMPTS_BESIDE_WRITERS):
        try:
            commit(dataset)
            return dataset
        except (OSError, RuntimeError, ValueError) as error:
            if "conflict" not in str(error).lower() or attempt + 1 == _ATTEMPTS_BESIDE_WRITERS:
                raise
            time.sleep(random.uniform(*_PAUSE_BESIDE_WRITERS))
            dataset = dataset.checkout_version(dataset.latest_version)
    return dataset


def _live_rows(fragment: FragmentMetadata) -> int:
    deleted = fragment.deletion_file.num_deleted_rows if fragment.deletion_file else 0
    return max(fragment.physical_rows - deleted, 0)


def _tier(rows: int, policy: MaintenancePolicy) -> int:
    """The tier of a fragment of `rows` live rows: their order of magnitude in powers of
    `min_small_fragments` (with 8: 1 to 7 rows tier 0, 8 to 63 tier 1, 64 to 511 tier 2)."""
    base = max(policy.min_small_fragments, 2)
    tier = 0
    while rows >= base:
        rows //= base
        tier += 1
    return tier


def _tiered_exclusions(
    fragments: list[FragmentMetadata], policy: MaintenancePolicy
) -> list[int] | None:
    """The fragments a tiered compaction leaves alone, or None if it has nothing to do.
    The lowest tier holding `min_small_fragments` fragments is merged with the tiers below
    it, and so is each tier above that the merged fragment would fill in turn, as a
    log-structured merge does: a row is rewritten about once per tier (the log of the
    table's rows) instead of at every compaction, and the writes in flight on the larger
    fragments are not preempted by it."""
    tiers: dict[int, list[FragmentMetadata]] = collections.defaultdict(list)
    for fragment in fragments:
        if fragment.physical_rows < policy.target_rows_per_fragment:
            tiers[_tier(_live_rows(fragment), policy)].append(fragment)
    full = [tier for tier, members in tiers.items()
            if len(members) >= policy.min_small_fragments]
    if not full:
        return None
    top = min(full)
    while True:
        merged = sum(_live_rows(fragment) for tier, members in tiers.items() if tier <= top
                     for fragment in members)
        above = _tier(merged, policy)
        if above <= top or len(tiers.get(above, ())) + 1 < policy.min_small_fragments:
            break
        top = above
    compacted = {fragment.id for tier, members in tiers.items() if tier <= top
                 for fragment in members}
    return [fragment.id for fragment in fragments if fragment.id not in compacted]


def _compaction_due(fragments: list[FragmentMetadata], policy: MaintenancePolicy) -> bool:
    if len(fragments) < 2:
        return False
    if policy.tiered:
        return _tiered_exclusions(fragments, policy) is not None
    small = sum(1 for fragment in fragments
                if fragment.physical_rows < policy.target_rows_per_fragment)
    return small >= policy.min_small_fragments


def _compact(dataset: LanceDataset, policy: MaintenancePolicy) -> LanceDataset:
    """Rewrite the table's small fragments and commit the rewrite (`_beside_writers`):
    appends committed meanwhile are kept, as Lance rebases a rewrite on them. An update or a
    delete committed meanwhile into a fragment it rewrote preempts it (Lance cannot move the
    rows it deleted into the rewritten files): then it is planned and done again on the
    latest version, so that a table upserted without pause is still compacted."""
    def compacted(table: LanceDataset) -> None:
        options = CompactionOptions(target_rows_per_fragment=policy.target_rows_per_fragment)
        if policy.tiered:
            excluded = _tiered_exclusions(
                [fragment.metadata for fragment in table.get_fragments()], policy)
            if excluded is None:
                return
            options["excluded_fragment_ids"] = excluded
        plan = Compaction.plan(table, options)
        if not plan.tasks:
            return
        rewrites = [task.execute(table) for task in plan.tasks]
        Compaction.commit(table, rewrites, options)

    return _beside_writers(dataset, compacted)


def _unindexed_rows(dataset: LanceDataset) -> int:
    """The most rows any index of the table lacks."""
    most = 0
    for index in dataset.describe_indices():
        stats = dataset.stats.index_stats(index.name)
        most = max(most, int(stats.get("num_unindexed_rows") or 0))
    return most


def table_ids(namespace: Any) -> Iterator[list[str]]:
    """Every table id of `namespace`, listed a page at a time (ListAllTables)."""
    token: str | None = None
    while True:
        page = namespace.list_all_tables(ListTablesRequest(page_token=token, limit=PAGE_SIZE))
        for joined in page.tables:
            yield joined.split(ID_DELIMITER)
        token = page.page_token
        if not token or not page.tables:
            return


def maintain_all(
    namespace: Any, policy: MaintenancePolicy,
    observe: Callable[[TableMaintenance], None] | None = None,
) -> list[TableMaintenance]:
    """One maintenance pass over every table of `namespace` (a `MetadataNamespace`); each
    table's outcome goes to `observe` as it is done. A table that fails is reported, not
    retried: the next pass tries it again. First, what interrupted creates abandoned is swept
    (the backend's `sweep_abandoned`); a table that is the old name of a rename cut off
    half-way is deregistered instead of maintained (`backends.rename_recovery`)."""
    try:
        namespace.sweep_abandoned(policy.abandoned_after)
    except Exception as error:  # the tables are still maintained
        logger.warning("the sweep of abandoned table directories failed: %s", error)
    outcomes = []
    for table_id in table_ids(namespace):
        name = ID_DELIMITER.join(table_id)
        try:
            if namespace.finish_cut_off_rename(table_id):
                done = TableMaintenance(name, actions=["deregistered: the old name of a "
                                                       "rename cut off half-way"])
            else:
                dataset = namespace.open(DescribeTableRequest(id=table_id))
                kept = namespace.keeps_versions(table_id, dataset.uri)  # a clone's source
                table_policy = (dataclasses.replace(policy, version_retention=0) if kept
                                else policy)
                done = maintain_table(dataset, table_policy, name)
        except Exception as error:  # one table's failure does not stop the pass
            logger.warning("maintenance of table %s failed: %s", name, error)
            done = TableMaintenance(name, error=str(error))
        outcomes.append(done)
        if observe is not None:
            observe(done)
    return outcomes
