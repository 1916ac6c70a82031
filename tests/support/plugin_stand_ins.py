"""Backends used only by the tests, each named for what it stands in for.

`MetadataOnlyNamespace` stands in for a catalog plug-in (a plain `LanceNamespace`): it keeps
the namespace tree and table registrations of a real `dir` backend (which takes locations
inside its root in full) but no data operation, so the adapter's generic table operations do
all reading and writing.
`RecordingNamespace` stands in for a plug-in that records what reaches it and misbehaves on
request (the service tests: dispatch, health, auth, gateway).
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from lance_namespace import (
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    LanceNamespace,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceNotFoundError,
    ServiceUnavailableError,
)

from backends.directory import DirectoryBackend

SLOW_SECONDS = 2.0
LEAKY_SECRET = "leaky-backend-secret-7f3a"
_METADATA_OPERATIONS = (
    "create_namespace",
    "list_namespaces",
    "describe_namespace",
    "drop_namespace",
    "namespace_exists",
    "list_tables",
    "register_table",
    "table_exists",
    "deregister_table",
    "declare_table",
)


class MetadataOnlyNamespace(LanceNamespace):
    def __init__(self, **properties: str) -> None:
        self.catalog = DirectoryBackend(**properties)

    def namespace_id(self) -> str:
        return f"MetadataOnly({self.catalog.namespace_id()})"

    def describe_table(self, request: Any) -> Any:
        described = self.catalog.describe_table(request.model_copy(update={
            "load_detailed_metadata": False, "check_declared": None, "with_table_uri": None,
        }))
        return described.model_copy(update={"table_uri": None, "table": None, "namespace": None,
                                             "version": None, "var_schema": None})


def _forward(name: str) -> Any:
    def method(self: MetadataOnlyNamespace, request: Any) -> Any:
        return getattr(self.catalog, name)(request)

    method.__name__ = name
    return method


for _name in _METADATA_OPERATIONS:
    setattr(MetadataOnlyNamespace, _name, _forward(_name))


class RecordingNamespace(LanceNamespace):
    """Records every request it gets and misbehaves on request.

    Instances are kept in `instances` by their `name` property, so a test reaches the instance
    the adapter built. A test sets `mode` to make every call fail: `down` (a spec error, 503),
    `broken` (an unexpected error whose message holds LEAKY_SECRET) or `hang`. The last name of
    an id steers one call: `slow` takes `delay` seconds; a namespace `boom` raises an unexpected
    error, `missing` is not found, `timeout` times out itself and `ctx` answers with header
    context. A test that waits for a `slow` call waits for `slow_started`, and may end it
    early with `release_slow`.
    """

    instances: ClassVar[dict[str, RecordingNamespace]] = {}

    def __init__(self, name: str = "default", delay: str = str(SLOW_SECONDS), **_: str) -> None:
        self.name = name
        self.delay = float(delay)
        self.mode = "ok"
        self.received: list[Any] = []
        self._lock = threading.Lock()
        self.slow_started = threading.Event()
        self.release_slow = threading.Event()
        RecordingNamespace.instances[name] = self

    def namespace_id(self) -> str:
        return f"recording:{self.name}"

    def checks_callers(self) -> bool:
        """It stands in for a catalog that judges the callers forwarded to it."""
        return True

    @property
    def identities(self) -> list[dict[str, Any] | None]:
        """The caller identity of each request received, in order."""
        with self._lock:
            received = list(self.received)
        return [r.identity.model_dump(exclude_none=True) if r.identity else None for r in received]

    def _behave(self, request: Any) -> str:
        """Record `request`, apply `mode` and a `slow` id; answer the id's last name."""
        with self._lock:
            self.received.append(request)
        if self.mode == "down":
            raise ServiceUnavailableError("the backend is down")
        if self.mode == "broken":
            raise RuntimeError(f"connect failed: password={LEAKY_SECRET} Bearer {LEAKY_SECRET}")
        if self.mode == "hang":
            time.sleep(5)  # a backend that hangs is the behaviour asked for
        name = request.id[-1] if request.id else ""
        if name == "slow":
            self.slow_started.set()
            self.release_slow.wait(self.delay)
        return name

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        name = self._behave(request)
        if name == "boom":
            raise RuntimeError("secret internal detail /etc/passwd")
        if name == "ctx":
            return DescribeNamespaceResponse(
                properties={"a": "b"}, context={"header.x-backend-trace": "t-42", "note": "kept"}
            )
        if name == "missing":
            raise NamespaceNotFoundError(f"namespace {request.id} not found")
        if name == "timeout":  # a catalog client's own time limit, as a socket raises it
            raise TimeoutError("timed out reading from the catalog")
        return DescribeNamespaceResponse(properties={"name": name})

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        self._behave(request)
        return ListNamespacesResponse(namespaces=["fast"])

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        self._behave(request)
        return ListTablesResponse(tables=["t"])

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        self._behave(request)
        return DescribeTableResponse(location=f"memory://{'/'.join(request.id or [])}")
