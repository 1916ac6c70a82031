"""The one place where pylance's exceptions become the spec's errors."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from lance.commit import CommitConflictError
from lance_namespace import (
    ConcurrentModificationError,
    ErrorCode,
    InvalidInputError,
    LanceNamespaceError,
    TableAlreadyExistsError,
    TableBranchAlreadyExistsError,
    TableBranchNotFoundError,
    TableColumnNotFoundError,
    TableIndexNotFoundError,
    TableNotFoundError,
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
    # The native lookup misses a table it cannot locate on storage (e.g. a root table whose
    # name it percent-encodes differently from the manifest).
    (TableNotFoundError, ("dataset at path", "was not found")),
    (TableIndexNotFoundError, ("index", "not found")),
    (TableColumnNotFoundError, ("column", "does not exist")),
    (TableColumnNotFoundError, ("field", "not found")),
    (TableSchemaValidationError, ("different schema",)),
    (TableSchemaValidationError, ("schema", "not match")),
    (TableAlreadyExistsError, ("datasetalreadyexists",)),
    (InvalidInputError, ("invalid user input",)),
    (InvalidInputError, ("sql parser error",)),
    (InvalidInputError, ("error parsing statement",)),
    (InvalidInputError, ("duplicate field name",)),
    (InvalidInputError, ("no data provided for table creation",)),
    (InvalidInputError, ("file name too long",)),
    (InvalidInputError, ("os error 36",)),
    (InvalidInputError, ("code: 36,",)),
    (InvalidInputError, ("invalidinput",)),
    (InvalidInputError, ("must request at least one column",)),
    (InvalidInputError, ("failed to read staging manifest",)),
    (ConcurrentModificationError, ("conflict",)),
    (ConcurrentModificationError, ("retryable",)),
)
_INPUT_ERRORS = (ValueError, TypeError, KeyError, NotImplementedError)


# Where the native libraries say which source line raised an error: of no use to a client
# or an operator reading one line.
SOURCE_LOCATION = re.compile(r",?\s*(?:/[^\s,:]+)+\.rs:\d+(?::\d+)?")
# The prefix the native layer puts on what it did not classify; wrong once re-coded.
_INTERNAL_PREFIX = re.compile(r"^\s*internal error:\s*", re.IGNORECASE)


def without_source_location(message: str) -> str:
    return SOURCE_LOCATION.sub("", message)


def _by_message(message: str) -> LanceNamespaceError | None:
    lowered = message.lower()
    for error_class, words in _MESSAGE_RULES:
        if all(word in lowered for word in words):
            return error_class(_INTERNAL_PREFIX.sub("", message))
    return None


def _hidden(message: str, location: str) -> str:
    """`message` without the server path of `location` (pylance writes it without file://)."""
    path = location.removeprefix("file://").lstrip("/")
    return message.replace(path, "<table>") if path else message


def translate(error: BaseException, location: str) -> LanceNamespaceError | None:
    """The spec error for a pylance failure at `location`, None when it is not one we know."""
    if isinstance(error, LanceNamespaceError):
        return error
    if isinstance(error, CommitConflictError):
        return ConcurrentModificationError(f"concurrent commit on the table: {error}")
    message = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    message = _hidden(message, location)
    found = _by_message(message)
    if found is None and isinstance(error, _INPUT_ERRORS):
        return InvalidInputError(message)
    return found


# Codes pylance's native namespace gives failures that have a more precise one.
_IMPRECISE_CODES = (ErrorCode.INTERNAL, ErrorCode.TABLE_NOT_FOUND)


def translate_native(error: BaseException, root: str) -> BaseException:
    """The spec error for a failure of a native `DirectoryNamespace` operation under `root`:
    its internal errors, "table not found" for a missing branch and raw Python errors get
    the precise code their message names."""
    if isinstance(error, LanceNamespaceError) and error.code not in _IMPRECISE_CODES:
        return error
    message = _hidden(str(error), root)
    if isinstance(error, TableNotFoundError) and "branch" not in message.lower():
        return error  # a table name may hold any word: only a missing branch is re-coded
    precise = _by_message(message)
    if precise is not None:
        return precise
    if isinstance(error, LanceNamespaceError):
        return error
    return translate(error, root) or error


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
