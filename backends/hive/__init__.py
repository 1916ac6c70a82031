"""Lance namespaces kept in a Hive Metastore: `hive2` (database.table) and `hive3`
(catalog.database.table).

    client.py     the pooled, fail-over Thrift client and the translation of its errors
    names.py      Lance identifiers ↔ catalog, database and table names; table locations
    objects.py    Lance tables and namespace properties ↔ HMS Table, Database and Catalog
    metastore.py  the catalog-aware metastore calls
    settings.py   the backend's properties (`HiveSettings`)
    namespace.py  the namespace classes
"""

from backends.hive.client import MetastoreClientPool, translate_hms_error
from backends.hive.metastore import LANCE_PARAMETER_FILTER
from backends.hive.namespace import Hive2Namespace, Hive3Namespace
from backends.hive.settings import HiveSettings

__all__ = [
    "LANCE_PARAMETER_FILTER",
    "Hive2Namespace",
    "Hive3Namespace",
    "HiveSettings",
    "MetastoreClientPool",
    "translate_hms_error",
]
