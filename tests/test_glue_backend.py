"""The Glue backend called directly in Python, against moto's Glue server on loopback."""

from __future__ import annotations

import re
from pathlib import Path

import lance
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceAlreadyExistsError,
    NamespaceExistsRequest,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    RegisterTableRequest,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends import load_namespace
from backends.core.settings import ConfigurationError
from backends.glue import GlueNamespace
from backends.guard import GuardedNamespace
from tests.support.glue import MotoEndpoint, glue_properties, s3_storage
from tests.support.lance_data import sample_table, tree_snapshot


def create_db(glue: GlueNamespace, name: str, **properties: str) -> None:
    glue.create_namespace(CreateNamespaceRequest(id=[name], properties=properties or None))


def raw_glue(endpoint: MotoEndpoint):
    return endpoint.client("glue")


def put_raw_table(endpoint: MotoEndpoint, db: str, name: str, table_type: str, params: dict):
    raw_glue(endpoint).create_table(
        DatabaseName=db,
        TableInput={
            "Name": name,
            "TableType": table_type,
            "Parameters": params,
            "StorageDescriptor": {"Location": f"s3://bucket/{db}/{name}"},
        },
    )


# -- namespaces ------------------------------------------------------------------------------


def test_create_describe_list_drop_database(glue: GlueNamespace, clean_moto: MotoEndpoint):
    response = glue.create_namespace(
        CreateNamespaceRequest(id=["sales"], properties={"owner": "ana", "tier": "gold"})
    )
    stored = raw_glue(clean_moto).get_database(Name="sales")["Database"]
    assert stored["Parameters"] == {"owner": "ana", "tier": "gold"}
    location = stored["LocationUri"]  # <root>/sales: the server's namespaces get a location
    assert location.endswith("/warehouse/sales")
    expected = {"owner": "ana", "tier": "gold", "location": location}
    assert response.properties == {**expected, "database.location-uri": location}

    described = glue.describe_namespace(DescribeNamespaceRequest(id=["sales"]))
    assert described.properties == response.properties
    glue.namespace_exists(NamespaceExistsRequest(id=["sales"]))
    assert glue.list_namespaces(ListNamespacesRequest()).namespaces == ["sales"]
    assert glue.list_namespaces(ListNamespacesRequest(id=["sales"])).namespaces == []

    glue.drop_namespace(DropNamespaceRequest(id=["sales"]))
    with pytest.raises(NamespaceNotFoundError, match="namespace sales not found"):
        glue.namespace_exists(NamespaceExistsRequest(id=["sales"]))
    assert raw_glue(clean_moto).get_databases()["DatabaseList"] == []


def own_properties(properties: dict[str, str] | None) -> dict[str, str]:
    """Properties without the location every namespace the server creates gets."""
    location_keys = ("location", "database.location-uri")
    return {k: v for k, v in (properties or {}).items() if k not in location_keys}


def test_create_modes(glue: GlueNamespace):
    create_db(glue, "ops", a="1")
    with pytest.raises(NamespaceAlreadyExistsError, match="namespace ops already exists"):
        create_db(glue, "ops", a="2")
    kept = glue.create_namespace(
        CreateNamespaceRequest(id=["ops"], mode="ExistOk", properties={"a": "3"})
    )
    assert own_properties(kept.properties) == {"a": "1"}
    replaced = glue.create_namespace(
        CreateNamespaceRequest(id=["ops"], mode="overwrite", properties={"b": "4"})
    )
    assert own_properties(replaced.properties) == {"b": "4"}
    described = glue.describe_namespace(DescribeNamespaceRequest(id=["ops"])).properties
    assert own_properties(described) == {"b": "4"}
    with pytest.raises(InvalidInputError, match=r"mode must be one of .*, got 'sometimes'"):
        glue.create_namespace(CreateNamespaceRequest(id=["ops"], mode="sometimes"))


def test_overwrite_refuses_namespace_with_tables(glue: GlueNamespace):
    create_db(glue, "ops", a="1")
    glue.declare_table(DeclareTableRequest(id=["ops", "t"]))
    with pytest.raises(NamespaceNotEmptyError, match="namespace ops still has tables"):
        glue.create_namespace(CreateNamespaceRequest(id=["ops"], mode="OVERWRITE"))
    described = glue.describe_namespace(DescribeNamespaceRequest(id=["ops"])).properties
    assert own_properties(described) == {"a": "1"}


