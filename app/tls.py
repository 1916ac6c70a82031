"""HTTPS served by the server itself: the settings `tls_cert_file`, `tls_key_file` and
`tls_client_ca_file`, checked at start (one sentence naming the setting, never the file's
content) and turned into uvicorn's options. Behind a gateway TLS usually ends there instead
(docs/security.md); these are for a server reached directly, or for TLS to the gateway's
upstream too.
"""

from __future__ import annotations

import ssl
from typing import Any

from app.settings import Settings
from backends.core.settings import ConfigurationError


def tls_on(settings: Settings) -> bool:
    return bool(settings.tls_cert_file)


def check_tls(settings: Settings) -> None:
    """The TLS settings belong together and their files load; else ConfigurationError."""
    if bool(settings.tls_cert_file) != bool(settings.tls_key_file):
        raise ConfigurationError("tls_cert_file and tls_key_file are set together (the certificate "
                            "chain and its private key, PEM)")
    if settings.tls_client_ca_file and not settings.tls_cert_file:
        raise ConfigurationError("tls_client_ca_file asks clients for certificates, which needs "
                            "HTTPS: set tls_cert_file and tls_key_file too")
    if not tls_on(settings):
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    except OSError as error:  # ssl.SSLError is one
        raise ConfigurationError(
            f"tls_cert_file / tls_key_file do not load as a PEM certificate chain and its key: "
            f"{_reason(error)}") from None
    if settings.tls_client_ca_file:
        try:
            context.load_verify_locations(cafile=settings.tls_client_ca_file)
        except OSError as error:  # ssl.SSLError is one
            raise ConfigurationError(
                f"tls_client_ca_file does not load as PEM CA certificates: {_reason(error)}"
            ) from None


def _reason(error: OSError) -> str:
    """What went wrong, without the file's content: "No such file or directory", an
    OpenSSL reason such as "PEM_LIB"."""
    return str(getattr(error, "reason", None) or error.strerror or type(error).__name__)


def uvicorn_tls_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options for the TLS settings (none when HTTPS is off). With a client CA every
    client must present a certificate it signed."""
    if not tls_on(settings):
        return {}
    options: dict[str, Any] = {"ssl_certfile": settings.tls_cert_file,
                               "ssl_keyfile": settings.tls_key_file}
    if settings.tls_client_ca_file:
        options |= {"ssl_ca_certs": settings.tls_client_ca_file,
                    "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return options
