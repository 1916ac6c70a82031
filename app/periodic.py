"""A worker's periodic background work on a thread of its own (`PeriodicThread`): started with
the application, stopped with it."""

from __future__ import annotations

import threading


class PeriodicThread:
    """Calls `tick()` every `interval` seconds on a thread named `name`, from `start()` until
    `stop()`; no thread when `active()` says there is nothing to do."""

    name = "periodic"

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def active(self) -> bool:
        return self.interval > 0

    def tick(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        if self.active():
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def stopping_within(self, seconds: float) -> bool:
        """Wait `seconds`; whether `stop()` was called meanwhile."""
        return self._stop.wait(seconds)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()
