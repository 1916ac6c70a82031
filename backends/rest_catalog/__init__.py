"""What the REST catalog backends (Unity Catalog, Iceberg REST) share.

    client.py    the pooled, retrying, authenticating HTTP client (`RestCatalogClient`); its
                 `as_caller` view sends a caller's bearer token instead of its own
    errors.py    a catalog's refusal → the Lance error (`ErrorRules` per call)
    namespace.py `RestCatalogNamespace`, what the backends' namespace classes share
    oauth.py     OAuth2 client credentials with refresh before expiry
    settings.py  `RestCatalogSettings`, the properties every REST catalog backend reads
    values.py    locations, property maps and property changes read from requests and answers
"""

from backends.rest_catalog.client import RestCatalogClient
from backends.rest_catalog.errors import ErrorRules, error_for, parse_error_reply
from backends.rest_catalog.namespace import RestCatalogNamespace
from backends.rest_catalog.oauth import OAuth2ClientCredentials
from backends.rest_catalog.settings import RestCatalogSettings
from backends.rest_catalog.values import validate_location

__all__ = [
    "ErrorRules",
    "OAuth2ClientCredentials",
    "RestCatalogClient",
    "RestCatalogNamespace",
    "RestCatalogSettings",
    "error_for",
    "parse_error_reply",
    "validate_location",
]
