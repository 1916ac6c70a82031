"""The Keycloak test support (`tests/support/keycloak.py`) against the real server: the realm
`lance` issues client-credentials and password tokens with the claims the OpenID Connect tests
rely on, rotates its signing key on demand, and changes a user's groups for the next token.

Payloads are read unverified here: these tests check what Keycloak issues, not a validator.
"""

from __future__ import annotations

from typing import Any

from tests.support.keycloak import (
    AUDIENCE,
    ETL_SERVICE_ACCOUNT,
    PASSWORDS,
    Keycloak,
    token_claims,
    token_header,
)


def audiences(claims: dict[str, Any]) -> list[str]:
    """`aud` as a list: Keycloak writes a lone audience as a plain string."""
    aud = claims.get("aud", [])
    return [aud] if isinstance(aud, str) else list(aud)


def test_client_credentials_token_names_the_service_account_and_its_group(
    keycloak: Keycloak,
) -> None:
    claims = token_claims(keycloak.client_credentials_token())

    assert claims["iss"] == keycloak.issuer
    assert AUDIENCE in audiences(claims)
    assert claims["groups"] == ["sales-etl"]
    assert claims["preferred_username"] == ETL_SERVICE_ACCOUNT
    assert claims["azp"] == "lance-etl"


def test_password_token_names_the_user_email_and_groups(keycloak: Keycloak) -> None:
    claims = token_claims(keycloak.password_token("alice", PASSWORDS["alice"]))

    assert claims["iss"] == keycloak.issuer
    assert AUDIENCE in audiences(claims)
    assert claims["groups"] == ["lance-admins"]
    assert claims["preferred_username"] == "alice"
    assert claims["email"] == "alice@example.com"
    assert claims["azp"] == "lance-cli"


def test_a_user_without_groups_gets_no_groups_claim(keycloak: Keycloak) -> None:
    claims = token_claims(keycloak.password_token("carol", PASSWORDS["carol"]))

    assert "groups" not in claims  # Keycloak leaves the claim out rather than send []
    assert claims["preferred_username"] == "carol"


def test_rotated_keys_sign_the_next_token_and_are_published(keycloak: Keycloak) -> None:
    before = token_header(keycloak.client_credentials_token())["kid"]

    rotated = keycloak.rotate_keys()
    after = token_header(keycloak.client_credentials_token())

    assert rotated != before
    assert after["kid"] == rotated
    assert after["alg"] == "RS256"
    published = {key["kid"] for key in keycloak.jwks()["keys"]}
    assert {before, rotated} <= published  # the old key stays, for tokens already out


def test_set_groups_changes_the_next_tokens_groups(keycloak: Keycloak) -> None:
    try:
        keycloak.set_groups("carol", ["sales-etl", "lance-admins"])
        claims = token_claims(keycloak.password_token("carol", PASSWORDS["carol"]))
        assert sorted(claims["groups"]) == ["lance-admins", "sales-etl"]

        keycloak.set_groups("carol", ["sales-etl"])
        claims = token_claims(keycloak.password_token("carol", PASSWORDS["carol"]))
        assert claims["groups"] == ["sales-etl"]
    finally:
        keycloak.set_groups("carol", [])  # the session's server is shared: put carol back


def test_set_groups_reaches_a_service_account(keycloak: Keycloak) -> None:
    try:
        keycloak.set_groups(ETL_SERVICE_ACCOUNT, ["sales-etl", "lance-readers"])
        claims = token_claims(keycloak.client_credentials_token())
        assert sorted(claims["groups"]) == ["lance-readers", "sales-etl"]
    finally:
        keycloak.set_groups(ETL_SERVICE_ACCOUNT, ["sales-etl"])


def test_shortened_lifespan_shortens_the_next_token(keycloak: Keycloak) -> None:
    try:
        keycloak.set_access_token_lifespan(60)
        claims = token_claims(keycloak.password_token("bob", PASSWORDS["bob"]))
        assert claims["exp"] - claims["iat"] == 60
        assert claims["groups"] == ["sales-etl"]
    finally:
        keycloak.set_access_token_lifespan(300)
