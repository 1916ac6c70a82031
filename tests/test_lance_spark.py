"""lance-spark (the JVM Spark connector for Lance, `org.lance:lance-spark-3.5_2.12:0.4.0`) as
a client of this server: namespaces, tables with a vector column, inserts and filtered
selects through `LanceNamespaceSparkCatalog` with `impl=rest`, on a local Spark and on a
two-worker standalone cluster, against the adapter on `dir` and on `glue` (moto); pylance
reads what lance-spark wrote and the other way round.

lance-spark exists only for Spark 3.5 / Scala 2.12, so its Spark is a pyspark 3.5 of its own
(`tests/support/lance_spark.py`): a child process with one session per kind (local, cluster)
for the whole module, and a 3.5 cluster (the suite's cluster is Spark 4 and cannot run it).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from lance_namespace import (
    CreateNamespaceRequest,
    DescribeTableRequest,
    ListNamespacesRequest,
    ListTablesRequest,
    RegisterTableRequest,
)

from tests.support.adapter import running_server
from tests.support.common import scratch_directory
from tests.support.doc_blocks import blocks_run_by
from tests.support.glue import glue_properties, start_moto
from tests.support.lance_spark import SparkDriver, lance_spark_driver, pyspark35_cluster

DIMENSION = 4
BACKENDS = ("dir", "glue")
_names = itertools.count()


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with scratch_directory("lance-spark-") as path:
        yield path


@pytest.fixture(scope="module")
def urls(workdir: Path) -> Iterator[dict[str, str]]:
    """The adapter on a dir backend and on a Glue backend (moto), each with a local root;
    the Glue one with an external location, `<workdir>/legacy`, for every namespace."""
    moto, moto_url = start_moto()
    glue = glue_properties(moto_url, root=str(workdir / "glue-root"))
    external = {str(workdir / "legacy"): ""}
    try:
        catalogs = {"lake": {"impl": "dir", "root": str(workdir / "lake-root")},
                    "aws": {"impl": "glue", **glue_properties(
                        moto_url, root=str(workdir / "aws-root"))}}
        with running_server("dir", {"root": str(workdir / "dir-root")}) as dir_url, \
                running_server("glue", glue, external_locations=external) as glue_url, \
                running_server(catalogs=catalogs) as federated_url:  # fmt: skip
            yield {"dir": dir_url, "glue": glue_url, "federated": federated_url}
    finally:
        moto.stop()


@pytest.fixture(scope="module")
def sessions(workdir: Path, urls: dict[str, str]) -> Iterator[dict[str, SparkDriver]]:
    """The local session, and the cluster's: each made when a test first needs it."""
    with _LazySessions(workdir, urls) as lazy:
        yield lazy


class _LazySessions(dict):
    """`sessions["local"]`, `sessions["cluster"]`: made on first use, closed on exit."""

    def __init__(self, workdir: Path, urls: dict[str, str]) -> None:
        super().__init__()
        self._workdir, self._urls, self._cluster = workdir, urls, None

    def __missing__(self, kind: str) -> SparkDriver:
        log = self._workdir / f"driver-{kind}.log"
        if kind == "local":
            driver = lance_spark_driver("local[2]", self._urls, log)
        else:
            started = pyspark35_cluster(self._workdir / "cluster")
            cluster = started.__enter__()
            self._cluster = started
            driver = lance_spark_driver(cluster.master_url, self._urls, log, {
                "spark.executor.memory": "640m", "spark.executor.cores": "1",
                "spark.cores.max": "2"})  # fmt: skip
            self[kind] = driver  # closed at the end even if the executors never come
            deadline = time.monotonic() + 90
            while driver.executors() < 2 and time.monotonic() < deadline:
                time.sleep(0.2)  # executors register with the driver after it starts
        self[kind] = driver
        return driver

    def __enter__(self) -> _LazySessions:
        return self

    def __exit__(self, *_: object) -> None:
        for driver in self.values():
            driver.close()
        if self._cluster is not None:
            self._cluster.__exit__(None, None, None)


def fresh_namespace(spark: SparkDriver, catalog: str) -> str:
    name = f"ls_{next(_names)}"
    spark.sql(f"CREATE NAMESPACE {catalog}.{name}")
    return name


def create_items(spark: SparkDriver, catalog: str, namespace: str, table: str = "items") -> str:
    qualified = f"{catalog}.{namespace}.{table}"
    spark.sql(
        f"CREATE TABLE {qualified} (id BIGINT NOT NULL, name STRING, price DOUBLE, "
        f"embedding ARRAY<FLOAT> NOT NULL) "
        f"TBLPROPERTIES ('embedding.arrow.fixed-size-list.size' = '{DIMENSION}')"
    )
    return qualified


