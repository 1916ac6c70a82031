"""The one place where pylance's exceptions become the spec's errors."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from lance.commit import CommitConflictError
from lance_namespace import (
    ConcurrentModificationError,
    ErrorCode,
    InternalError,
    InvalidInputError,
    InvalidTableStateError,
    LanceNamespaceError,
    PermissionDeniedError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableBranchAlreadyExistsError,
    TableBranchNotFoundError,
    TableColumnNotFoundError,
    TableIndexAlreadyExistsError,
    TableIndexNotFoundError,
    TableNotFoundError,
    TableSchemaValidationError,
    TableTagAlreadyExistsError,
    TableTagNotFoundError,
    TableVersionNotFoundError,
    ThrottlingError,
)

from backends.core.messages import readable, without_paths

# (error class, words that must all appear in the lowercased message), first match wins.
# pylance reports most failures as ValueError / OSError / RuntimeError with a Rust message,
# so the message is all there is to classify.
_MESSAGE_RULES: tuple[tuple[type[LanceNamespaceError], tuple[str, ...]], ...] = (
    (TableTagNotFoundError, ("tag", "does not exist")),
    (TableTagAlreadyExistsError, ("tag", "already exists")),
    (TableBranchNotFoundError, ("branch", "does not exist")),
    # A missing manifest is a missing version, on a branch (`tree/<branch>/_versions/`) too.
    (TableVersionNotFoundError, ("_versions/", "not found")),
    (TableBranchNotFoundError, ("/tree/", "not found")),
    (TableBranchAlreadyExistsError, ("branch", "already exists")),
    (TableVersionNotFoundError, ("version", "does not exist")),
    # The native lookup misses a table it cannot locate on storage (e.g. a root table whose
    # name it percent-encodes differently from the manifest).
    (TableNotFoundError, ("dataset at path", "was not found")),
    # An inverted index without positions cannot answer a phrase query: not a missing index.
    (InvalidInputError, ("position is not found", "phrase")),
    (TableIndexNotFoundError, ("index", "not found")),
    (TableIndexAlreadyExistsError, ("index name", "already exists")),
    (TableColumnNotFoundError, ("column", "does not exist")),
    (TableColumnNotFoundError, ("field", "not found")),
    (TableColumnNotFoundError, ("column", "is not in the dataset")),
    (TableSchemaValidationError, ("different schema",)),
    (TableSchemaValidationError, ("schema", "not match")),
    (TableAlreadyExistsError, ("datasetalreadyexists",)),
    (InvalidInputError, ("invalid user input",)),
    (InvalidInputError, ("no column named",)),
    (InvalidInputError, ("sql parser error",)),
    (InvalidInputError, ("error parsing statement",)),
    (InvalidInputError, ("duplicate field name",)),
    # Data the writer refuses: nulls in a column the data's own schema calls non-nullable, a
    # top-level column name holding a dot (Lance's path separator).
    (InvalidInputError, ("declared as non-nullable but contains null",)),
    (InvalidInputError, ("top level field", "cannot contain `.`")),
    (InvalidInputError, ("no data provided for table creation",)),
    (InvalidInputError, ("ef must be greater than or equal to k",)),
    (InvalidInputError, ("file name too long",)),
    (InvalidInputError, ("os error 36",)),
    (InvalidInputError, ("code: 36,",)),
    (InvalidInputError, ("invalidinput",)),
    (InvalidInputError, ("must request at least one column",)),
    # A LIKE pattern (or a regular expression) too large to compile: the client's input.
    (InvalidInputError, ("unable to build regex",)),
    (InvalidInputError, ("compiled regex exceeds size limit",)),
    (InvalidInputError, ("failed to read staging manifest",)),
    (ConcurrentModificationError, ("conflict",)),
    (ConcurrentModificationError, ("retryable",)),
)
_INPUT_ERRORS = (ValueError, TypeError, KeyError, NotImplementedError)
# What `lance_errors` translates; anything else it leaves as it is.
_TRANSLATED = (ValueError, OSError, RuntimeError, TypeError, KeyError, NotImplementedError)
# Failures whose text does not say what happened: (words, error class, what happened).
_STORAGE_UNAVAILABLE = (
    "the table's storage did not answer (it is unavailable or refused the request for now); "
    "retry"
)
_STORAGE_REFUSED = (
    "the table's storage refused the server's credentials (access denied): the server's "
    "storage policy does not allow this request")
_EXPLAINED: tuple[tuple[tuple[str, ...], type[LanceNamespaceError], str], ...] = (
    # A commit whose answer the storage lost, not found applied on reading back (or not read
    # back): never code 14 or 17, which clients retry, in case it took effect after all.
    (("commit result for version", "is unknown"), InternalError,
     "the storage did not confirm the write's commit, and it could not be read back: it may "
     "or may not have taken effect; read the table's latest version before writing again"),
    # An object store that does not answer, or answers that it cannot now: code 17, which
    # clients retry; not a failure of the server (code 18). Its message names endpoints.
    # S3 throttles with 503 SlowDown: code 21, which clients retry after backing off.
    (("slowdown",), ThrottlingError,
     "the table's storage throttled the request (SlowDown); retry after a pause"),
    (("error sending request",), ServiceUnavailableError, _STORAGE_UNAVAILABLE),
    (("503 service unavailable",), ServiceUnavailableError, _STORAGE_UNAVAILABLE),
    (("500 internal server error",), ServiceUnavailableError, _STORAGE_UNAVAILABLE),
    (("connection reset",), ServiceUnavailableError, _STORAGE_UNAVAILABLE),
    (("connection refused",), ServiceUnavailableError, _STORAGE_UNAVAILABLE),
    # The directory catalog's check of its manifest's latest version, whose own message
    # (a storage read that failed) it does not pass on; it comes before any change.
    (("failed to check dataset staleness",), ServiceUnavailableError, _STORAGE_UNAVAILABLE),
    # The storage refused the server's own credentials (S3's 403 AccessDenied, object_store's
    # "lacked the necessary privileges"): code 15, for the operator to fix the server's policy.
    (("lacked the necessary privileges",), PermissionDeniedError, _STORAGE_REFUSED),
    (("403 forbidden",), PermissionDeniedError, _STORAGE_REFUSED),
    # A full disk (ENOSPC): the write stopped before its commit, so it did not take effect;
    # code 17, which clients retry, once the operator has freed space.
    (("no space left on device",), ServiceUnavailableError,
     "the storage is full (no space left on device): the write did not take effect; "
     "retry once space is freed"),
    (("/_refs/tags/", "not found"), InvalidTableStateError,
     "the table holds a tag whose name Lance writes but cannot read back (a non-ASCII name, "
     "from an older server or another client), so its tags cannot be listed; DeleteTableTag "
     "that tag by its name"),
    (("tagged version", "marked for cleanup"), InvalidTableStateError,
     "a version to delete is named by a tag: delete the tag first (DeleteTableTag)"),
)


# The prefix the native layer puts on what it did not classify; wrong once re-coded.
_INTERNAL_PREFIX = re.compile(r"^\s*internal error:\s*", re.IGNORECASE)


def _by_message(message: str) -> LanceNamespaceError | None:
    """The error `message` names. The rules read its text as written and without debug dumps
    (a dump's kind, `InvalidInput { .. }`, says what the plain text may not); the error carries
    the plain text."""
    plain = readable(message)
    lowered = f"{message} {plain}".lower()
    for words, error_class, explanation in _EXPLAINED:
        if all(word in lowered for word in words):
            return error_class(explanation)
    for error_class, words in _MESSAGE_RULES:
        if all(word in lowered for word in words):
            return error_class(_INTERNAL_PREFIX.sub("", plain))
    return None


def is_native_panic(error: BaseException) -> bool:
    """A panic of a native (Rust) library: pyo3 raises it beside Exception, not under it,
    yet it fails one request, not the server."""
    return type(error).__name__ == "PanicException"


def _unimplemented(error: BaseException) -> InvalidInputError | None:
    """The input error for a native library's panic at something it does not implement:
    SQL Lance's planner does not take (`backends.tables.sql` refuses what is known of it
    before; this is for the rest)."""
    if not is_native_panic(error) or "not yet implemented" not in str(error):
        return None
    return InvalidInputError(
        "Lance does not implement part of this request (its SQL may not hold placeholders "
        "such as :name, $1 or ?, nor N'' or B'' literals)"
    )


def translate(error: BaseException, location: str) -> LanceNamespaceError | None:
    """The spec error for a pylance failure at `location`, None when it is not one we know."""
    if isinstance(error, LanceNamespaceError):
        return error
    if not isinstance(error, Exception):
        return _unimplemented(error)
    if isinstance(error, CommitConflictError):
        return ConcurrentModificationError(f"concurrent commit on the table: {error}")
    message = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    message = without_paths(message, [location])
    found = _by_message(message)
    if found is None and isinstance(error, _INPUT_ERRORS):
        return InvalidInputError(readable(message))
    return found


# How the native namespace fails; anything else (a panic aside) is left as it is.
_NATIVE_FAILURES = (LanceNamespaceError, ValueError, OSError, RuntimeError)
# Codes pylance's native namespace gives failures that have a more precise one.
# (pylance calls a storage that does not answer while it resolves a table throttling.)
_IMPRECISE_CODES = (ErrorCode.INTERNAL, ErrorCode.TABLE_NOT_FOUND, ErrorCode.THROTTLING)


def translate_native(error: BaseException, root: str) -> BaseException:
    """The spec error for a failure of a native `DirectoryNamespace` operation under `root`:
    its internal errors, "table not found" for a missing branch and raw Python errors get
    the precise code their message names; a column it calls invalid input is missing, as
    pylance's own operations say."""
    if not isinstance(error, _NATIVE_FAILURES):
        return _unimplemented(error) or error
    message = without_paths(str(error), [root])
    if isinstance(error, LanceNamespaceError) and error.code == ErrorCode.INVALID_INPUT:
        precise = _by_message(message)
        return precise if isinstance(precise, TableColumnNotFoundError) else error
    if isinstance(error, LanceNamespaceError) and error.code not in _IMPRECISE_CODES:
        return error
    if isinstance(error, TableNotFoundError) and "branch" not in message.lower():
        return error  # a table name may hold any word: only a missing branch is re-coded
    precise = _by_message(message)
    if precise is not None:
        return precise
    if isinstance(error, LanceNamespaceError):
        return error
    return translate(error, root) or error


def translate_internal(error: BaseException, root: str) -> BaseException:
    """`translate_native` for an internal or untranslated error; any other spec error is
    left as it is (it has its code already)."""
    if isinstance(error, LanceNamespaceError) and error.code != ErrorCode.INTERNAL:
        return error
    return translate_native(error, root)


@contextlib.contextmanager
def lance_errors(location: str) -> Iterator[None]:
    """Run pylance calls on the table at `location`, raising the spec's errors."""
    try:
        yield
    except BaseException as error:  # a native panic is a BaseException
        if isinstance(error, Exception) and not isinstance(error, _TRANSLATED):
            raise
        translated = translate(error, location)
        if translated is None or translated is error:
            raise
        raise translated from error