def test_missing_namespace_errors(glue: GlueNamespace):
    for call in (
        lambda: glue.describe_namespace(DescribeNamespaceRequest(id=["nope"])),
        lambda: glue.namespace_exists(NamespaceExistsRequest(id=["nope"])),
        lambda: glue.list_namespaces(ListNamespacesRequest(id=["nope"])),
        lambda: glue.list_tables(ListTablesRequest(id=["nope"])),
        lambda: glue.drop_namespace(DropNamespaceRequest(id=["nope"])),
        lambda: glue.declare_table(DeclareTableRequest(id=["nope", "t"])),
        lambda: glue.describe_table(DescribeTableRequest(id=["nope", "t"])),
        lambda: glue.describe_namespace(DescribeNamespaceRequest(id=["a", "b"])),
    ):
        with pytest.raises(NamespaceNotFoundError, match=r"namespace (nope|a\$b) not found"):
            call()
    glue.drop_namespace(DropNamespaceRequest(id=["nope"], mode="Skip"))


def write_lance(path: Path, rows: int = 5) -> str:
    lance.write_dataset(sample_table(rows), str(path))
    return str(path)


def test_drop_is_restrict_only_and_never_touches_tables(glue: GlueNamespace, tmp_path: Path):
    create_db(glue, "keep")
    location = write_lance(tmp_path / "data.lance")
    files = tree_snapshot(tmp_path / "data.lance")
    glue.register_table(RegisterTableRequest(id=["keep", "t"], location=location))
    with pytest.raises(NamespaceNotEmptyError, match="namespace keep still has tables"):
        glue.drop_namespace(DropNamespaceRequest(id=["keep"]))
    with pytest.raises(UnsupportedOperationError, match="only drops namespaces in RESTRICT"):
        glue.drop_namespace(DropNamespaceRequest(id=["keep"], behavior="Cascade"))
    glue.table_exists(TableExistsRequest(id=["keep", "t"]))

    glue.deregister_table(DeregisterTableRequest(id=["keep", "t"]))
    glue.drop_namespace(DropNamespaceRequest(id=["keep"]))
    assert tree_snapshot(tmp_path / "data.lance") == files
    assert lance.dataset(location).count_rows() == 5


def test_drop_refuses_database_holding_only_non_lance_tables(
    glue: GlueNamespace, clean_moto: MotoEndpoint
):
    create_db(glue, "mixed")
    put_raw_table(clean_moto, "mixed", "hive_orders", "EXTERNAL_TABLE", {"table_type": "parquet"})
    assert glue.list_tables(ListTablesRequest(id=["mixed"])).tables == []
    with pytest.raises(NamespaceNotEmptyError, match="namespace mixed still has tables"):
        glue.drop_namespace(DropNamespaceRequest(id=["mixed"]))
    assert raw_glue(clean_moto).get_table(DatabaseName="mixed", Name="hive_orders")


def test_root_namespace(glue: GlueNamespace):
    glue.namespace_exists(NamespaceExistsRequest(id=[]))
    assert glue.describe_namespace(DescribeNamespaceRequest(id=[])).properties == {}
    assert glue.list_tables(ListTablesRequest(id=[])).tables == []
    with pytest.raises(InvalidInputError, match="the root namespace cannot be dropped"):
        glue.drop_namespace(DropNamespaceRequest(id=[]))
    with pytest.raises(NamespaceAlreadyExistsError, match="the root namespace always exists"):
        glue.create_namespace(CreateNamespaceRequest(id=[]))


def test_single_catalog_mode_has_one_level(glue: GlueNamespace):
    create_db(glue, "top")
    with pytest.raises(InvalidInputError, match="hierarchy=databases has a single namespace level"):
        glue.create_namespace(CreateNamespaceRequest(id=["top", "child"]))
    with pytest.raises(InvalidInputError, match="catalogs need hierarchy=catalogs"):
        glue.create_namespace(
            CreateNamespaceRequest(id=["cat"], properties={"glue.namespace_type": "catalog"})
        )
    with pytest.raises(NamespaceNotFoundError, match=r"top\$child not found \(hierarchy=databases"):
        glue.declare_table(DeclareTableRequest(id=["top", "child", "t"]))