@pytest.mark.parametrize("catalog", ["lake", "aws"])
def test_a_server_of_several_catalogs_serves_each_one(
    sessions: dict[str, SparkDriver], urls: dict[str, str], catalog: str
) -> None:
    """One Spark catalog on a server of several: each of its catalogs is a top-level
    namespace, whose namespaces hold the tables lance-spark writes and reads."""
    spark = sessions["local"]
    namespace = f"ls_{next(_names)}"
    spark.sql(f"CREATE NAMESPACE federated.{catalog}.{namespace}")
    table = create_items(spark, f"federated.{catalog}", namespace)
    spark.sql(f"INSERT INTO {table} SELECT id, 'row', 1.0, array(0.0f, 0.0f, 0.0f, 0.0f) "
              "FROM range(0, 50, 1, 2)")
    assert spark.sql(f"SELECT count(*) AS n FROM {table}") == [{"n": 50}]
    assert dataset(urls["federated"], catalog, namespace, "items").count_rows() == 50


def vector(i: int) -> list[float]:
    return [float(i), float(i) / 2, -float(i), 0.25]


def dataset(url: str, *table_id: str) -> lance.LanceDataset:
    return lance.dataset(namespace_client=RestNamespace(uri=url), table_id=list(table_id))


@pytest.mark.parametrize("backend", BACKENDS)
def test_namespace_and_vector_table_are_the_servers(
    sessions: dict[str, SparkDriver], urls: dict[str, str], backend: str
) -> None:
    spark, url = sessions["local"], urls[backend]
    namespace = fresh_namespace(spark, backend)
    server = RestNamespace(uri=url)
    assert namespace in server.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert {"namespace": namespace} in spark.sql(f"SHOW NAMESPACES IN {backend}")

    create_items(spark, backend, namespace)
    assert list(server.list_tables(ListTablesRequest(id=[namespace])).tables) == ["items"]
    assert spark.sql(f"SHOW TABLES IN {backend}.{namespace}") == [
        {"namespace": namespace, "tableName": "items", "isTemporary": False}
    ]
    schema = dataset(url, namespace, "items").schema
    assert schema.field("embedding").type == pa.list_(pa.float32(), DIMENSION)
    assert schema.field("id").type == pa.int64() and not schema.field("id").nullable
    assert schema.names == ["id", "name", "price", "embedding"]


