"""Where a table lies as a cluster sees it: on storage every executor reaches (an object
store, or a file system the user says is shared), or on one machine's local disk, which a
cluster's executors would each see apart. Used by the reads and writes when they plan, on the
driver (docs/spark.md, "Running on a cluster")."""

from __future__ import annotations

import os

from lance_adapter_spark.options import LanceSourceError

# The Spark master, as the driver saw it when the source was registered: handed to the
# Python processes that plan reads and writes (they have no SparkContext to ask).
MASTER_ENV = "LANCE_ADAPTER_SPARK_MASTER"
# Schemes of the object stores Lance opens (backends.core.locations.SUPPORTED_SCHEMES).
OBJECT_STORE_SCHEMES = ("s3", "gs", "az", "abfss")


def is_local_master(master: str | None) -> bool:
    return not master or master.startswith("local")


def refuse_unshared_local_storage(location: str, table: str, shared: bool) -> None:
    """A table on a local file system can only be written and read by a cluster when that
    path is one shared file system on every machine; the user says so (shared_storage)."""
    master = os.environ.get(MASTER_ENV)
    if shared or is_local_master(master) or not is_local_location(location):
        return
    raise LanceSourceError(
        f"table '{table}' is at {location}, a local path, but Spark runs on the cluster "
        f"{master}: each executor would write to and read from its own disk, which the "
        "driver does not see. Put the table root on object storage (s3://, gs://, az://), "
        "or on a file system mounted at the same path on the driver and every executor and "
        "then set option shared_storage=true"
    )


def is_local_location(location: str) -> bool:
    """Whether Lance opens `location` on the local file system (read as Lance reads it,
    `backends.core.locations`; a location it cannot read is taken as local, the cautious side).

    Driver only. A driver that has only this package (`--py-files`, no server installed)
    has no `backends`: there a location is local unless it names an object store's scheme,
    which is what the answers of a namespace server hold."""
    from lance_namespace import InvalidInputError

    try:
        from backends.core.locations import resolve_stored
    except ImportError:
        scheme, separator, _ = location.partition("://")
        return not separator or scheme.lower() not in OBJECT_STORE_SCHEMES
    try:
        return resolve_stored(location).scheme == "file"
    except InvalidInputError:
        return True
