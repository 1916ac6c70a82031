"""LanceDB's own OAuth client (lancedb's `OAuthConfig`: OpenID discovery at the issuer, the
client-credentials grant, its token sent as `Authorization: Bearer` with
`x-lancedb-credential-type: oidc`) against the suite's real Keycloak, through a server with
`auth_mode: oidc`: the remote client (`connect_async`) and the catalog client
(`connect_catalog`) create, search and drop a table as the token's identity, which the audit
log names; an identity without a grant is refused. The namespace client has no OAuth flow of
its own: it sends a Keycloak token it is given."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest
from lancedb.remote.errors import HttpError
from lancedb.remote.oauth import OAuthConfig, OAuthFlowType

from tests.support.adapter import running_server
from tests.support.keycloak import AUDIENCE, ETL_CLIENT, ETL_SECRET, ETL_SERVICE_ACCOUNT, Keycloak

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                 "vector": pa.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
                                    pa.list_(pa.float32(), 2))})


def oauth(keycloak: Keycloak) -> OAuthConfig:
    """LanceDB's client-credentials flow at the realm's issuer, as the ETL client."""
    return OAuthConfig(issuer_url=keycloak.issuer, client_id=ETL_CLIENT,
                       client_secret=ETL_SECRET, scopes=["openid"],
                       flow=OAuthFlowType.CLIENT_CREDENTIALS)


def serve(keycloak: Keycloak, root: Path, grants: dict[str, str]) -> Any:
    return running_server(
        "dir", {"root": str(root / "root")}, auth_mode="oidc", oidc_issuer=keycloak.issuer,
        oidc_audience=AUDIENCE, oidc_identity_claim="preferred_username",
        access_groups=grants, audit_log_file=str(root / "audit.jsonl"))


@pytest.fixture
def oidc_server(keycloak: Keycloak, tmp_path: Path) -> Iterator[str]:
    with serve(keycloak, tmp_path, {"sales-etl": "admin"}) as url:  # the ETL client's group
        yield url


def audited(root: Path) -> list[tuple[str, str, str]]:
    lines = [json.loads(line) for line in (root / "audit.jsonl").read_text().splitlines()]
    return [(line["identity"], line["operation"], line["outcome"]) for line in lines]


def test_the_remote_client_with_lancedbs_oauth_flow_creates_searches_and_drops(
    keycloak: Keycloak, oidc_server: str, tmp_path: Path,
) -> None:
    async def life() -> tuple[int, list[int], list[str]]:
        db = await lancedb.connect_async("db://lance", host_override=oidc_server,
                                         region="local", oauth_config=oauth(keycloak))
        table = await db.create_table("oauth_events", ROWS)
        nearest = await table.query().nearest_to([1.0, 0.1]).limit(2).to_arrow()
        count = await table.count_rows()
        await db.drop_table("oauth_events")
        return count, nearest["id"].to_pylist(), (await db.list_tables()).tables

    assert asyncio.run(life()) == (3, [1, 3], [])
    assert audited(tmp_path) == [(ETL_SERVICE_ACCOUNT, "CreateTable", "ok"),
                                 (ETL_SERVICE_ACCOUNT, "DropTable", "ok")]


def test_the_catalog_client_with_lancedbs_oauth_flow_makes_a_database_and_its_table(
    keycloak: Keycloak, oidc_server: str, tmp_path: Path,
) -> None:
    catalog = lancedb.connect_catalog(oidc_server, oauth_config=oauth(keycloak))
    shop = catalog.create_database("oauth_shop")
    table = shop.create_table("orders", ROWS)
    assert table.search([0.0, 1.0]).limit(1).to_arrow()["id"].to_pylist() == [2]
    shop.drop_table("orders")
    assert shop.list_tables().tables == []
    assert "oauth_shop" in catalog.list_databases().databases
    assert {identity for identity, _, _ in audited(tmp_path)} == {ETL_SERVICE_ACCOUNT}


def test_an_identity_without_a_grant_is_refused_with_its_name(
    keycloak: Keycloak, tmp_path: Path,
) -> None:
    with serve(keycloak, tmp_path, {"lance-admins": "admin"}) as url:  # not the ETL group
        async def create() -> None:
            db = await lancedb.connect_async("db://lance", host_override=url, region="local",
                                             oauth_config=oauth(keycloak))
            await db.create_table("refused", ROWS)

        with pytest.raises(Exception, match=f"identity '{ETL_SERVICE_ACCOUNT}' has no access"):
            asyncio.run(create())
    assert audited(tmp_path) == [(ETL_SERVICE_ACCOUNT, "CreateTable", "refused")]


def test_without_a_token_the_remote_client_is_refused(oidc_server: str) -> None:
    db = lancedb.connect("db://lance", api_key="not-a-token", host_override=oidc_server,
                         region="local")
    with pytest.raises(HttpError) as refused:
        db.list_tables()
    assert refused.value.status_code == 401


def test_the_namespace_client_sends_a_keycloak_token_it_is_given(
    keycloak: Keycloak, oidc_server: str,
) -> None:
    token = keycloak.client_credentials_token()
    db = lancedb.connect_namespace(
        "rest", {"uri": oidc_server, "header.Authorization": f"Bearer {token}"})
    db.create_namespace(["oauth_ns"])
    table = db.create_table("t", ROWS, namespace_path=["oauth_ns"])
    assert table.search([1.0, 1.0]).limit(1).to_arrow()["id"].to_pylist() == [3]
    db.drop_table("t", namespace_path=["oauth_ns"])
    assert list(db.table_names(namespace_path=["oauth_ns"])) == []


def test_the_documented_oauth_example_runs(keycloak: Keycloak, oidc_server: str) -> None:
    """docs/security.md's example, with the suite's issuer and server."""
    from tests.support.common import run_python
    from tests.support.doc_blocks import blocks_run_by

    (block,) = blocks_run_by("tests/test_lancedb_oauth.py",
                             "test_the_documented_oauth_example_runs")
    code = block.code.replace("https://sso.example.com/realms/lance", keycloak.issuer)
    ran = run_python(code.replace("https://lance.example.com", oidc_server))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["2", "lance-etl's databases: []"]
