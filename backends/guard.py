"""The one front door of every backend operation: the request's id (and the tag and branch
names and SQL expressions it holds, and the column types of its Arrow data) validated before
the operation's body runs
(`call_with_valid_id`), and `front_door`, which puts a `MetadataNamespace` method behind its
namespace's `guard` (which adds the location checks of `backends.containment`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from backends.capabilities import EXTENSION_METHODS, operation_methods
from backends.core.names import remembering_names, validate_identifier
from backends.tables.access import check_storable_stream
from backends.tables.refs import check_ref_names
from backends.tables.sql import check_sql_expressions

ResultT = TypeVar("ResultT")

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


def call_with_valid_id(
    call: Callable[..., ResultT], request: Any, *arguments: Any, **keywords: Any
) -> ResultT:
    """`call(request, ...)` with `request.id` validated first (and in NFC), and the tag and
    branch names and SQL expressions it holds, and the column types of its Arrow data (the
    one positional argument of the operations that take data): the front door of every
    backend operation."""
    with remembering_names():
        identifier = getattr(request, "id", None)
        if identifier is not None:
            validated = validate_identifier(identifier)
            if validated != identifier:
                request = request.model_copy(update={"id": validated})
        check_ref_names(request)
        check_sql_expressions(request)
        check_storable_stream(keywords.get("request_data", arguments[0] if arguments else None))
        return call(request, *arguments, **keywords)