# -- names -----------------------------------------------------------------------------------


GLUE_NAME = "is not a valid Glue name"


@pytest.mark.parametrize(
    ("bad", "why"),
    [("Upper", GLUE_NAME), ("has space", GLUE_NAME), ("semi;colon", GLUE_NAME),
     ("dollar$sign", r"must not contain '\$'"), ("dot.name", GLUE_NAME),
     ("x" * 256, "longer than 255 characters"), ("", "must not be empty"),
     ("..", r"must not be '\.\.'"), ("a/b", "must not contain '/'")],
)
def test_invalid_names_are_rejected_before_glue(
    glue: GlueNamespace, clean_moto, bad: str, why: str
):
    # Names are validated by the guard the server puts every loaded backend behind.
    glue = GuardedNamespace(glue)
    with pytest.raises(InvalidInputError, match=why):
        glue.create_namespace(CreateNamespaceRequest(id=[bad]))
    create_db(glue, "ok")
    with pytest.raises(InvalidInputError, match=why):
        glue.declare_table(DeclareTableRequest(id=["ok", bad]))
    with pytest.raises(InvalidInputError, match=why):
        glue.describe_table(DescribeTableRequest(id=["ok", bad]))
    assert [d["Name"] for d in raw_glue(clean_moto).get_databases()["DatabaseList"]] == ["ok"]
    assert raw_glue(clean_moto).get_tables(DatabaseName="ok")["TableList"] == []


def test_longest_valid_name_is_accepted(glue: GlueNamespace):
    name = "a" * 255
    create_db(glue, name)
    glue.declare_table(DeclareTableRequest(id=[name, "t-1_x"]))
    assert glue.list_tables(ListTablesRequest(id=[name])).tables == ["t-1_x"]


def test_invalid_properties_and_identifiers(glue: GlueNamespace):
    create_db(glue, "ok")
    with pytest.raises(InvalidInputError, match=r"property key 'k+' must be 1 to 255 characters"):
        glue.create_namespace(CreateNamespaceRequest(id=["p"], properties={"k" * 256: "v"}))
    with pytest.raises(InvalidInputError, match="property table_type must be 'lance'"):
        glue.declare_table(DeclareTableRequest(id=["ok", "t"], properties={"table_type": "hive"}))
    with pytest.raises(InvalidInputError, match="tables live in a database, not in the root"):
        glue.declare_table(DeclareTableRequest(id=["t"]))
    with pytest.raises(InvalidInputError, match="register_table needs a location"):
        glue.register_table(RegisterTableRequest(id=["ok", "t"], location="  "))
    with pytest.raises(InvalidInputError, match="limit must not be negative, got -1"):
        glue.list_namespaces(ListNamespacesRequest(limit=-1))


# -- tables ----------------------------------------------------------------------------------


def test_a_declared_table_is_an_external_glue_table(
    glue: GlueNamespace, clean_moto: MotoEndpoint, tmp_path
):
    """How Glue stores a declared table and how the backend describes it (the operations
    themselves: tests/contract/test_registration.py)."""
    create_db(glue, "db")
    declared = glue.declare_table(DeclareTableRequest(id=["db", "events"], properties={"k": "v"}))
    assert declared.location == str(tmp_path / "warehouse" / "db" / "events.lance")
    assert declared.properties == {"k": "v", "table_type": "lance"}

    stored = raw_glue(clean_moto).get_table(DatabaseName="db", Name="events")["Table"]
    assert stored["TableType"] == "EXTERNAL_TABLE"
    assert stored["Parameters"] == {"k": "v", "table_type": "lance"}
    assert stored["StorageDescriptor"]["Location"] == declared.location

    described = glue.describe_table(DescribeTableRequest(id=["db", "events"], with_table_uri=True))
    assert described.table_uri == Path(declared.location).as_uri()
    assert described.properties == {"k": "v", "table_type": "lance"}
    assert described.var_schema is None and described.version is None


