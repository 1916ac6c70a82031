"""The `lance` source on a Spark standalone cluster: a master and two one-core workers as
separate JVMs on 127.0.0.1, the driver in this process (client mode), the adapter on a
dir backend. The executors' Python cannot import this project by itself.

Every test starts with both workers alive and an executor on each (`whole_cluster`): the
test that kills a worker leaves nothing to the tests after it, in any order.
"""

from __future__ import annotations

import datetime
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import lance
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from lance_namespace import ListTablesRequest
from pyspark import cloudpickle
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

import lance_adapter_spark
from lance_adapter_spark.cluster import EXECUTOR_CHECK_SOURCE, check_executor_modules
from lance_adapter_spark.shared_storage import MASTER_ENV
from tests.support import pipeline as pipeline_support
from tests.support.adapter import running_server
from tests.support.common import environment, scratch_directory, skip_unless_ci
from tests.support.glue import REGION, TEST_ACCESS_KEY, TEST_SECRET_KEY, start_moto
from tests.support.spark_cluster import Cluster, can_unshare_mounts, start_cluster

VECTOR = 16
# The executors cannot import this module: its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module", autouse=True)
def _mount_namespace() -> None:
    """Skipped only off CI: under CI (which runs as root) a missing mount namespace fails."""
    if not can_unshare_mounts():
        skip_unless_ci("needs a private mount namespace (root) for one worker")


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with scratch_directory("spark-cluster-") as path:
        yield path


@pytest.fixture(scope="module")
def shared_root(workdir: Path) -> Path:
    return _directory(workdir / "shared-root")


@pytest.fixture(scope="module")
def private_root(workdir: Path) -> Path:
    """A table root that worker 1 sees as a different, empty directory of its own."""
    return _directory(workdir / "private-root")


