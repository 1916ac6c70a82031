"""A `module.Class` plug-in that is a plain `LanceNamespace` gets the generic table
operations through `PluginNamespace`: the plug-in keeps its catalog (and any operation it
implements itself), `MetadataNamespace` adds every other table operation."""

from __future__ import annotations

import functools
from typing import Any

from lance_namespace import DescribeTableRequest, DescribeTableResponse, LanceNamespace

from backends.base import MetadataNamespace
from backends.capabilities import EXTENSION_METHODS, implements, operation_methods

# The plug-in's describe_table is the catalog entry the base's describe_table completes.
_COMPLETED_HERE = frozenset({"describe_table"})


class PluginNamespace(MetadataNamespace):
    def __init__(self, inner: LanceNamespace) -> None:
        self.inner = inner
        # The plug-in's own implementations shadow the generic ones, on this instance only;
        # like every operation of a MetadataNamespace, they stand behind its guard.
        for name in [*operation_methods(), *EXTENSION_METHODS, "list_operations"]:
            if name not in _COMPLETED_HERE and implements(inner, name):
                setattr(self, name, functools.partial(self.guard, name, getattr(inner, name)))

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        return self.inner.describe_table(request)

    def namespace_id(self) -> str:
        return self.inner.namespace_id()

    def backend_name(self) -> str:
        return type(self.inner).__name__

    def __repr__(self) -> str:
        return f"PluginNamespace({self.inner!r})"

    def __getattr__(self, name: str) -> Any:
        # Anything else the plug-in offers (close(), its own helpers) stays reachable.
        return getattr(self.inner, name)


def with_table_operations(namespace: LanceNamespace) -> MetadataNamespace:
    """`namespace` itself when it has the table operations already (every backend of this
    project, `dir` included), else wrapped."""
    return namespace if isinstance(namespace, MetadataNamespace) else PluginNamespace(namespace)
