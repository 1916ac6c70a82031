"""PySpark data pipelines over Lance tables in a Lance namespace (docs/spark.md).

The names below are imported on first use: Spark's Python workers import
`lance_adapter_spark.read` to run a read task, and that must not pull in the namespace client
or the write side.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

if importlib.util.find_spec("pyspark") is None:
    raise ModuleNotFoundError(
        "No module named 'pyspark': the Spark pipeline needs this project's `spark` extra, "
        "e.g. .venv/bin/python -m pip install -e '.[spark]' (docs/spark.md, Set-up)",
        name="pyspark",
    )

if TYPE_CHECKING:
    from lance_adapter_spark.api import (
        read_table,
        register,
        save_table,
        session_conf,
        source_options,
    )
    from lance_adapter_spark.options import LanceSourceError
    from lance_adapter_spark.source import LanceDataSource
    from lance_adapter_spark.spark_internals import activate

_EXPORTS = {
    "LanceDataSource": "lance_adapter_spark.source",
    "LanceSourceError": "lance_adapter_spark.options",
    "activate": "lance_adapter_spark.spark_internals",
    "read_table": "lance_adapter_spark.api",
    "register": "lance_adapter_spark.api",
    "save_table": "lance_adapter_spark.api",
    "session_conf": "lance_adapter_spark.api",
    "source_options": "lance_adapter_spark.api",
}

__all__ = [
    "LanceDataSource",
    "LanceSourceError",
    "activate",
    "read_table",
    "register",
    "save_table",
    "session_conf",
    "source_options",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)  # one entry per name of __all__
    if module is None:
        raise AttributeError(f"module 'lance_adapter_spark' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
