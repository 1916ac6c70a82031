"""Which operations a backend really supports, computed from the backend itself.

An operation is supported when the backend's method is not `LanceNamespace`'s default (which
only raises "not supported") nor one of this adapter's defaults marked with `@unsupported`
(which answer code 0 naming the operation and the backend). ListOperations, the spec's
AlterNamespace and AlterTable have no `LanceNamespace` method; the last two count when the
backend has a method for them that is not marked.

The code-0 defaults themselves are `backends.unsupported.UnsupportedOperations`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from lance_namespace import (
    LanceNamespace,
    UnsupportedOperationError,
)

from backends.core.extensions import ListOperationsRequest, ListOperationsResponse
from backends.core.operations import EXTENSION_METHODS, operation_id, operation_methods

MethodT = TypeVar("MethodT", bound=Callable[..., Any])
_UNSUPPORTED_MARK = "unsupported_default"


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
