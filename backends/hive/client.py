"""The metastore's Thrift client: connections, the pooled fail-over client, and the one place
where metastore and transport failures become Lance errors."""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlparse

from hive_metastore import ThriftHiveMetastore
from hive_metastore.ttypes import (
    AlreadyExistsException,
    InvalidObjectException,
    InvalidOperationException,
    MetaException,
    NoSuchObjectException,
)
from lance_namespace import (
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TTransport
from thrift.transport.TTransport import TSaslClientTransport, TTransportException

from backends.core.extras import KERBEROS
from backends.core.settings import ConfigurationError

T = TypeVar("T")

DEFAULT_PORT = 9083


# ---------------------------------------------------------------------------------------------
# Error translation: the one place where metastore and transport failures become Lance errors.


def translate_hms_error(error: Exception, subject: str) -> LanceNamespaceError:
    """The Lance error for a failed metastore call about a `subject` ("namespace" or "table")."""
    if isinstance(error, LanceNamespaceError):
        return error
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    if _is_transport_failure(error):
        return ServiceUnavailableError(f"Hive Metastore is unavailable: {message}")
    if isinstance(error, NoSuchObjectException):
        if subject == "table":
            return TableNotFoundError(f"table not found: {message}")
        return NamespaceNotFoundError(f"namespace not found: {message}")
    if isinstance(error, AlreadyExistsException):
        if subject == "table":
            return TableAlreadyExistsError(f"table already exists: {message}")
        return NamespaceAlreadyExistsError(f"namespace already exists: {message}")
    if isinstance(error, InvalidOperationException) and "not empty" in message:
        return NamespaceNotEmptyError(message)
    if isinstance(error, InvalidObjectException | InvalidOperationException):
        return InvalidInputError(f"Hive Metastore rejected the request: {message}")
    if isinstance(error, TApplicationException):
        if error.type == TApplicationException.UNKNOWN_METHOD:
            return UnsupportedOperationError(f"the metastore does not support this: {message}")
        return InternalError(f"Hive Metastore protocol error: {message}")
    if isinstance(error, MetaException):
        if any(refusal in message for refusal in LOCATION_REFUSALS):
            return InvalidInputError(f"the metastore cannot use this location: {message}")
        return InternalError(f"Hive Metastore error: {message}")
    return InternalError(f"unexpected Hive Metastore failure: {message}")


# What HMS 3 answers (a MetaException naming the Java exception of its file system) when the
# location of a database, table or catalog is in a bucket that does not exist or is not allowed.
LOCATION_REFUSALS = ("java.io.FileNotFoundException", "java.nio.file.AccessDeniedException")


# Exceptions the metastore answers with; after them the connection is still usable.
HMS_ANSWERS = (
    NoSuchObjectException,
    AlreadyExistsException,
    InvalidObjectException,
    InvalidOperationException,
    MetaException,
    TApplicationException,
)


def _is_transport_failure(error: Exception) -> bool:
    return isinstance(error, TTransportException | OSError | EOFError)


def _is_timeout(error: Exception) -> bool:
    if isinstance(error, TimeoutError):
        return True
    if isinstance(error, TTransportException):
        return error.type == TTransportException.TIMED_OUT or isinstance(
            getattr(error, "inner", None), TimeoutError
        )
    return False


# ---------------------------------------------------------------------------------------------
# Connections


@dataclass(frozen=True)
class MetastoreAddress:
    host: str
    port: int

    @classmethod
    def parse(cls, uri: str) -> MetastoreAddress:
        parsed = urlparse(uri.strip())
        if parsed.scheme != "thrift" or not parsed.hostname:
            raise ConfigurationError(f"metastore uri must be thrift://host:port, got {uri!r}")
        try:
            port = parsed.port or DEFAULT_PORT
        except ValueError:
            raise ConfigurationError(f"metastore uri has a bad port: {uri!r}") from None
        return cls(parsed.hostname, port)


@dataclass(frozen=True)
class Kerberos:
    """SASL/GSSAPI (Kerberos) to a secured metastore: its service principal is
    `service/<host as in the uri>`; the client's credentials are the Kerberos ticket cache's
    (`kinit`), or got as needed from the client keytab MIT Kerberos finds (`KRB5_CLIENT_KTNAME`
    in the server's environment, or `default_client_keytab_name` in krb5.conf), for
    `principal` (unset: the first the keytab or cache holds)."""

    service: str = "hive"
    principal: str | None = None

    def check_installed(self) -> None:
        """A one-sentence ConfigurationError, at start, when the libraries are missing."""
        for module in ("kerberos", "puresasl"):
            KERBEROS.load(module, "property 'kerberos'")

    def transport(self, socket: TSocket.TSocket, host: str) -> TTransport.TTransportBase:
        principal = {"principal": self.principal} if self.principal else {}
        return TSaslClientTransport(socket, host, self.service, mechanism="GSSAPI", **principal)

    def refusal(self, error: Exception) -> str:
        """What a failed Kerberos handshake says, without the server's files (its cache)."""
        text = " ".join(str(part[0]) if isinstance(part, tuple) else str(part)
                        for part in getattr(error, "args", ()) or (error,))
        if "credentials" in text.lower() and "no " in text.lower():
            return ("Kerberos: the server has no credentials for the metastore (a ticket from "
                    "kinit, or a client keytab: KRB5_CLIENT_KTNAME)")
        return "Kerberos: " + re.sub(r"\s*\((?:default cache|ccache)[^)]*\)", "", text).strip()


@dataclass(frozen=True)
class Timeouts:
    """How long to wait for a connection and for an answer, in milliseconds."""

    connect_ms: int
    read_ms: int


class MetastoreConnection:
    """One open Thrift connection to a metastore."""

    def __init__(self, address: MetastoreAddress, timeouts: Timeouts,
                 kerberos: Kerberos | None = None):
        self.address = address
        socket = TSocket.TSocket(address.host, address.port)
        socket.setTimeout(timeouts.connect_ms)
        self._transport = (TTransport.TBufferedTransport(socket) if kerberos is None
                           else kerberos.transport(socket, address.host))
        # The accelerated (C) protocol of thrift 0.13 breaks on Python >= 3.10 (PY_SSIZE_T_CLEAN).
        protocol = TBinaryProtocol.TBinaryProtocol(self._transport)
        self.client = ThriftHiveMetastore.Client(protocol)
        self._open(kerberos)
        socket.setTimeout(timeouts.read_ms)

    def _open(self, kerberos: Kerberos | None) -> None:
        try:
            self._transport.open()
        except Exception as error:
            if kerberos is None or _is_transport_failure(error):
                raise
            raise ConnectionRefusedError(kerberos.refusal(error)) from None

    def close(self) -> None:
        # Closing a broken socket may fail; the connection is discarded either way.
        with suppress(Exception):
            self._transport.close()


class MetastoreClientPool:
    """At most `size` connections, tried against each address in order (failover).

    A call that fails on a transport error closes its connection and every idle one (they
    were opened against the same, now gone, metastore process) and is retried once on a fresh
    connection, so the pool recovers by itself after a metastore restart.
    """

    def __init__(self, addresses: Sequence[MetastoreAddress], size: int, timeouts: Timeouts,
                 kerberos: Kerberos | None = None):
        self._addresses = list(addresses)
        self._timeouts = timeouts
        self._kerberos = kerberos
        self._slots = threading.BoundedSemaphore(size)
        self._idle: queue.LifoQueue[MetastoreConnection] = queue.LifoQueue()
        wait_ms = timeouts.connect_ms * len(self._addresses) + timeouts.read_ms
        self._wait_timeout = wait_ms / 1000
        self._preferred = 0  # index of the address that last accepted a connection

    def run(self, operation: Callable[[ThriftHiveMetastore.Client], T], subject: str) -> T:
        with self._slot():
            try:
                return self._run_with_retry(operation)
            except Exception as error:
                translated = translate_hms_error(error, subject)
                if self._kerberos is None and "read 0 bytes" in str(error):
                    translated = ServiceUnavailableError(
                        f"{translated} (the metastore closed the connection at the first call, "
                        "as a metastore that requires Kerberos does: see the property "
                        "'kerberos')")
                raise translated from error

    def close(self) -> None:
        self._discard_idle()

    def _run_with_retry(self, operation: Callable[[ThriftHiveMetastore.Client], T]) -> T:
        connection, reused = self._checkout()
        try:
            return self._run_once(connection, operation)
        except Exception as error:
            if not _is_transport_failure(error):
                raise
            self._discard_idle()  # opened against the same, now gone, metastore process
            # A timed-out metastore is not retried: that would double the caller's wait.
            if not reused or _is_timeout(error):
                raise
        return self._run_once(self._open(), operation)

    def _run_once(
        self, connection: MetastoreConnection, operation: Callable[[ThriftHiveMetastore.Client], T]
    ) -> T:
        """Run `operation`; the connection goes back to the pool only if it is still in step
        (a result or an answer from the metastore), otherwise it is closed."""
        try:
            result = operation(connection.client)
        except HMS_ANSWERS:
            self._idle.put(connection)
            raise
        except BaseException:
            connection.close()
            raise
        self._idle.put(connection)
        return result

    @contextmanager
    def _slot(self) -> Iterator[None]:
        if not self._slots.acquire(timeout=self._wait_timeout):
            raise ServiceUnavailableError("every Hive Metastore client is busy; try again later")
        try:
            yield
        finally:
            self._slots.release()

    def _checkout(self) -> tuple[MetastoreConnection, bool]:
        try:
            return self._idle.get_nowait(), True
        except queue.Empty:
            return self._open(), False

    def _open(self) -> MetastoreConnection:
        """A new connection, to the address that last worked first, then the others in order."""
        failures = []
        start = self._preferred
        for offset in range(len(self._addresses)):
            index = (start + offset) % len(self._addresses)
            address = self._addresses[index]
            try:
                connection = MetastoreConnection(address, self._timeouts, self._kerberos)
            except Exception as error:
                failures.append(f"{address.host}:{address.port} ({error})")
                continue
            self._preferred = index
            return connection
        raise ServiceUnavailableError("cannot reach the Hive Metastore at " + ", ".join(failures))

    def _discard_idle(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
