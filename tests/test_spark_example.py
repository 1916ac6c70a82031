"""The example pipeline runs end to end against the adapter and reports what it wrote."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from pyspark.sql import SparkSession

from examples import spark_pipeline as example
from tests.support.pipeline import REPO_ROOT


def test_example_pipeline_writes_reads_and_summarises(
    spark: SparkSession, adapter_url: str, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["--uri", adapter_url, "--rows", "6000", "--table", "example_ns.trips"]
    assert example.main([*arguments, "--raw-dir", str(tmp_path)]) == 0

    output = capsys.readouterr().out
    assert "Table example_ns.trips: 6,000 rows" in output
    zone_trips = [
        int(n.replace(",", "")) for n in re.findall(r"^\w[\w ]*?\s+([\d,]+)\s", output, re.M)
    ]
    assert sum(zone_trips) == 6000, output
    assert "writing Lance table 'example_ns.trips'" in output and "done in" in output
    # Ids 0..5999: passengers is 1 + id % 4 (nulls become 1), so ids with id % 4 >= 1
    # except the nulls (id % 50 == 0) have two or more.
    expected_busy = sum(1 for i in range(6000) if i % 50 != 0 and i % 4 >= 1)
    assert f"trips with 2+ passengers: {expected_busy:,}" in output


def test_example_reports_an_unreachable_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    assert example.main(["--uri", "http://127.0.0.1:9", "--rows", "10"]) == 1
    assert "cannot reach the Lance REST namespace" in capsys.readouterr().out


def test_without_pyspark_the_error_names_the_spark_extra() -> None:
    # -S: no site-packages, so no pyspark, as after `./run serve` installed the project.
    code = f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); import lance_adapter_spark"
    finished = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert finished.returncode != 0
    assert "No module named 'pyspark'" in finished.stderr
    assert "pip install -e '.[spark]'" in finished.stderr