@pytest.mark.parametrize("kind", ["local", "cluster"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_insert_and_filtered_select(
    sessions: dict[str, SparkDriver], urls: dict[str, str], backend: str, kind: str
) -> None:
    spark = sessions[kind]
    if kind == "cluster":  # the work below runs in the two workers' executors
        assert spark.executors() == 2
    namespace = fresh_namespace(spark, backend)
    table = create_items(spark, backend, namespace)
    values = ", ".join(
        f"({i}, '{name}', {i * 1.5}, array({', '.join(map(str, vector(i)))}))"
        for i, name in enumerate(["apple", "banana", "blueberry", "cherry", "bean", "date"])
    )
    spark.sql(f"INSERT INTO {table} VALUES {values}")

    assert spark.sql(
        f"SELECT id, name, embedding FROM {table} "
        "WHERE price > 1.0 AND name LIKE 'b%' ORDER BY id"
    ) == [{"id": 1, "name": "banana", "embedding": vector(1)},
          {"id": 2, "name": "blueberry", "embedding": vector(2)},
          {"id": 4, "name": "bean", "embedding": vector(4)}]  # fmt: skip
    assert spark.sql(f"SELECT id FROM {table} WHERE id IN (0, 5, 9) ORDER BY id") == [
        {"id": 0}, {"id": 5}]  # fmt: skip
    assert spark.sql(f"SELECT id FROM {table} WHERE embedding[1] >= 1.5 ORDER BY id") == [
        {"id": 3}, {"id": 4}, {"id": 5}]  # fmt: skip

    spark.sql(f"INSERT INTO {table} SELECT id + 100, 'more', 0.0, "
              f"array(0.0f, 0.0f, 0.0f, 0.0f) FROM range(0, 1000, 1, 4)")  # fmt: skip
    assert spark.sql(f"SELECT count(*) AS n, sum(id) AS total FROM {table}") == [
        {"n": 1006, "total": 15 + sum(range(100, 1100))}]  # fmt: skip
    written = dataset(urls[backend], namespace, "items")
    assert written.count_rows() == 1006
    assert written.count_rows("name = 'more'") == 1000


@pytest.mark.parametrize("kind", ["local", "cluster"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_pylance_reads_what_lance_spark_wrote(
    sessions: dict[str, SparkDriver], urls: dict[str, str], backend: str, kind: str
) -> None:
    spark = sessions[kind]
    namespace = fresh_namespace(spark, backend)
    table = create_items(spark, backend, namespace)
    spark.sql(
        f"INSERT INTO {table} SELECT id, concat('n', id), id * 0.5, "
        "array(CAST(id AS FLOAT), CAST(id / 2 AS FLOAT), CAST(-id AS FLOAT), 0.25f) "
        "FROM range(0, 3000, 1, 3)"
    )
    read = dataset(urls[backend], namespace, "items").to_table().sort_by("id")
    assert read.schema.field("embedding").type == pa.list_(pa.float32(), DIMENSION)
    assert read.column("id").to_pylist() == list(range(3000))
    assert read.column("name").to_pylist()[:3] == ["n0", "n1", "n2"]
    assert read.column("price").to_pylist()[2999] == 1499.5
    assert read.column("embedding").to_pylist()[7] == vector(7)
    assert len(dataset(urls[backend], namespace, "items").get_fragments()) >= 3


@pytest.mark.parametrize("kind", ["local", "cluster"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_lance_spark_reads_what_pylance_wrote(
    sessions: dict[str, SparkDriver], urls: dict[str, str], backend: str, kind: str
) -> None:
    spark, url = sessions[kind], urls[backend]
    namespace = f"ls_{next(_names)}"
    client = RestNamespace(uri=url)
    client.create_namespace(CreateNamespaceRequest(id=[namespace]))
    rows = 50
    data = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "label": [f"l{i % 5}" for i in range(rows)],
        "embedding": pa.FixedSizeListArray.from_arrays(
            pa.array([x for i in range(rows) for x in vector(i)], pa.float32()), DIMENSION),
    })  # fmt: skip
    lance.write_dataset(data, namespace_client=client, table_id=[namespace, "from_pylance"],
                        mode="create")
    table = f"{backend}.{namespace}.from_pylance"

    assert spark.sql(f"SELECT id, label, embedding FROM {table} "
                     "WHERE label = 'l3' AND id < 20 ORDER BY id") == [
        {"id": i, "label": "l3", "embedding": vector(i)} for i in (3, 8, 13, 18)]  # fmt: skip
    assert spark.sql(f"SELECT count(*) AS n FROM {table} WHERE embedding[0] >= 40") == [
        {"n": 10}]  # fmt: skip
    described = {row["col_name"]: row["data_type"] for row in spark.sql(f"DESCRIBE {table}")}
    assert described["embedding"] == "array<float>"


@pytest.mark.parametrize("backend", BACKENDS)
def test_drop_table_deregisters_and_purge_deletes(
    sessions: dict[str, SparkDriver], urls: dict[str, str], backend: str
) -> None:
    """lance-spark's DROP TABLE is DeregisterTable (the data stays, as for Spark's external
    tables), DROP TABLE ... PURGE is DropTable (the data goes); DROP NAMESPACE reaches it."""
    spark, server = sessions["local"], RestNamespace(uri=urls[backend])
    namespace = fresh_namespace(spark, backend)
    locations = {}
    for table in ("kept", "purged"):
        create_items(spark, backend, namespace, table)
        spark.sql(f"INSERT INTO {backend}.{namespace}.{table} "
                  "VALUES (1, 'a', 1.0, array(1.0f, 2.0f, 3.0f, 4.0f))")
        described = server.describe_table(DescribeTableRequest(id=[namespace, table]))
        locations[table] = Path(described.location.removeprefix("file://"))
        assert (locations[table] / "_versions").is_dir()

    spark.sql(f"DROP TABLE {backend}.{namespace}.kept")
    spark.sql(f"DROP TABLE {backend}.{namespace}.purged PURGE")
    assert list(server.list_tables(ListTablesRequest(id=[namespace])).tables) == []
    assert spark.sql(f"SHOW TABLES IN {backend}.{namespace}") == []
    assert lance.dataset(str(locations["kept"])).count_rows() == 1
    assert not locations["purged"].exists()
    spark.sql(f"DROP NAMESPACE {backend}.{namespace}")
    assert namespace not in server.list_namespaces(ListNamespacesRequest(id=[])).namespaces


def test_lance_spark_reads_a_table_registered_in_an_external_location(
    sessions: dict[str, SparkDriver], urls: dict[str, str], workdir: Path
) -> None:
    """Existing data outside the server's root, registered through the server (Glue), is
    read by lance-spark through the server like any table."""
    spark, client = sessions["local"], RestNamespace(uri=urls["glue"])
    namespace = f"ls_{next(_names)}"
    client.create_namespace(CreateNamespaceRequest(id=[namespace]))
    location = str(workdir / "legacy" / f"{namespace}_payroll.lance")
    lance.write_dataset(pa.table({"id": pa.array(range(6), pa.int64()),
                                  "pay": [float(i) * 10 for i in range(6)]}), location)
    client.register_table(RegisterTableRequest(id=[namespace, "payroll"], location=location))
    assert spark.sql(f"SELECT id, pay FROM glue.{namespace}.payroll WHERE id >= 4 ORDER BY id") == [
        {"id": 4, "pay": 40.0}, {"id": 5, "pay": 50.0}]


def test_the_documented_job_runs_on_the_servers_root(sessions: dict[str, SparkDriver]) -> None:
    """docs/lance-spark.md's job.py, its statements as written, on the catalog `lance` the
    page configures: here the session's catalog of the dir server."""
    (job,) = blocks_run_by("tests/test_lance_spark.py",
                           "test_the_documented_job_runs_on_the_servers_root")
    statements = re.findall(r'spark\.sql\("([^"]+)"\)', job.code)
    assert len(statements) == 4 and all(" lance." in statement for statement in statements)
    answers = [sessions["local"].sql(statement.replace(" lance.", " dir."))
               for statement in statements]
    assert answers[-1] == [{"count(1)": 2}]
