"""A `module.Class` plug-in that is a plain `LanceNamespace` gets the generic table
operations through `PluginNamespace`: the plug-in keeps its catalog (and any operation it
implements itself), `MetadataNamespace` adds every other table operation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lance_namespace import (
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    LanceNamespace,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    RegisterTableRequest,
    RegisterTableResponse,
    TableExistsRequest,
    TableExistsResponse,
)

from backends.base import MetadataNamespace
from backends.capabilities import implements
from backends.core.extensions import ListOperationsRequest, ListOperationsResponse
from backends.core.operations import (
    EXTENSION_METHODS,
    all_traits,
    operation_id,
    operation_methods,
)

# The plug-in's describe_table is the catalog entry the base's describe_table completes.
_COMPLETED_HERE = frozenset({"describe_table"})
# The catalog operations the generic table operations call: always the plug-in's own (its
# LanceNamespace default answers "not supported" when it has none).
_CATALOG_OPERATIONS = frozenset({
    "create_namespace", "list_namespaces", "describe_namespace", "drop_namespace",
    "namespace_exists", "list_tables", "declare_table", "register_table",
    "deregister_table", "table_exists",
})
# A streamed method stands for its operation: the plug-in's own, where it has one.
_STREAMED = {traits.streamed_method: traits.method for traits in all_traits()
             if traits.streamed_method}


class PluginNamespace(MetadataNamespace):
    def __init__(self, inner: LanceNamespace) -> None:
        self.inner = inner

    def served_operation(self, name: str) -> Callable[..., Any]:
        """The plug-in's own operation when it has one (or a catalog operation, which only
        the plug-in can do), else the generic one."""
        if name in _STREAMED and implements(self.inner, _STREAMED[name]):
            return getattr(self.inner, _STREAMED[name])
        if name in _CATALOG_OPERATIONS or (
            name not in _COMPLETED_HERE and implements(self.inner, name)
        ):
            return getattr(self.inner, name)
        return getattr(self, name)

    def honours(self, name: str, trait: str) -> bool:
        """The plug-in's own operation takes its body whole, and no idempotency key."""
        return super().honours(name, trait) and not implements(self.inner, name)

    def list_operations(self, request: ListOperationsRequest) -> ListOperationsResponse:
        names = [*operation_methods(), *EXTENSION_METHODS]
        served = {
            operation_id(name)
            for name in names
            if implements(self.inner, name)
            or (name not in _CATALOG_OPERATIONS and implements(self, name))
        }
        return ListOperationsResponse(operations=sorted(served | {"ListOperations"}))

    # The catalog calls the generic table operations make, answered by the plug-in.

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        return self.inner.describe_table(request)

    def table_entry_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        return self.inner.table_exists(request)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        return self.inner.list_namespaces(request)

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        return self.inner.list_tables(request)

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        return self.inner.declare_table(request)

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        return self.inner.register_table(request)

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        return self.inner.deregister_table(request)

    def namespace_id(self) -> str:
        return self.inner.namespace_id()

    def backend_name(self) -> str:
        return type(self.inner).__name__

    def checks_callers(self) -> bool:
        checks = getattr(self.inner, "checks_callers", None)
        return bool(checks()) if callable(checks) else False

    def __repr__(self) -> str:
        return f"PluginNamespace({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        # Anything else the plug-in offers (close(), its own helpers) stays reachable.
        return getattr(self.inner, name)


def with_table_operations(namespace: LanceNamespace) -> MetadataNamespace:
    """`namespace` itself when it has the table operations already (every backend of this
    project, `dir` included), else wrapped."""
    return namespace if isinstance(namespace, MetadataNamespace) else PluginNamespace(namespace)
