"""PySpark data pipelines over Lance tables in a Lance namespace (README: "Spark pipelines")."""

from pipeline.api import activate, read_table, register, save_table, source_options
from pipeline.options import LanceSourceError
from pipeline.source import LanceDataSource

__all__ = [
    "LanceDataSource",
    "LanceSourceError",
    "activate",
    "read_table",
    "register",
    "save_table",
    "source_options",
]
