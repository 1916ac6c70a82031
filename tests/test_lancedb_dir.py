"""LanceDB as a client of the adapter on the directory backend: the remote client and the
namespace connection, with and without pushdown, each through a table's whole life."""

from __future__ import annotations

import re

import httpx
import lancedb
import pytest

from tests.support.lancedb_lifecycle import DIMENSION, ROWS, run_lifecycle, sample_rows


def test_lancedb_remote_client_runs_a_tables_whole_life(dir_server: str) -> None:
    db = lancedb.connect("db://lance", api_key="any", host_override=dir_server, region="local")
    run_lifecycle(db, [])


@pytest.mark.parametrize("pushdown", [None, ["QueryTable", "CreateTable"]])
def test_lancedb_namespace_connection_runs_a_tables_whole_life(
    dir_server: str, pushdown: list[str] | None
) -> None:
    options = {"namespace_client_pushdown_operations": pushdown} if pushdown else {}
    db = lancedb.connect_namespace("rest", {"uri": dir_server}, **options)
    db.create_namespace(["shop"])
    run_lifecycle(db, ["shop"])


def test_lancedb_remote_client_lists_the_roots_tables_beside_namespaced_ones(
    dir_server: str,
) -> None:
    db = lancedb.connect("db://lance", api_key="any", host_override=dir_server, region="local")
    db.create_namespace(["team"])
    db.create_table("inner", sample_rows(), namespace_path=["team"])
    db.create_table("outer", sample_rows())
    db.create_table("other", sample_rows())

    assert list(db.table_names()) == ["other", "outer"]
    assert list(db.table_names(limit=1)) == ["other"]
    assert list(db.table_names(page_token="other")) == ["outer"]
    assert list(db.table_names(namespace_path=["team"])) == ["inner"]
    # A query without a limit (k = isize::MAX) answers every row, as on LanceDB Cloud.
    assert len(db.open_table("outer").search().to_list()) == ROWS


def test_lancedb_catalog_databases_are_child_namespaces_of_the_root(dir_server: str) -> None:
    catalog = lancedb.connect_catalog(dir_server, api_key="any")
    assert catalog.list_databases().databases == []
    analytics = catalog.create_database("analytics", exist_ok=True)
    analytics.create_table("events", sample_rows())
    root = lancedb.connect("db://lance", api_key="any", host_override=dir_server, region="local")
    root.create_table("outer", sample_rows())

    assert catalog.list_databases().databases == ["analytics"]
    assert list(catalog.connect_database("analytics").table_names()) == ["events"]
    assert list(root.table_names()) == ["outer"]
    assert list(root.table_names(namespace_path=["analytics"])) == ["events"]
    # The database named in the URI is the namespace of that name, the same as the catalog's.
    named = lancedb.connect("db://analytics", api_key="any", host_override=dir_server,
                            region="local")
    assert named.open_table("events").count_rows() == ROWS
    with pytest.raises(RuntimeError, match="not empty"):  # LanceDB's HttpError
        catalog.drop_database("analytics")
    named.drop_table("events")
    catalog.drop_database("analytics")
    assert catalog.list_databases().databases == []


MISSING_DATABASE = ("LanceDB database 'newcomer' does not exist on this server: db://lance "
                    "is the root database (setting lancedb_root_database); create this one "
                    "with lancedb.connect_catalog(<this server's URL>, api_key=...)"
                    ".create_database('newcomer')")


@pytest.mark.parametrize("root", ["fresh", "holding a database"])
def test_a_database_that_does_not_exist_is_named_with_how_to_create_it(
    dir_server: str, root: str
) -> None:
    if root == "holding a database":
        lancedb.connect_catalog(dir_server, api_key="any").create_database("other")
    db = lancedb.connect("db://newcomer", api_key="any", host_override=dir_server,
                         region="local")
    calls = {"list_tables": db.list_tables, "open_table": lambda: db.open_table("t"),
             "create_table": lambda: db.create_table("t", sample_rows())}
    for call in calls.values():  # each says it, in the client's own exception
        with pytest.raises(Exception, match=re.escape(MISSING_DATABASE)):
            call()
    lancedb.connect_catalog(dir_server, api_key="any").create_database("newcomer")
    with pytest.raises(ValueError, match="Table 't' was not found"):  # as embedded says it
        db.open_table("t")
    assert db.create_table("t", sample_rows()).count_rows() == ROWS


def test_lancedb_reads_a_missing_thing_as_embedded_raises_it(dir_server: str) -> None:
    """LanceDB's client reads a 404 as "table not found": a missing column or index is a 400
    for it (the spec's 404 elsewhere), except index_stats of a missing index, a 404 the client
    returns as None."""
    db = lancedb.connect("db://lance", api_key="any", host_override=dir_server, region="local")
    table = db.create_table("statuses", sample_rows())
    assert table.index_stats("no_such_idx") is None
    lancedb_header = {"x-lancedb-database": "lance"}
    vector = [0.0] * DIMENSION
    for headers, body_vector, status in (({}, {"single_vector": vector}, 404),
                                         (lancedb_header, vector, 400)):
        query = {"k": 2, "vector": body_vector, "vector_column": "nope"}
        missing_column = httpx.post(f"{dir_server}/v1/table/statuses/query/", json=query,
                                    headers=headers, timeout=30)
        assert (missing_column.status_code, missing_column.json()["code"]) == (status, 12)
    stats = httpx.post(f"{dir_server}/v1/table/statuses/index/no_such_idx/stats/", json={},
                       headers=lancedb_header, timeout=30)
    assert (stats.status_code, stats.json()["code"]) == (404, 6)


def test_lancedb_calls_not_served_say_why(dir_server: str) -> None:
    db = lancedb.connect("db://lance", api_key="any", host_override=dir_server, region="local")
    table = db.create_table("served", sample_rows())
    calls = {
        "prewarm_data": lambda: table.prewarm_data(["id"]),
        "listing and dropping materialized views": db.list_materialized_views,
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match=f"LanceDB's {name} is not served here"):
            call()
    for path in ("/v1/namespace/$/view/list", "/v1/namespace/$/secret/list"):
        answer = httpx.get(f"{dir_server}{path}")
        assert (answer.status_code, answer.json()["code"]) == (406, 0)
        assert "views, secrets or functions is not served here" in answer.json()["error"]
