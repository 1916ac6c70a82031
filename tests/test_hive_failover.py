"""Metastore failures: unreachable, hung, failover between URIs, and a restart mid-suite.

The restart test uses its own metastore instance (same port and Derby directory across the
restart) so that the shared one is never disturbed.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import lance_namespace as ln
import pytest
from lance.namespace import RestNamespace

from backends.hive import Hive2Namespace, Hive3Namespace
from tests.support.adapter import running_server
from tests.support.common import free_port, unique
from tests.support.hive import HiveMetastoreProcess, metastore_client

FAST_TIMEOUTS = {"client.connect-timeout": "2", "client.read-timeout": "2"}



@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A port that accepts TCP connections (kernel backlog) but never answers."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


@pytest.fixture(scope="module")
def restartable_metastore(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[HiveMetastoreProcess]:
    metastore = HiveMetastoreProcess(tmp_path_factory.mktemp("restartable-metastore"))
    metastore.start()
    yield metastore
    metastore.stop()


UNREACHABLE = "cannot reach the Hive Metastore at 127.0.0.1:"  # nothing accepts the connection
UNAVAILABLE = "Hive Metastore is unavailable: "  # a connection that fails or never answers


def elapsed_raising(error: type[Exception], why: str, call) -> float:
    started = time.monotonic()
    with pytest.raises(error, match=why):
        call()
    return time.monotonic() - started


@pytest.mark.parametrize("namespace_class", [Hive2Namespace, Hive3Namespace])
def test_nothing_listening_gives_17_at_once(namespace_class: type) -> None:
    namespace = namespace_class(uri=f"thrift://127.0.0.1:{free_port()}", **FAST_TIMEOUTS)
    took = elapsed_raising(
        ln.ServiceUnavailableError, UNREACHABLE,
        lambda: namespace.list_namespaces(ln.ListNamespacesRequest()),
    )
    assert took < 2


def test_silent_metastore_gives_17_within_the_read_timeout(silent_listener: int) -> None:
    namespace = Hive2Namespace(uri=f"thrift://127.0.0.1:{silent_listener}", **FAST_TIMEOUTS)
    took = elapsed_raising(
        ln.ServiceUnavailableError, UNAVAILABLE,
        lambda: namespace.describe_table(ln.DescribeTableRequest(id=["db", "t"])),
    )
    assert 1.5 < took < 4


def test_busy_pool_gives_17_instead_of_waiting_forever(silent_listener: int) -> None:
    import threading

    namespace = Hive2Namespace(
        uri=f"thrift://127.0.0.1:{silent_listener}", **{"client.pool-size": "1"},
        **FAST_TIMEOUTS,
    )
    errors: list[Exception] = []

    def call() -> None:
        try:
            namespace.list_namespaces(ln.ListNamespacesRequest())
        except Exception as error:
            errors.append(error)

    started = time.monotonic()
    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert time.monotonic() - started < 15
    assert len(errors) == 3
    assert all(isinstance(error, ln.ServiceUnavailableError) for error in errors)


def test_failover_to_the_next_metastore_uri(hive_metastore: HiveMetastoreProcess) -> None:
    dead = f"thrift://127.0.0.1:{free_port()}"
    namespace = Hive2Namespace(uri=f"{dead}, {hive_metastore.uri}", **FAST_TIMEOUTS)
    assert "default" in namespace.list_namespaces(ln.ListNamespacesRequest()).namespaces


def test_adapter_recovers_after_the_metastore_restarts(
    restartable_metastore: HiveMetastoreProcess, tmp_path: Path
) -> None:
    properties = {"uri": restartable_metastore.uri, "root": str(tmp_path), "client.pool-size": "2",
                  **FAST_TIMEOUTS}
    database = unique("restart")
    # Uncached: every call must reach the metastore, so its outage shows.
    with running_server("hive2", properties, metadata_cache=False) as url:
        client = RestNamespace(uri=url)
        client.create_namespace(ln.CreateNamespaceRequest(id=[database]))
        client.declare_table(ln.DeclareTableRequest(id=[database, "before"]))
        # Fill the pool with connections that the restart will break.
        for _ in range(3):
            client.list_tables(ln.ListTablesRequest(id=[database]))

        restartable_metastore.stop()
        for call in (
            lambda: client.describe_table(ln.DescribeTableRequest(id=[database, "before"])),
            lambda: client.list_tables(ln.ListTablesRequest(id=[database])),
            lambda: client.declare_table(ln.DeclareTableRequest(id=[database, "during"])),
        ):
            why = f"{UNREACHABLE}|{UNAVAILABLE}"  # broken pooled connections, then refusals
            assert elapsed_raising(ln.ServiceUnavailableError, why, call) < 5

        restartable_metastore.start()
        assert client.list_tables(ln.ListTablesRequest(id=[database])).tables == ["before"]
        client.declare_table(ln.DeclareTableRequest(id=[database, "after"]))
        described = client.describe_table(ln.DescribeTableRequest(id=[database, "after"]))
        assert described.location == f"{tmp_path}/{database}.db/after"

    with metastore_client(restartable_metastore.port) as raw:
        assert sorted(raw.get_all_tables(database)) == ["after", "before"]
