"""Readiness of a server of several catalogs (`backends.federation`): every catalog probed at
once, each within a time bound, so that one catalog that hangs is reported down instead of
holding `/readyz` past its timeout, and at most one probe of each catalog runs at a time."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from lance_namespace import LanceNamespaceError, ListNamespacesRequest


def _check(catalog: Any) -> None:
    """The catalog's probe (its own, else listing one namespace), then its checks."""
    probe = getattr(catalog, "readiness_probe", None)
    if callable(probe):
        probe()
    else:
        catalog.list_namespaces(ListNamespacesRequest(id=[], limit=1))
    for _, check in catalog.readiness_checks():
        check()


def _kind(error: BaseException) -> str:
    """What `/readyz` says of a catalog's failure: its kind only (a message may hold a path
    or an endpoint the answer must not show; the log has it)."""
    if isinstance(error, LanceNamespaceError):
        return f"code {int(error.code)}"
    return type(error).__name__


class CatalogProbes:
    """Probes `catalogs` (name -> backend) together, each within `timeout` seconds."""

    def __init__(self, catalogs: Mapping[str, Any], timeout: float) -> None:
        self._catalogs = dict(catalogs)
        self._timeout = timeout
        self._pool = ThreadPoolExecutor(max(1, len(self._catalogs)),
                                        thread_name_prefix="catalog-probe")
        # A probe still running from an earlier call is waited for again, not started twice.
        self._running: dict[str, Future[None]] = {}

    def down(self) -> dict[str, str]:
        """The catalogs that failed or did not answer in time, with why."""
        pending = {}
        for name, catalog in self._catalogs.items():
            running = self._running.get(name)
            if running is None or running.done():
                running = self._pool.submit(_check, catalog)
                self._running[name] = running
            pending[name] = running
        wait(pending.values(), self._timeout)
        down = {}
        for name, probe in pending.items():
            if not probe.done():
                down[name] = f"did not answer within {self._timeout:g}s"
            elif probe.exception() is not None:
                down[name] = _kind(probe.exception())
        return down
