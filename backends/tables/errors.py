"""The one place where pylance's exceptions become the spec's errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from lance.commit import CommitConflictError
from lance_namespace import (
    ConcurrentModificationError,
    InvalidInputError,
    LanceNamespaceError,
    TableBranchAlreadyExistsError,
    TableBranchNotFoundError,
    TableColumnNotFoundError,
    TableIndexNotFoundError,
    TableSchemaValidationError,
    TableTagAlreadyExistsError,
    TableTagNotFoundError,
    TableVersionNotFoundError,
)

# (error class, words that must all appear in the lowercased message), first match wins.
# pylance reports most failures as ValueError / OSError / RuntimeError with a Rust message,
# so the message is all there is to classify.
_MESSAGE_RULES: tuple[tuple[type[LanceNamespaceError], tuple[str, ...]], ...] = (
    (TableTagNotFoundError, ("tag", "does not exist")),
    (TableTagAlreadyExistsError, ("tag", "already exists")),
    (TableBranchNotFoundError, ("branch", "does not exist")),
    (TableBranchNotFoundError, ("/tree/", "not found")),
    (TableBranchAlreadyExistsError, ("branch", "already exists")),
    (TableVersionNotFoundError, ("version", "does not exist")),
    (TableVersionNotFoundError, ("_versions/", "not found")),
    (TableIndexNotFoundError, ("index", "not found")),
    (TableColumnNotFoundError, ("column", "does not exist")),
    (TableColumnNotFoundError, ("field", "not found")),
    (TableSchemaValidationError, ("different schema",)),
    (TableSchemaValidationError, ("schema", "not match")),
    (InvalidInputError, ("invalid user input",)),
    (ConcurrentModificationError, ("conflict",)),
    (ConcurrentModificationError, ("retryable",)),
)
_INPUT_ERRORS = (ValueError, TypeError, KeyError, NotImplementedError)


def translate(error: BaseException, location: str) -> LanceNamespaceError | None:
    """The spec error for a pylance failure at `location`, None when it is not one we know."""
    if isinstance(error, LanceNamespaceError):
        return error
    if isinstance(error, CommitConflictError):
        return ConcurrentModificationError(f"concurrent commit on the table: {error}")
    message = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    message = message.replace(location.removeprefix("file://").lstrip("/"), "<table>")
    lowered = message.lower()
    for error_class, words in _MESSAGE_RULES:
        if all(word in lowered for word in words):
            return error_class(message)
    if isinstance(error, _INPUT_ERRORS):
        return InvalidInputError(message)
    return None


@contextlib.contextmanager
def lance_errors(location: str) -> Iterator[None]:
    """Run pylance calls on the table at `location`, raising the spec's errors."""
    try:
        yield
    except (ValueError, OSError, RuntimeError, TypeError, KeyError, NotImplementedError) as error:
        translated = translate(error, location)
        if translated is None or translated is error:
            raise
        raise translated from error
