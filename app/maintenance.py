"""The server's maintenance worker: a thread that runs one maintenance pass over every table
(`backends.maintenance`) every `maintenance_interval` seconds, as LanceDB Cloud maintains its
tables, so that a table fed by many small writes stays compact and indexed.

Of several worker processes, one runs the passes: the one holding the lock file in their
shared runtime directory (`app.workers`); if it ends, another takes the lock at its next
interval. The thread starts and stops with the application (its lifespan), waits on an event
between passes, and counts what it does in the metrics.
"""

from __future__ import annotations

import fcntl
import logging
import threading
from pathlib import Path
from typing import IO, Any

from app.observability import Metrics
from app.settings import Settings
from backends.maintenance import MaintenancePolicy, TableMaintenance, maintain_all

logger = logging.getLogger("lance_adapter.maintenance")
LOCK_FILE = "maintenance.lock"


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
        self.interval = settings.maintenance_interval
        self.metrics = metrics
        self.lock_path = None if runtime_dir is None else runtime_dir / LOCK_FILE
        self._lock: IO[bytes] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._lock is not None:
            self._lock.close()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self._holds_lock():
                self.run_pass()

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
        """One pass over every table, now."""
        outcomes = maintain_all(self.namespace, self.policy, self._observe)
        self.metrics.maintenance_passes.inc()
        changed = [outcome for outcome in outcomes if outcome.actions]
        logger.info("maintenance pass: %d tables, %d changed, %d failed", len(outcomes),
                    len(changed), sum(1 for outcome in outcomes if outcome.error))
        return outcomes

    def _observe(self, done: TableMaintenance) -> None:
        self.metrics.observe_maintained(done.actions, done.error is not None)