def test_declare_uses_explicit_location_and_database_location(
    glue: GlueNamespace, clean_moto: MotoEndpoint
):
    raw_glue(clean_moto).create_database(
        DatabaseInput={"Name": "lake", "LocationUri": "s3://bucket/lake/"}
    )
    default = glue.declare_table(DeclareTableRequest(id=["lake", "a"]))
    assert default.location == "s3://bucket/lake/a.lance"
    explicit = glue.declare_table(DeclareTableRequest(id=["lake", "b"], location="s3://o/b"))
    assert explicit.location == "s3://o/b"
    described = glue.describe_table(DescribeTableRequest(id=["lake", "b"], with_table_uri=True))
    assert described.table_uri == "s3://o/b"


def test_register_modes(glue: GlueNamespace, clean_moto: MotoEndpoint, tmp_path: Path):
    create_db(glue, "db")
    one, two = write_lance(tmp_path / "one.lance"), write_lance(tmp_path / "two.lance", 3)
    registered = glue.register_table(
        RegisterTableRequest(id=["db", "t"], location=one, properties={"k": "v"})
    )
    assert registered.properties == {"k": "v", "table_type": "lance"}
    with pytest.raises(TableAlreadyExistsError, match=r"table db\$t already exists"):
        glue.register_table(RegisterTableRequest(id=["db", "t"], location=two))
    glue.register_table(RegisterTableRequest(id=["db", "t"], location=two, mode="Overwrite"))
    assert glue.describe_table(DescribeTableRequest(id=["db", "t"])).location == two
    glue.register_table(RegisterTableRequest(id=["db", "new"], location=one, mode="overwrite"))
    assert glue.describe_table(DescribeTableRequest(id=["db", "new"])).location == one

    put_raw_table(clean_moto, "db", "hive", "EXTERNAL_TABLE", {"table_type": "parquet"})
    with pytest.raises(InvalidInputError, match=r"table db\$hive is not a Lance table"):
        glue.register_table(RegisterTableRequest(id=["db", "hive"], location=one, mode="overwrite"))
    stored = raw_glue(clean_moto).get_table(DatabaseName="db", Name="hive")["Table"]
    assert stored["Parameters"] == {"table_type": "parquet"}


def test_list_tables_without_declared_only_tables(glue: GlueNamespace, tmp_path: Path):
    create_db(glue, "db")
    glue.register_table(
        RegisterTableRequest(id=["db", "written"], location=write_lance(tmp_path / "w.lance"))
    )
    glue.declare_table(DeclareTableRequest(id=["db", "declared"]))
    everything = glue.list_tables(ListTablesRequest(id=["db"]))
    assert everything.tables == ["declared", "written"]
    with_data = glue.list_tables(ListTablesRequest(id=["db"], include_declared=False))
    assert with_data.tables == ["written"]


def test_register_requires_lance_data_at_the_location(glue: GlueNamespace, tmp_path: Path):
    create_db(glue, "db")
    (tmp_path / "empty").mkdir()
    for location in (str(tmp_path / "missing"), str(tmp_path / "empty")):
        with pytest.raises(InvalidInputError, match="no Lance table at " + re.escape(location)):
            glue.register_table(RegisterTableRequest(id=["db", "t"], location=location))
    assert glue.list_tables(ListTablesRequest(id=["db"])).tables == []


def test_lance_table_identification(glue: GlueNamespace, clean_moto: MotoEndpoint):
    create_db(glue, "db")
    put_raw_table(clean_moto, "db", "upper", "EXTERNAL_TABLE", {"table_type": "LANCE"})
    put_raw_table(clean_moto, "db", "mixed", "EXTERNAL_TABLE", {"table_type": "Lance"})
    # table_type=lance marks a Lance table whatever the TableType (impls reads no TableType).
    put_raw_table(clean_moto, "db", "managed", "MANAGED_TABLE", {"table_type": "lance"})
    put_raw_table(clean_moto, "db", "iceberg", "EXTERNAL_TABLE", {"table_type": "ICEBERG"})
    put_raw_table(clean_moto, "db", "plain", "EXTERNAL_TABLE", {})
    assert glue.list_tables(ListTablesRequest(id=["db"])).tables == ["managed", "mixed", "upper"]
    glue.table_exists(TableExistsRequest(id=["db", "managed"]))
    for name in ("iceberg", "plain"):
        with pytest.raises(InvalidInputError, match=rf"table db\${name} is not a Lance table"):
            glue.describe_table(DescribeTableRequest(id=["db", name]))
        with pytest.raises(InvalidInputError, match=rf"table db\${name} is not a Lance table"):
            glue.deregister_table(DeregisterTableRequest(id=["db", name]))
        with pytest.raises(TableNotFoundError, match=rf"table db\${name} is not a Lance table"):
            glue.table_exists(TableExistsRequest(id=["db", name]))
    names = {t["Name"] for t in raw_glue(clean_moto).get_tables(DatabaseName="db")["TableList"]}
    assert names == {"upper", "mixed", "managed", "iceberg", "plain"}


