"""Which operations a backend really supports, computed from the backend itself.

An operation is supported when the backend's method is not `LanceNamespace`'s default (which
only raises "not supported") nor one of this adapter's defaults marked with `@unsupported`
(which answer code 0 naming the operation and the backend). ListOperations, the spec's
AlterNamespace and AlterTable have no `LanceNamespace` method; the last two count when the
backend has a method for them that is not marked.

Also here: the front door every operation of a `MetadataNamespace` passes (its request's id
validated first, `backends.names`), and `AdapterLimits`, the marked defaults of what no
catalog backend can do here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from lance_namespace import (
    AlterTransactionRequest,
    AlterTransactionResponse,
    BatchCommitTablesRequest,
    BatchCommitTablesResponse,
    CreateMaterializedViewRequest,
    CreateMaterializedViewResponse,
    DescribeTransactionRequest,
    DescribeTransactionResponse,
    LanceNamespace,
    RefreshMaterializedViewRequest,
    RefreshMaterializedViewResponse,
    UnsupportedOperationError,
)

from backends.extensions import (
    AlterNamespaceRequest,
    AlterNamespaceResponse,
    AlterTableRequest,
    AlterTableResponse,
    ListOperationsRequest,
    ListOperationsResponse,
)

MethodT = TypeVar("MethodT", bound=Callable[..., Any])
_UNSUPPORTED_MARK = "unsupported_default"
# Deprecated in the spec in favour of DeclareTable; the official 0.13 clients have no route.
_NOT_OPERATIONS = frozenset({"namespace_id", "create_empty_table"})
EXTENSION_METHODS = ("alter_namespace", "alter_table")


def operation_id(method_name: str) -> str:
    """`create_table_index` -> `CreateTableIndex`."""
    return "".join(part.capitalize() for part in method_name.split("_"))


def operation_methods() -> list[str]:
    """The method names of every operation of `LanceNamespace`."""
    return [
        name
        for name, member in vars(LanceNamespace).items()
        if callable(member) and not name.startswith("_") and name not in _NOT_OPERATIONS
    ]


def backend_name(namespace: Any) -> str:
    name = getattr(namespace, "backend_name", None)
    return name() if callable(name) else type(namespace).__name__


def unsupported(reason: str) -> Callable[[MethodT], MethodT]:
    """Mark a method as this adapter's code-0 default: calling it raises
    UnsupportedOperationError naming the operation, the backend and `reason`."""

    def decorate(method: MethodT) -> MethodT:
        @functools.wraps(method)
        def refuse(self: Any, *arguments: Any, **keywords: Any) -> Any:
            raise UnsupportedOperationError(
                f"{operation_id(method.__name__)} is not supported by the "
                f"{backend_name(self)} backend: {reason}"
            )

        setattr(refuse, _UNSUPPORTED_MARK, True)
        return refuse  # type: ignore[return-value]

    return decorate


def implements(namespace: Any, method_name: str) -> bool:
    """True when `namespace` has a real implementation of `method_name`."""
    method = getattr(namespace, method_name, None)
    if method is None:
        return False
    function = getattr(method, "__func__", method)
    if function is getattr(LanceNamespace, method_name, None):
        return False
    return not getattr(function, _UNSUPPORTED_MARK, False)


def supported_operations(namespace: Any) -> list[str]:
    """The sorted operation ids `namespace` supports, ListOperations included."""
    names = [*operation_methods(), *EXTENSION_METHODS]
    supported = {operation_id(name) for name in names if implements(namespace, name)}
    return sorted(supported | {"ListOperations"})


def list_operations(namespace: Any, request: ListOperationsRequest) -> ListOperationsResponse:
    """ListOperations for any `LanceNamespace`: plug-ins and pylance's own classes too."""
    return ListOperationsResponse(operations=supported_operations(namespace))


# The methods that take a request naming an object: each validates the request's id first.
FRONT_DOORS = (*operation_methods(), *EXTENSION_METHODS, "describe_table_entry")
FRONT_DOOR_MARK = "validates_request_id"


def front_door(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method(self, request, ...)` behind the namespace's one guard (`self.guard`: the
    request's id validated, and the location checks of a loaded backend) before its body runs."""
    name = method.__name__

    @functools.wraps(method)
    def operation(self: Any, request: Any, *arguments: Any, **keywords: Any) -> Any:
        return self.guard(name, functools.partial(method, self), request, *arguments,
                          **keywords)

    setattr(operation, FRONT_DOOR_MARK, True)
    return operation


NO_TRANSACTIONS = "every operation of this adapter commits at once; there are no open transactions"
NO_MANIFEST_STORE = "the table's manifests are managed by Lance at its location, not by a store"
NO_JOBS = "it needs a job service (UDF backfills, materialized views) this adapter does not run"


class AdapterLimits:
    """The operations no catalog backend can do here, answering code 0 with the reason;
    a backend that can do one overrides it."""

    @unsupported("the catalog offers no way to change a namespace's properties here")
    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        raise NotImplementedError

    @unsupported("the catalog offers no way to change a table's properties here")
    def alter_table(self, request: AlterTableRequest) -> AlterTableResponse:
        raise NotImplementedError

    @unsupported(NO_TRANSACTIONS)
    def describe_transaction(
        self, request: DescribeTransactionRequest
    ) -> DescribeTransactionResponse:
        raise NotImplementedError

    @unsupported(NO_TRANSACTIONS)
    def alter_transaction(self, request: AlterTransactionRequest) -> AlterTransactionResponse:
        raise NotImplementedError

    @unsupported("pylance commits one table at a time; there is no atomic multi-table commit")
    def batch_commit_tables(self, request: BatchCommitTablesRequest) -> BatchCommitTablesResponse:
        raise NotImplementedError

    @unsupported(NO_JOBS)
    def create_materialized_view(
        self, request: CreateMaterializedViewRequest
    ) -> CreateMaterializedViewResponse:
        raise NotImplementedError

    @unsupported(NO_JOBS)
    def refresh_materialized_view(
        self, request: RefreshMaterializedViewRequest
    ) -> RefreshMaterializedViewResponse:
        raise NotImplementedError
