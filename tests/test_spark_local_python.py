"""The Python a local session starts for the `lance` source: pyspark from its cached byte
code (lance_adapter_spark.worker_daemon, through lance_adapter_spark.local_python's
launcher), and the private directory the launcher and the package zip live in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from importlib.machinery import PathFinder
from pathlib import Path

import pyspark
import pytest

from lance_adapter_spark import cluster, local_python
from lance_adapter_spark.options import LanceSourceError
from lance_adapter_spark.worker_daemon import prefer_installed
from tests.support.common import run_python
from tests.support.pipeline import REPO_ROOT

SPARK_LIB = Path(pyspark.__file__).parent / "python" / "lib"


def spark_zips() -> list[str]:
    return sorted(str(path) for path in SPARK_LIB.glob("*.zip"))


def test_the_daemon_puts_installed_pyspark_and_py4j_ahead_of_their_zips() -> None:
    zips = spark_zips()
    assert [Path(z).name.split("-")[0] for z in zips] == ["py4j", "pyspark.zip"]
    path = [*zips, *(entry for entry in sys.path if entry not in zips)]
    assert Path(PathFinder.find_spec("pyspark", path).origin).parents[1].name == "pyspark.zip"

    reordered = prefer_installed(path)

    assert reordered[-2:] == zips
    found = PathFinder.find_spec("pyspark", reordered)
    assert Path(found.origin) == Path(pyspark.__file__)  # the installed package, byte-cached
    assert sorted(reordered) == sorted(path)


def test_a_zip_of_another_version_keeps_its_place(tmp_path: Path) -> None:
    other = tmp_path / "pyspark.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("pyspark/version.py", "__version__: str = '3.0.0'\n")
    broken = tmp_path / "py4j-0.0-src.zip"
    broken.write_bytes(b"not a zip")
    path = [str(other), str(broken), *sys.path]

    assert prefer_installed(path) == path


def test_the_launcher_swaps_only_the_daemon(tmp_path: Path) -> None:
    echo = tmp_path / "python"
    echo.write_text('#!/bin/sh\necho "$@"\n')
    echo.chmod(0o755)
    launcher = tmp_path / "launcher"
    launcher.write_text(
        local_python.LAUNCHER.format(python=echo, daemon=local_python.WORKER_DAEMON)
    )
    launcher.chmod(0o755)

    def run(*arguments: str) -> str:
        return subprocess.run([launcher, *arguments], capture_output=True, text=True).stdout

    assert (
        run("-m", "pyspark.daemon", "pyspark.worker")
        == "-m lance_adapter_spark.worker_daemon pyspark.worker\n"
    )
    assert run("-m", "pyspark.worker") == "-m pyspark.worker\n"
    assert run("-c", "print(1)") == "-c print(1)\n"


def test_no_launcher_for_a_python_without_this_package(tmp_path: Path) -> None:
    elsewhere = tmp_path / "python"
    elsewhere.write_text("#!/bin/sh\necho /somewhere/else/lance_adapter_spark/worker_daemon.py\n")
    elsewhere.chmod(0o755)

    assert local_python.launcher_for(str(tmp_path / "missing")) is None
    assert local_python.launcher_for(str(elsewhere)) is None
    assert local_python.imports_this_package(sys.executable)


def test_the_launcher_runs_this_python_and_lives_in_the_private_directory() -> None:
    launcher = Path(local_python.launcher_for(sys.executable))

    assert launcher.parent == cluster.private_directory()
    assert launcher.stat().st_mode & 0o777 == 0o755
    answer = subprocess.run(
        [launcher, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True
    )
    assert answer.stdout.strip() == sys.executable


@pytest.mark.parametrize("kind", ["shared", "foreign link"])
def test_a_private_directory_others_could_write_to_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(cluster.tempfile, "gettempdir", lambda: str(tmp_path))
    directory = tmp_path / f"lance-pipeline-{os.getuid()}"
    if kind == "shared":
        directory.mkdir()
        directory.chmod(0o777)
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        directory.symlink_to(tmp_path / "elsewhere")

    with pytest.raises(LanceSourceError, match="this user's alone"):
        cluster.package_zip()
    assert not any(directory.iterdir())


def test_a_new_private_directory_is_made_0700(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster.tempfile, "gettempdir", lambda: str(tmp_path))

    made = cluster.package_zip()

    assert made.parent == tmp_path / f"lance-pipeline-{os.getuid()}"
    assert made.parent.stat().st_mode & 0o777 == 0o700
    assert zipfile.ZipFile(made).getinfo("lance_adapter_spark/worker_daemon.py")


# In a fresh interpreter: a session of its own, whose daemons are only those its source
# started (the suite's shared session keeps the daemons of earlier tests, such as the plain
# `pyspark.daemon` that runs a Python UDF's `pyspark.worker`).
LOCAL_SESSION = """
import json, sys
from pyspark.sql import SparkSession
import lance_adapter_spark
from tests.support.pipeline import python_daemons