def test_more_than_a_hundred_databases_and_tables_page_in_order(glue: GlueNamespace):
    databases = [f"db_{i:03d}" for i in range(120)]
    for name in reversed(databases):
        create_db(glue, name)
    tables = [f"t_{i:03d}" for i in range(130)]
    for name in reversed(tables):
        glue.declare_table(DeclareTableRequest(id=["db_000", name], location=f"s3://b/{name}"))

    assert glue.list_namespaces(ListNamespacesRequest()).namespaces == databases
    assert collect_pages(glue, ListNamespacesRequest, "namespaces", 50) == databases
    assert glue.list_tables(ListTablesRequest(id=["db_000"])).tables == tables
    assert collect_pages(glue, ListTablesRequest, "tables", 40, id=["db_000"]) == tables


def collect_pages(glue: GlueNamespace, request_type, field: str, limit: int, **kwargs):
    method = glue.list_namespaces if field == "namespaces" else glue.list_tables
    names, token, pages = [], None, 0
    while True:
        response = method(request_type(limit=limit, page_token=token, **kwargs))
        page = getattr(response, field)
        assert len(page) <= limit
        names += page
        pages += 1
        token = response.page_token
        if not token:
            return names


# -- configuration ---------------------------------------------------------------------------


def test_configuration_errors(clean_moto: MotoEndpoint):
    url = clean_moto.url
    bad = [
        ({"hierarchy": "flat"}, "'hierarchy' must be one of 'catalogs', 'databases', got 'flat'"),
        ({"access_key_id": "only-the-key", "secret_access_key": ""},
         "access_key_id and secret_access_key must be set together"),
        # max_attempts counts the first call; botocore's max-retries does not.
        ({"client.max_attempts": "0"},
         "'client.max_attempts' is 0, that is 'client.max-retries' -1, which must be at least 0"),
        ({"client.read_timeout_sec": "soon"}, "'client.read_timeout_sec' must be an integer"),
        ({"assume_role_arn": "arn:aws:iam::123456789012:role/x", "assume_role_timeout_sec": "60"},
         "'assume_role_timeout_sec' must be at least 900, got 60"),
    ]
    for extra, why in bad:
        with pytest.raises(ConfigurationError, match=why):
            GlueNamespace(**glue_properties(url, **extra))


def test_missing_region_is_a_configuration_error(clean_moto, monkeypatch, tmp_path):
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    properties = glue_properties(clean_moto.url)
    properties.pop("region")
    with pytest.raises(ConfigurationError, match="no AWS region: set the 'region' property"):
        GlueNamespace(**properties)


def test_loaded_through_registry_with_storage_options(clean_moto: MotoEndpoint):
    clean_moto.client("s3").create_bucket(Bucket="lake-b")  # type: ignore[attr-defined]
    storage = s3_storage(clean_moto.url)  # the declaration's ownership record goes there
    namespace = load_namespace(
        "glue",
        glue_properties(
            clean_moto.url, root="s3://lake-b",
            **{f"storage.{key}": value for key, value in storage.items()},
        ),
    )
    namespace.create_namespace(CreateNamespaceRequest(id=["reg"]))
    declared = namespace.declare_table(
        DeclareTableRequest(id=["reg", "t"], location="s3://lake-b/reg/t.lance")
    )
    assert declared.storage_options == storage
    described = namespace.describe_table(DescribeTableRequest(id=["reg", "t"]))
    assert described.storage_options == storage
