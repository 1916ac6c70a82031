"""The Spark package's driver tells local storage from object storage as the server's parser
does, and also where only the package is installed (`--py-files`, no `backends`)."""

from __future__ import annotations

import sys

import pytest

from backends.core.locations import SUPPORTED_SCHEMES
from lance_adapter_spark.shared_storage import OBJECT_STORE_SCHEMES, is_local_location

LOCATIONS = {
    "/srv/lake/t.lance": True,
    "relative/t.lance": True,
    "file:///srv/lake/t.lance": True,
    "FILE:///srv/lake/t.lance": True,
    "s3://lake/tables/t.lance": False,
    "S3://lake/tables/t.lance": False,
    "gs://lake/t.lance": False,
    "az://container/t.lance": False,
    "abfss://container@account.dfs.core.windows.net/t.lance": False,
}


def test_the_object_stores_are_the_servers() -> None:
    assert set(OBJECT_STORE_SCHEMES) == set(SUPPORTED_SCHEMES) - {"file"}


@pytest.mark.parametrize("without_server", [False, True], ids=["with server", "package only"])
def test_local_or_object_storage(monkeypatch: pytest.MonkeyPatch, without_server: bool) -> None:
    if without_server:
        monkeypatch.setitem(sys.modules, "backends.core.locations", None)  # import fails
        with pytest.raises(ImportError, match=r"backends\.core\.locations"):
            import backends.core.locations  # noqa: F401
    answers = {location: is_local_location(location) for location in LOCATIONS}
    assert answers == LOCATIONS