spark = SparkSession.builder.master("local[2]").config(
    map=lance_adapter_spark.session_conf()).config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
lance_adapter_spark.register(spark)
options = lance_adapter_spark.source_options(sys.argv[2], uri=sys.argv[1])
spark.range(100).write.format("lance").options(**options).mode("append").save()
rows = spark.read.format("lance").options(**options).load().count()
daemons = python_daemons(spark)
spark.stop()
print(json.dumps({"rows": rows, "daemons": daemons}))
"""


def test_a_local_session_runs_the_source_through_the_worker_daemon(
    adapter_url: str, table_name: str
) -> None:
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": path}
    finished = run_python(LOCAL_SESSION, adapter_url, table_name, env=env, cwd=REPO_ROOT,
                          timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    answer = json.loads(finished.stdout.splitlines()[-1])
    assert answer["rows"] == 100
    daemons = answer["daemons"]
    ours = [command for command in daemons if "-m lance_adapter_spark.worker_daemon" in command]
    # Spark's own lookup of data sources keeps the plain daemon; the source's work does not.
    for module in ("create_data_source", "plan_data_source_read", "pyspark.worker"):
        assert any(command.endswith(module) for command in ours), daemons
        assert not any(
            "-m pyspark.daemon" in command and command.endswith(module) for command in daemons
        ), daemons


def test_a_removed_launcher_is_made_again() -> None:
    # This Python under another spelling: a launcher no running session uses.
    python = os.path.join(os.path.dirname(sys.executable), ".", os.path.basename(sys.executable))
    launcher = Path(local_python.launcher_for(python))
    assert launcher != Path(local_python.launcher_for(sys.executable))
    launcher.unlink()

    assert Path(local_python.launcher_for(python)) == launcher
    assert os.access(launcher, os.X_OK)


@pytest.mark.parametrize(
    ("master", "in_driver"),
    [
        ("local", True),
        ("local[2,2]", True),
        ("local[*]", True),
        ("local-cluster[2,1,1024]", False),
        ("spark://127.0.0.1:7077", False),
        ("yarn", False),
    ],
)
def test_the_launcher_serves_only_executors_inside_the_driver(master: str, in_driver: bool) -> None:
    assert local_python.runs_in_driver(master) is in_driver


JOB = """
import sys
from pyspark.sql import SparkSession
import lance_adapter_spark

spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
lance_adapter_spark.register(spark)
options = lance_adapter_spark.source_options("trips", impl="dir", properties={"root": sys.argv[1]})
spark.range(10).write.format("lance").options(**options).mode("append").save()
print("rows read:", spark.read.format("lance").options(**options).load().count())
"""


def python_without_lance(folder: Path) -> Path:
    """A folder whose `python3` is this Python's base interpreter, outside the venv."""
    folder.mkdir()
    python3 = folder / "python3"
    python3.write_text(f'#!/bin/sh\nexec {sys._base_executable} "$@"\n')
    python3.chmod(0o755)
    assert local_python.missing_modules(str(python3)), "the base Python imports lance"
    return python3


def test_a_job_run_by_the_venv_python_works_whatever_python3_is_on_path(tmp_path: Path) -> None:
    bin_folder = python_without_lance(tmp_path / "bin").parent
    (tmp_path / "job.py").write_text(JOB)
    hidden = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "VIRTUAL_ENV")
    env = {name: value for name, value in os.environ.items() if name not in hidden}
    env["PATH"] = f"{bin_folder}{os.pathsep}{env['PATH']}"

    finished = subprocess.run(
        [sys.executable, "job.py", str(tmp_path / "tables")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )

    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "rows read: 10" in finished.stdout


def test_a_named_python_without_lance_is_refused_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python3 = str(python_without_lance(tmp_path / "bin"))
    monkeypatch.setenv("PYSPARK_PYTHON", python3)

    with pytest.raises(LanceSourceError, match=r"PYSPARK_PYTHON is .*cannot import pyarrow, lance"):
        local_python.local_source_python(python3)
    monkeypatch.delenv("PYSPARK_PYTHON")
    assert local_python.local_source_python(python3) == local_python.launcher_for(sys.executable)
