"""Lance namespaces kept in an Apache Iceberg REST Catalog (`--impl iceberg`).

    names.py      Lance identifiers ↔ warehouse, nested namespaces and table names
    errors.py     what an Iceberg refusal means, per kind of call
    catalog.py    the Iceberg REST calls, per warehouse (prefixes from `/v1/config`)
    settings.py   the backend's properties (`IcebergSettings`)
    namespace.py  the namespace class
"""

from backends.iceberg.namespace import IcebergNamespace
from backends.iceberg.settings import IcebergSettings

__all__ = ["IcebergNamespace", "IcebergSettings"]
