"""Lance namespaces kept in Unity Catalog (`--impl unity`), on its open-source REST API.

    names.py      Lance identifiers ↔ catalog.schema.table names and API paths
    errors.py     what a Unity refusal means, per kind of call
    columns.py    Arrow schema → Unity columns
    catalog.py    the Unity calls: listings, schemas and Lance table entries
    settings.py   the backend's properties (`UnitySettings`)
    namespace.py  the namespace class
"""

from backends.unity.columns import unity_columns
from backends.unity.namespace import UnityNamespace
from backends.unity.settings import UnitySettings

__all__ = ["UnityNamespace", "UnitySettings", "unity_columns"]
