"""Backends used only by the tests, each named for what it stands in for.

`MetadataOnlyNamespace` stands in for a catalog plug-in (a plain `LanceNamespace`): it keeps
the namespace tree and table registrations of a real `dir` backend (which takes locations
inside its root in full) but no data operation, so the adapter's generic table operations do
all reading and writing.
`ProbeNamespace` records what reaches a backend and misbehaves on request.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from lance_namespace import (
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    LanceNamespace,
    ListNamespacesRequest,
    ListNamespacesResponse,
    NamespaceNotFoundError,
)

from backends.directory import DirectoryBackend

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
            "load_detailed_metadata": None, "check_declared": None, "with_table_uri": None,
        }))
        return described.model_copy(update={"table_uri": None, "table": None, "namespace": None})


def _forward(name: str) -> Any:
    def method(self: MetadataOnlyNamespace, request: Any) -> Any:
        return getattr(self.catalog, name)(request)

    method.__name__ = name
    return method


for _name in _METADATA_OPERATIONS:
    setattr(MetadataOnlyNamespace, _name, _forward(_name))


class ProbeNamespace(LanceNamespace):
    """Records every request it gets; namespace names steer its behaviour:
    `boom` raises an unexpected error, `slow` takes `delay` seconds, `ctx` answers with
    header context."""

    received: list[Any] = []
    lock = threading.Lock()

    def __init__(self, delay: str = "1.0") -> None:
        self.delay = float(delay)

    def namespace_id(self) -> str:
        return "Probe"

    def _record(self, request: Any) -> None:
        with self.lock:
            ProbeNamespace.received.append(request)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        self._record(request)
        name = request.id[-1] if request.id else ""
        if name == "boom":
            raise RuntimeError("secret internal detail /etc/passwd")
        if name == "slow":
            time.sleep(self.delay)
        if name == "ctx":
            return DescribeNamespaceResponse(
                properties={"a": "b"}, context={"header.x-backend-trace": "t-42", "note": "kept"}
            )
        if name == "missing":
            raise NamespaceNotFoundError(f"namespace {request.id} not found")
        return DescribeNamespaceResponse(properties={"name": name})

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        self._record(request)
        return ListNamespacesResponse(namespaces=["fast"])