def _directory(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def moto_s3() -> Iterator[str]:
    """moto's S3 with bucket `lake`, reached by the driver and the executors through the
    environment, as a cluster reaches object storage (instance credentials, endpoint)."""
    server, url = start_moto()
    # The driver's processes; workers inherit it too.
    try:
        with environment(AWS_ENDPOINT_URL=url, AWS_ALLOW_HTTP="true", AWS_REGION=REGION,
                         AWS_DEFAULT_REGION=REGION, AWS_ACCESS_KEY_ID=TEST_ACCESS_KEY,
                         AWS_SECRET_ACCESS_KEY=TEST_SECRET_KEY):
            boto3.client("s3").create_bucket(Bucket="lake")
            yield url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cluster(workdir: Path, private_root: Path, moto_s3: str) -> Iterator[Cluster]:
    hidden = [str(pipeline_support.REPO_ROOT), str(Path.cwd())]
    other = _directory(workdir / "worker-1-own-disk")
    running = start_cluster(
        workdir / "cluster", hidden, workers=2, private_mounts={1: (private_root, other)}
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def spark(cluster: Cluster) -> Iterator[SparkSession]:
    # One SparkContext per process: the suite's local session makes way for this one.
    local = pipeline_support._singletons.pop("spark", None)
    if local is not None:
        local.stop()  # type: ignore[attr-defined]
    # pyspark takes the executors' Python from the driver's PYSPARK_PYTHON (the config
    # spark.pyspark.python reaches it only through spark-submit).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # The driver's own Python workers (planning, commit) import this checkout; the
    # executors' do not (their environment comes from the workers).
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(pipeline_support.REPO_ROOT), os.environ.get("PYTHONPATH")])
    )
    session = (
        SparkSession.builder.master(cluster.master_url)
        .appName("pipeline-cluster-tests")
        .config(map=lance_adapter_spark.session_conf())
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "640m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    # The driver's JVM, and so the Python processes it starts, may predate moto_s3's
    # environment (an earlier module's session started it): Spark's own environment for
    # them carries the storage settings, as it would carry a job's.
    session.sparkContext.environment.update(  # type: ignore[attr-defined]
        {name: value for name, value in os.environ.items() if name.startswith("AWS_")}
    )
    # Registered before anything is shipped, as a user may do: the helpers must still
    # get the package to the executors (and register the source again after it).
    session.dataSource.register(lance_adapter_spark.LanceDataSource)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def whole_cluster(cluster: Cluster, spark: SparkSession) -> None:
    """Both workers alive, each with this session's executor: a killed worker is started again."""
    for worker in cluster.workers:
        if worker.process.poll() is not None:
            worker.start_again()
    context = spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
    deadline = time.monotonic() + 120
    # The driver counts as one block manager, each executor as another.
    while not (cluster.alive_workers() == 2 and context.getExecutorMemoryStatus().size() == 3):
        assert time.monotonic() < deadline, "the cluster did not get its two executors back"
        time.sleep(0.5)  # polling the master: it tells of a registration no other way


@pytest.fixture(scope="module")
def adapter_url(shared_root: Path) -> Iterator[str]:
    with running_server("dir", {"root": str(shared_root)}) as url:
        yield url


@pytest.fixture(scope="module")
def s3_adapter_url(moto_s3: str) -> Iterator[str]:
    with running_server("dir", {"root": "s3://lake/tables"}) as url:
        yield url


def sample(spark: SparkSession, rows: int, partitions: int = 4) -> DataFrame:
    return spark.range(rows, numPartitions=partitions).selectExpr(
        "id",
        "IF(id % 7 = 0, NULL, CONCAT('naïve-€-', id)) AS label",
        "id / 3.0D AS score",
        "TIMESTAMP'2025-03-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS at",
        f"TRANSFORM(SEQUENCE(1, {VECTOR}), i -> CAST(id * i AS FLOAT)) AS embedding",
    )


def data_files(root: Path) -> set[str]:
    return {path.name for path in root.rglob("data/*.lance")}


def test_helpers_ship_the_package_to_executors_that_lack_it(
    spark: SparkSession, adapter_url: str
) -> None:
    context = spark.sparkContext
    # The executors' Python cannot import the project by itself ...
    hidden = context.parallelize([0], 1).map(lambda _: _import_error("backends")).collect()
    assert hidden == ["ModuleNotFoundError"], hidden
    # ... and registration came first (the fixture), yet the helpers work:
    frame = sample(spark, 2000)
    lance_adapter_spark.save_table(frame, "shipped", uri=adapter_url, shared_storage="true")
    read = lance_adapter_spark.read_table(spark, "shipped", uri=adapter_url, shared_storage="true")
    assert read.count() == 2000
    where = context.parallelize([0], 1).map(
        lambda _: __import__("lance_adapter_spark").__file__
    ).collect()
    assert "lance_adapter_spark-" in where[0], where  # imported from the shipped zip


def _import_error(module: str) -> str:
    try:
        __import__(module)
    except ImportError as error:
        return type(error).__name__
    return "imported"


@pytest.mark.parametrize("storage", ["local", "s3"])
def test_round_trip_is_exact_cell_by_cell(
    spark: SparkSession, storage: str, request: pytest.FixtureRequest
) -> None:
    # A local root shared by every worker (declared shared), or the root on S3 (moto),
    # where the executors write to object storage directly.
    url = request.getfixturevalue("adapter_url" if storage == "local" else "s3_adapter_url")
    shared = {"shared_storage": "true"} if storage == "local" else {}
    frame = sample(spark, 60_000, partitions=6)
    vectors = {"vector_columns": f"embedding:{VECTOR}", "max_rows_per_file": 8000}
    lance_adapter_spark.save_table(frame, "round_trip", uri=url, **shared, **vectors)
    expected = pipeline_support.sorted_arrow(frame)
    options = pipeline_support.lance_options(url, "round_trip", **shared)
    actual = pipeline_support.sorted_arrow(spark.read.format("lance").options(**options).load())
    assert pipeline_support.first_difference(expected, actual) is None
    stored = lance.dataset(namespace_client=RestNamespace(uri=url), table_id=["round_trip"])
    assert stored.uri.startswith("s3://" if storage == "s3" else "/")
    assert len(stored.get_fragments()) >= 6
    # On a cluster the source keeps Spark's own Python daemon (the launcher is local-only).
    daemons = pipeline_support.python_daemons(spark)
    assert any(
        command.endswith("-m pyspark.daemon pyspark.sql.worker.create_data_source")
        for command in daemons
    ), daemons
    assert not any("lance_adapter_spark.worker_daemon" in command for command in daemons), daemons


def test_a_local_root_on_a_cluster_is_refused_unless_declared_shared(
    spark: SparkSession, adapter_url: str, shared_root: Path
) -> None:
    with pytest.raises(
        lance_adapter_spark.LanceSourceError, match="a local path, but Spark runs on"
    ):
        lance_adapter_spark.save_table(sample(spark, 100), "not_declared", uri=adapter_url)
    # A table of its own (written by pylance), so that only the root can be what is refused.
    pipeline_support.write_with_pylance(adapter_url, "local_only", pa.table({"id": [1, 2]}))
    with pytest.raises(lance_adapter_spark.LanceSourceError, match="shared_storage=true"):
        lance_adapter_spark.read_table(spark, "local_only", uri=adapter_url)
    with pytest.raises(AnalysisException, match="a local path, but Spark runs on"):  # plain
        options = pipeline_support.lance_options(adapter_url, "local_only")
        spark.read.format("lance").options(**options).load().count()
    assert not (shared_root / "not_declared.lance").exists()  # its declaration undone
    assert "not_declared" not in str(
        RestNamespace(uri=adapter_url).list_tables(ListTablesRequest(id=[], include_declared=True))
    )


def test_missing_native_dependencies_fail_once_with_what_to_install(spark: SparkSession) -> None:
    check_executor_modules(spark)  # pyarrow, pylance, lance-namespace are there
    wanted = {"lance": "pylance", "no_such_module_xq": "no-such-package-xq"}
    with pytest.raises(
        lance_adapter_spark.LanceSourceError, match="cannot import no_such_module_xq"
    ) as raised:
        check_executor_modules(spark, wanted)
    message = str(raised.value)
    assert "cannot import no_such_module_xq" in message
    assert "pip install no-such-package-xq" in message and "spark.archives" in message


def test_the_executor_check_starts_the_python_that_reads_use(
    spark: SparkSession, adapter_url: str
) -> None:
    """Spark keys an executor's Python daemon on the function's Python and environment: the
    check, a read registered as the `lance` source is, starts the daemon its reads use."""
    lance_adapter_spark.register(spark)
    manager = spark._jsparkSession.sessionState().dataSourceManager()  # type: ignore[union-attr]
    check, source = (
        manager.lookupDataSource(name).dataSourceCls() for name in (EXECUTOR_CHECK_SOURCE, "lance")
    )
    assert check.pythonExec() == source.pythonExec()
    assert dict(check.envVars()) == dict(source.envVars())
    assert dict(source.envVars())[MASTER_ENV] == spark.sparkContext.master
    started = _executor_daemons(spark)
    assert len(started) >= 2, started  # the check ran on both executors
    pipeline_support.write_with_pylance(adapter_url, "first_read", pa.table({"id": [1, 2, 3]}))
    helper = lance_adapter_spark.read_table(
        spark, "first_read", uri=adapter_url, shared_storage="true"
    )
    assert sorted(row.id for row in helper.collect()) == [1, 2, 3]
    options = pipeline_support.lance_options(adapter_url, "first_read", shared_storage="true")
    plain = spark.read.format("lance").options(**options).load()
    assert sorted(row.id for row in plain.collect()) == [1, 2, 3]
    assert _executor_daemons(spark) == started  # the reads started no daemon of their own


def _executor_daemons(spark: SparkSession) -> set[int]:
    """The Python daemons the executors of this application started (from /proc)."""
    processes = {}
    for entry in Path("/proc").iterdir():
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # not a process, or one that ended meanwhile
        processes[entry.name] = (parent, [a.decode(errors="replace") for a in arguments])
    application = spark.sparkContext.applicationId
    executors = {int(pid) for pid, (_, arguments) in processes.items()
                 if any(a.endswith("CoarseGrainedExecutorBackend") for a in arguments)
                 and application in arguments}
    return {int(pid) for pid, (parent, arguments) in processes.items()
            if parent in executors and "pyspark.daemon" in arguments}


def test_files_the_driver_cannot_see_are_never_committed(
    spark: SparkSession, private_root: Path, workdir: Path
) -> None:
    # The user declares a root shared that worker 1 sees as its own private directory.
    options = {"impl": "dir", "properties": {"root": str(private_root)}}
    with pytest.raises(
        lance_adapter_spark.LanceSourceError, match=r"not at .* as the driver sees it"
    ):
        lance_adapter_spark.save_table(
            sample(spark, 40_000, partitions=8), "unshared", shared_storage="true", **options
        )
    # Nothing committed: the table is gone (its declaration undone) ...
    with pytest.raises(lance_adapter_spark.LanceSourceError, match="does not exist"):
        lance_adapter_spark.read_table(spark, "unshared", shared_storage="true", **options)
    # ... no data file is left where the driver sees, and the other worker really wrote
    # files into its private directory, which is why the check fired.
    assert data_files(private_root / "unshared.lance") == set()
    own_disk = workdir / "worker-1-own-disk" / "unshared.lance"
    assert data_files(own_disk), "worker 1 wrote no files: nothing was tested"


def test_a_worker_killed_mid_write_leaves_the_rows_exact(
    spark: SparkSession, cluster: Cluster, adapter_url: str, shared_root: Path
) -> None:
    rows, partitions = 16_000, 8
    # Every 1,000th row sleeps 0.4 s in the JVM: tasks last long enough to kill a worker.
    frame = (
        sample(spark, rows, partitions=partitions)
        .selectExpr(
            "*", "IF(id % 1000 = 0, java_method('java.lang.Thread', 'sleep', 400L), NULL) AS s"
        )
        .drop("s")
    )
    tracker = spark.sparkContext.statusTracker()
    killed = threading.Event()
    killed_in: list[int] = []

    def kill_when_tasks_run() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            # The write's stage (a first job on the cluster also runs a 2-task check first).
            running = [s for s in stages if s and s.numTasks == partitions
                       and s.numCompletedTasks >= 1 and s.numActiveTasks]
            if running:
                killed_in.append(running[0].stageId)
                cluster.workers[0].kill()
                killed.set()
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_when_tasks_run)
    killer.start()
    lance_adapter_spark.save_table(frame, "killed", uri=adapter_url, shared_storage="true",
                        max_rows_per_file=1000)  # fmt: skip
    killer.join()
    assert killed.is_set(), "the write ended before a worker could be killed"
    stage = tracker.getStageInfo(killed_in[0])
    assert stage.numFailedTasks >= 1, "no task was lost with the worker: nothing was retried"
    assert stage.numCompletedTasks >= partitions  # every partition, lost ones on the other worker
    stored = lance.dataset(namespace_client=RestNamespace(uri=adapter_url), table_id=["killed"])
    table = stored.to_table().sort_by("id")
    assert table.column("id").to_pylist() == list(range(rows))
    assert table.column("at")[5].as_py() == datetime.datetime(
        2025, 3, 1, 0, 0, 5, tzinfo=datetime.UTC
    )
    committed = {f.path for fragment in stored.get_fragments() for f in fragment.data_files()}
    assert data_files(shared_root / "killed.lance") == committed
    assert table.column("embedding")[5].as_py() == [5.0 * i for i in range(1, VECTOR + 1)]
