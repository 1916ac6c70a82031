"""Each worker's Lance session renewed once the table versions it opened have filled the
session's metadata cache (`backends.sessions`), checked every `lance_session_renewal` seconds
on a thread of the worker's own. What the old session held is handed back to the system a few
seconds after it is renewed, once the requests that began with it have ended (the worker's
`MemoryTrimmer`), so that a worker does not hold two sessions' worth of memory until its next
periodic trim."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from app.config import lance_session
from app.periodic import PeriodicThread
from app.settings import Settings

logger = logging.getLogger("lance_adapter")
# Seconds after a renewal by which the requests begun with the old session have ended (the
# longest a search or a write takes here), when its memory is handed back.
RELEASED_WITHIN = 5.0


class SessionRenewer(PeriodicThread):
    """A thread asking the backend to renew its Lance session every `interval` seconds,
    until stopped; nothing for a backend without sessions (`renew_lance_session`) or an
    interval of 0."""

    name = "lance-session"

    def __init__(
        self, namespace: Any, settings: Settings, released: Callable[[], object] = lambda: None,
    ) -> None:
        super().__init__(settings.lance_session_renewal)
        self.renewals = 0
        self._released = released
        renew = getattr(namespace, "renew_lance_session", None)
        self._renew = renew if callable(renew) and self.interval > 0 else None
        self._settings = settings

    def active(self) -> bool:
        return self._renew is not None

    def tick(self) -> None:
        if self.check() and not self.stopping_within(min(RELEASED_WITHIN, self.interval)):
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
