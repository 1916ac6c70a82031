"""The one place where Glue, STS and botocore errors become namespace errors."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    HTTPClientError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)
from lance_namespace import (
    ConcurrentModificationError,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
    ThrottlingError,
    UnauthenticatedError,
)

MAX_MESSAGE_LENGTH = 500  # of Glue's error text in ours (some servers send whole HTML pages)

_XML_ERROR_CODE = re.compile(r"<Code>([^<]+)</Code>")
_NOT_FOUND_CODES = {"EntityNotFoundException"}
_ALREADY_EXISTS_CODES = {"AlreadyExistsException", "FederatedResourceAlreadyExistsException"}
_INVALID_INPUT_CODES = {
    "InvalidInputException",
    "ValidationException",
    "InvalidParameterValue",
    "InvalidParameterValueException",
    "ResourceNumberLimitExceededException",
}
_PERMISSION_CODES = {"AccessDeniedException", "AccessDenied"}
_UNAUTHENTICATED_CODES = {
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "InvalidSignatureException",
    "IncompleteSignature",
    "ExpiredToken",
    "ExpiredTokenException",
    "MissingAuthenticationToken",
    "AuthFailure",
    "NotAuthorized",
}
_THROTTLING_CODES = {
    "ThrottlingException",
    "Throttling",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "SlowDown",
}
_UNAVAILABLE_CODES = {
    "InternalServiceException",
    "InternalFailure",
    "InternalError",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "OperationTimeoutException",
}
_BY_CODE: tuple[tuple[set[str], type[LanceNamespaceError]], ...] = (
    (_INVALID_INPUT_CODES, InvalidInputError),
    (_PERMISSION_CODES, PermissionDeniedError),
    (_UNAUTHENTICATED_CODES, UnauthenticatedError),
    (_THROTTLING_CODES, ThrottlingError),
    ({"ConcurrentModificationException"}, ConcurrentModificationError),
)
_BY_STATUS: dict[int, type[LanceNamespaceError]] = {
    401: UnauthenticatedError,
    403: PermissionDeniedError,
    429: ThrottlingError,
}


@contextmanager
def glue_errors(
    subject: str,
    not_found: type[LanceNamespaceError] = NamespaceNotFoundError,
    already_exists: type[LanceNamespaceError] = NamespaceAlreadyExistsError,
) -> Iterator[None]:
    """Translate errors raised inside the block; `subject` names the object for messages."""
    try:
        yield
    except ClientError as error:
        raise translate_client_error(error, subject, not_found, already_exists) from error
    except (BotoConnectionError, HTTPClientError) as error:
        raise ServiceUnavailableError(f"Glue endpoint unreachable: {error}") from error
    except (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError) as error:
        raise UnauthenticatedError(f"no usable AWS credentials: {error}") from error
    except ParamValidationError as error:
        raise InvalidInputError(f"invalid Glue request for {subject}: {error}") from error
    except BotoCoreError as error:
        raise InternalError(f"Glue client error for {subject}: {error}") from error


def translate_client_error(
    error: ClientError,
    subject: str,
    not_found: type[LanceNamespaceError],
    already_exists: type[LanceNamespaceError],
) -> LanceNamespaceError:
    details = error.response.get("Error", {})
    code = error_code(details)
    message = f"{subject}: {str(details.get('Message') or code)[:MAX_MESSAGE_LENGTH]}"
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    if code in _NOT_FOUND_CODES:
        return not_found(f"{subject} not found")
    if code in _ALREADY_EXISTS_CODES:
        return already_exists(f"{subject} already exists")
    for codes, error_type in _BY_CODE:
        if code in codes:
            return error_type(message)
    if code in _UNAVAILABLE_CODES or status >= 500:
        return ServiceUnavailableError(message)
    if status in _BY_STATUS:
        return _BY_STATUS[status](message)
    return InternalError(f"unexpected Glue error {code or status}: {message}")


def error_code(details: Mapping[str, Any]) -> str:
    """The error code; Glue-compatible servers answering in the XML error format leave
    botocore's JSON parser without one, so read it from the body then."""
    code = str(details.get("Code") or "")
    if code and not code.isdigit():
        return code
    found = _XML_ERROR_CODE.search(str(details.get("Message") or ""))
    return found.group(1) if found else code
