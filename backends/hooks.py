"""What a backend tells the server about itself, so that the server (app/) needs to know no
backend: checks before it is built and before serving, what readiness checks besides the
catalog's probe, how the metadata cache validates a hit, whether the catalog judges forwarded
callers and which backend serves a caller, and what maintenance sweeps. `MetadataNamespace`
has these defaults; a backend overrides what applies to it (the directory backend:
`backends.directory.hooks`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Self

# Modification times (ns) of what an answer depends on; None where a path does not exist.
Stamp = tuple[int | None, ...]
# What a change to an answer touches (`app.cache` validates hits so): (operation id, the
# request's id, answer) -> the stamp, or None when the backend cannot vouch for the answer now.
Stamper = Callable[[str, list[str] | None, Any], Stamp | None]


class ServerHooks:
    """The hooks and their defaults: nothing to check, nothing local, no stamps."""

    @classmethod
    def check_properties_at_start(cls, properties: Mapping[str, str]) -> None:
        """Refuse, with a `ConfigurationError` of one line, properties the backend would fail
        on once built (called before building it)."""

    def check_reachable_at_start(self) -> None:
        """Refuse to start when the backend's storage or catalog cannot be reached at all
        (called once, before serving); a `ConfigurationError` of one line."""

    def readiness_checks(self) -> list[tuple[str, Callable[[], None]]]:
        """Checks `/readyz` runs after the catalog's probe, each named, each raising when
        the backend cannot serve (e.g. a local root it cannot write)."""
        return []

    def cache_stamper(self) -> Stamper | None:
        """How the metadata cache validates a hit against the backend's state; None: hits are
        validated by the cache's time bound alone."""
        return None

    def checks_callers(self) -> bool:
        """Whether the catalog judges each caller by the identity the server forwards
        (`auth_mode: forward`); a backend that does not would let any token do anything."""
        return False

    def for_caller(self, request: Any) -> Self:
        """The backend that serves `request`: itself, or, where the catalog judges callers by
        the token the server forwards (`forward_caller_token`), a view of itself that sends
        the caller's token (`request.identity.auth_token`) with every catalog call it makes.
        The guard asks once per operation; code that calls the backend for a request it was
        handed (ownership records, containment) asks too."""
        return self

    def sweep_abandoned(self, abandoned_after: float) -> list[str]:
        """Remove what interrupted operations left, unchanged for `abandoned_after` s (table
        maintenance asks)."""
        return []
