"""The names of the HTTP protocol the app reads and writes, in one place: media types,
credential headers and the context-entry prefix of headers.

The identifier delimiter is not here: backends share it, so it lives in `backends.core.names`.
"""

from __future__ import annotations

JSON = "application/json"
ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW_FILE = "application/vnd.apache.arrow.file"

# The credential headers: they become the request's `identity`, never its context.
AUTHORIZATION_HEADER = "authorization"
API_KEY_HEADER = "x-api-key"
# A request header `name` reaches the backend as context entry `header.name`; a response's
# `header.` context entries go back as HTTP headers (the spec's `Context`).
CONTEXT_HEADER_PREFIX = "header."


def media_type(content_type: str) -> str:
    """The media type a Content-Type header names, without its parameters, lower-cased."""
    return content_type.partition(";")[0].strip().lower()
