"""The server's maintenance worker: a thread that runs one maintenance pass over every table
(`backends.maintenance`) every `maintenance_interval` seconds, as LanceDB Cloud maintains its
tables, so that a table fed by many small writes stays compact and indexed. Between the
passes, a table this worker wrote rows into `maintenance_after_writes` times since it last
maintained it is compacted and indexed at once, on the same thread (one table at a time):
each small write is one more fragment every read of the table opens (a search over 250 small
fragments took 18 ms against 1 ms over one).

Of several worker processes, one runs the passes: the one holding the lock file in their
shared runtime directory (`app.workers`); if it ends, another takes the lock at its next
interval. The thread starts and stops with the application (its lifespan), waits on an event
between passes, and counts what it does in the metrics.
"""

from __future__ import annotations

import collections
import dataclasses
import fcntl
import logging
import threading
import time
from pathlib import Path
from typing import IO, Any

from lance_namespace import DescribeTableRequest

from app.observability import Metrics
from app.settings import Settings
from backends.core.names import ID_DELIMITER
from backends.maintenance import (
    MaintenancePolicy,
    TableMaintenance,
    maintain_all,
    maintain_table,
)

logger = logging.getLogger("lance_adapter.maintenance")
LOCK_FILE = "maintenance.lock"
# The most tables whose writes a worker counts, and that wait to be maintained: a worker
# writing into more tables than this between two passes leaves the rest to the passes.
MOST_TABLES_COUNTED = 10_000


def maintenance_policy(settings: Settings) -> MaintenancePolicy:
    return MaintenancePolicy(
        target_rows_per_fragment=settings.maintenance_target_rows_per_fragment,
        min_small_fragments=settings.maintenance_min_small_fragments,
        version_retention=settings.maintenance_version_retention,
        abandoned_after=settings.maintenance_abandoned_after,
    )


def maintains(namespace: Any) -> bool:
    """Whether the backend can be maintained: it lists every table and opens each
    (`MetadataNamespace`); a plug-in without both is not."""
    return callable(getattr(namespace, "list_all_tables", None)) and callable(
        getattr(namespace, "open", None))


class MaintenanceWorker:
    """Runs maintenance passes on a thread until stopped."""

    def __init__(
        self, namespace: Any, settings: Settings, metrics: Metrics,
        runtime_dir: Path | None = None,
    ) -> None:
        self.namespace = namespace
        self.policy = maintenance_policy(settings)
        self._between_passes = dataclasses.replace(
            self.policy, version_retention=0, tiered=True)
        self.interval = settings.maintenance_interval
        self.metrics = metrics
        self.lock_path = None if runtime_dir is None else runtime_dir / LOCK_FILE
        self.after_writes = settings.maintenance_after_writes
        self._lock: IO[bytes] | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # stopping, or a table written enough
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()  # the counts and the tables due, for the serving threads
        self._writes: dict[tuple[str, ...], int] = {}
        self._due: collections.deque[tuple[str, ...]] = collections.deque()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._lock is not None:
            self._lock.close()

    def written(self, table_id: list[str]) -> None:
        """Rows were written into the table `table_id` (a serving thread says so, after the
        write's 200): counted; at `after_writes` writes, the table is due for maintenance."""
        if not self.after_writes or not table_id:
            return
        table = tuple(table_id)
        with self._guard:
            count = self._writes.pop(table, 0) + 1
            if count < self.after_writes:
                if len(self._writes) < MOST_TABLES_COUNTED:
                    self._writes[table] = count
                return
            if table not in self._due and len(self._due) < MOST_TABLES_COUNTED:
                self._due.append(table)
        self._wake.set()

    def _run(self) -> None:
        next_pass = time.monotonic() + self.interval
        while True:
            self._wake.wait(max(0.0, next_pass - time.monotonic()))
            if self._stop.is_set():
                return
            self._wake.clear()
            while (table := self._next_due()) is not None and not self._stop.is_set():
                self.maintain_written(list(table))
            if time.monotonic() >= next_pass:
                if self._holds_lock():
                    self.run_pass()
                next_pass = time.monotonic() + self.interval

    def _next_due(self) -> tuple[str, ...] | None:
        with self._guard:
            return self._due.popleft() if self._due else None

    def maintain_written(self, table_id: list[str]) -> TableMaintenance:
        """Compact the table `table_id` and bring its indexes up to date, now; its old
        versions are left to the passes."""
        name = ID_DELIMITER.join(table_id)
        try:
            dataset = self.namespace.open(DescribeTableRequest(id=table_id))
            done = maintain_table(dataset, self._between_passes, name)
        except Exception as error:  # the next pass tries it again
            logger.warning("maintenance of table %s failed: %s", name, error)
            done = TableMaintenance(name, error=str(error))
        self._observe(done)
        return done

    def _holds_lock(self) -> bool:
        """Whether this process runs the passes: the only one, or the lock file's holder."""
        if self.lock_path is None or self._lock is not None:
            return True
        handle = self.lock_path.open("ab")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._lock = handle
        return True

    def run_pass(self) -> list[TableMaintenance]:
        """One pass over every table, now; a catalog that does not list its tables leaves the
        pass to the next interval (the thread goes on)."""
        try:
            outcomes = maintain_all(self.namespace, self.policy, self._observe)
        except Exception as error:
            logger.warning("maintenance pass stopped: the tables could not be listed: %s",
                           error)
            return []
        self.metrics.maintenance_passes.inc()
        changed = [outcome for outcome in outcomes if outcome.actions]
        logger.info("maintenance pass: %d tables, %d changed, %d failed", len(outcomes),
                    len(changed), sum(1 for outcome in outcomes if outcome.error))
        return outcomes

    def _observe(self, done: TableMaintenance) -> None:
        self.metrics.observe_maintained(done.actions, done.error is not None)
