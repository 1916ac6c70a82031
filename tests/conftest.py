"""Every fixture shared between test modules lives in a module of `tests/support/` and is
registered here, once; test modules import only plain helpers from `tests/support/`."""

import pytest

# Assertions in support modules (table steps, the LanceDB lifecycle) report like a test's own.
pytest.register_assert_rewrite("tests.support")

pytest_plugins = (
    "tests.support.adapter",
    "tests.support.glue",
    "tests.support.moto_iam",
    "tests.support.hive",
    "tests.support.hive_catalog_stand_in",
    "tests.support.hive_metastore_real",
    "tests.support.iceberg_stand_in",
    "tests.support.iceberg_rest_server",
    "tests.support.keycloak",
    "tests.support.unity_stand_in",
    "tests.support.interop",
    "tests.support.pipeline",
    "tests.support.vending",
    "tests.support.contract_backends",
    "tests.support.field_walk",
    "tests.support.containment_catalogs",
)
