"""Each worker's Lance session renewed once the table versions it opened have filled the
session's metadata cache (`backends.sessions`), checked every `lance_session_renewal` seconds
on a thread of the worker's own. What the old session held is handed back to the system a few
seconds after it is renewed, once the requests that began with it have ended (the worker's
`MemoryTrimmer`), so that a worker does not hold two sessions' worth of memory until its next
periodic trim."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from app.config import lance_session
from app.settings import Settings

logger = logging.getLogger("lance_adapter")
# Seconds after a renewal by which the requests begun with the old session have ended (the
# longest a search or a write takes here), when its memory is handed back.
RELEASED_WITHIN = 5.0


class SessionRenewer:
    """A thread asking the backend to renew its Lance session every `interval` seconds,
    until stopped; nothing for a backend without sessions (`renew_lance_session`) or an
    interval of 0."""

    def __init__(
        self, namespace: Any, settings: Settings, released: Callable[[], object] = lambda: None,
    ) -> None:
        self.interval = settings.lance_session_renewal
        self._released = released
        self.renewals = 0
        renew = getattr(namespace, "renew_lance_session", None)
        self._renew = renew if callable(renew) and self.interval > 0 else None
        self._settings = settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._renew is not None:
            self._thread = threading.Thread(target=self._run, name="lance-session",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.check() and not self._stop.wait(min(RELEASED_WITHIN, self.interval)):
                self._released()

    def check(self) -> bool:
        """Renew now if the cache is due; whether it was renewed."""
        if self._renew is None:
            return False
        try:
            renewed = bool(self._renew(lambda: lance_session(self._settings),
                                       self._settings.lance_metadata_cache_bytes))
        except Exception as error:  # the old session goes on serving
            logger.warning("the Lance session could not be renewed: %s", error)
            return False
        self.renewals += renewed
        return renewed
