"""`auth_mode: oidc` against a real Keycloak (tests/support/keycloak.py): tokens it issues are
accepted by the server's verifier (app/oidc.py) and give the grants their groups map to, and
every way a token can be wrong is refused with 401 / code 16: expired, not yet valid, another
issuer, another audience, `alg: none`, HS256 signed with the public key, an unknown key,
a tampered payload, a missing scope. A key rotated in Keycloak while the server runs is picked
up without a restart; tokens naming made-up keys cannot make it fetch the keys more than once
per `oidc_keys_min_refresh`. The clock of the time checks is injected, not waited for.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance_namespace as ln
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.auth import load_identities
from app.config import load_settings
from app.oidc import IssuerKeys, TokenVerifier
from app.settings import Settings
from backends.core.settings import ConfigurationError
from tests.support.adapter import running_server
from tests.support.doc_blocks import blocks_run_by
from tests.support.keycloak import AUDIENCE, PASSWORDS, Keycloak, token_claims, token_header
from tests.support.lance_data import arrow_stream, sample_table


def oidc_settings(keycloak: Keycloak, **values: object) -> Settings:
    return Settings(**{"auth_mode": "oidc", "oidc_issuer": keycloak.issuer,
                       "oidc_audience": AUDIENCE, "oidc_identity_claim": "preferred_username",
                       **values})


class Clock:
    """A clock the test moves; starts at the real time."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def verify(verifier: TokenVerifier, token: str):
    return asyncio.run(verifier.verify(token.encode()))


def refused(verifier: TokenVerifier, token: str) -> str:
    with pytest.raises(ln.UnauthenticatedError) as raised:
        verify(verifier, token)
    return str(raised.value)


def segment(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def alice(keycloak: Keycloak) -> str:
    return keycloak.password_token("alice", PASSWORDS["alice"])


def test_a_token_names_its_identity_and_groups(keycloak: Keycloak) -> None:
    caller = verify(TokenVerifier(oidc_settings(keycloak)), alice(keycloak))
    assert (caller.identity, caller.groups) == ("alice", ("lance-admins",))
    etl = verify(TokenVerifier(oidc_settings(keycloak, oidc_identity_claim="azp")),
                 keycloak.client_credentials_token())
    assert (etl.identity, etl.groups) == ("lance-etl", ("sales-etl",))


def test_expired_and_not_yet_valid_tokens_are_refused_by_the_clock(keycloak: Keycloak) -> None:
    token = alice(keycloak)
    claims = token_claims(token)
    clock = Clock(claims["exp"] + 30 + 1)  # past the 30 s skew
    verifier = TokenVerifier(oidc_settings(keycloak), clock=clock)
    assert "the token has expired" in refused(verifier, token)
    clock.now = claims["exp"] + 29  # within the skew
    assert verify(verifier, token).identity == "alice"
    clock.now = claims["exp"] + 31  # a token that passed before expires all the same
    assert "the token has expired" in refused(verifier, token)
    early = TokenVerifier(oidc_settings(keycloak), clock=Clock(claims["iat"] - 31))
    assert "not valid yet" in refused(early, token)


def test_another_issuer_or_audience_is_refused(keycloak: Keycloak) -> None:
    # Keycloak names its issuer after the host a token was asked for: the same realm and key,
    # asked for as `localhost`, is a token of another issuer.
    answer = httpx.post(keycloak.token_endpoint, headers={"host": keycloak.url.replace(
        "http://127.0.0.1", "localhost").removeprefix("http://")}, data={
            "grant_type": "password", "client_id": "lance-cli", "username": "alice",
            "password": PASSWORDS["alice"]}, timeout=30)
    foreign = answer.json()["access_token"]
    assert token_claims(foreign)["iss"] != keycloak.issuer
    assert token_header(foreign)["kid"] == token_header(alice(keycloak))["kid"]
    verifier = TokenVerifier(oidc_settings(keycloak))
    assert "issued by another issuer" in refused(verifier, foreign)
    other = TokenVerifier(oidc_settings(keycloak, oidc_audience="billing-service"))
    assert "not meant for 'billing-service'" in refused(other, alice(keycloak))


def test_alg_none_hs256_with_the_public_key_and_a_tampered_payload_are_refused(
    keycloak: Keycloak,
) -> None:
    token = alice(keycloak)
    header, payload, signature = token.split(".")
    kid = token_header(token)["kid"]
    claims = {**token_claims(token), "groups": ["lance-admins", "root"]}
    verifier = TokenVerifier(oidc_settings(keycloak))
    unsigned = f"{segment({'alg': 'none', 'kid': kid})}.{payload}."
    assert "'none' are not accepted" in refused(verifier, unsigned)
    # HS256 keyed with the RSA public key, as a verifier confusing the two would check it.
    jwk = next(key for key in keycloak.jwks()["keys"] if key["kid"] == kid)
    public = jwt_public_pem(jwk)
    signing_input = f"{segment({'alg': 'HS256', 'kid': kid})}.{payload}"
    mac = hmac.new(public, signing_input.encode(), hashlib.sha256).digest()
    forged = f"{signing_input}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"
    assert "'HS256' are not accepted" in refused(verifier, forged)
    tampered = f"{header}.{segment(claims)}.{signature}"
    assert "signature does not match" in refused(verifier, tampered)
    assert "not a JWT" in refused(verifier, "not-a-token")


def jwt_public_pem(jwk: dict) -> bytes:
    import jwt

    key = jwt.PyJWK(jwk, "RS256").key
    return key.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo)


def test_unknown_keys_fetch_the_keys_at_most_once_per_interval(keycloak: Keycloak) -> None:
    token = alice(keycloak)
    _, payload, signature = token.split(".")
    clock = Clock(1000.0)
    settings = oidc_settings(keycloak, oidc_keys_min_refresh=10.0)
    keys = IssuerKeys(settings, clock=clock)
    verifier = TokenVerifier(settings, keys=keys)
    assert verify(verifier, token).identity == "alice"
    assert keys.fetches == 1
    for number in range(20):  # one fetch kept in hand (a rotation right after a fetch)
        made_up = f"{segment({'alg': 'RS256', 'kid': f'made-up-{number}'})}.{payload}.{signature}"
        assert "a key the issuer does not publish" in refused(verifier, made_up)
    assert keys.fetches == 2  # the first unknown key fetched once; the others waited
    clock.now += 10
    refused(verifier, f"{segment({'alg': 'RS256', 'kid': 'again'})}.{payload}.{signature}")
    assert keys.fetches == 3


def test_a_key_rotated_in_keycloak_is_used_without_a_restart(keycloak: Keycloak) -> None:
    settings = oidc_settings(keycloak)
    keys = IssuerKeys(settings)
    verifier = TokenVerifier(settings, keys=keys)
    before = alice(keycloak)
    assert verify(verifier, before).identity == "alice"
    new_kid = keycloak.rotate_keys()
    after = alice(keycloak)
    assert token_header(after)["kid"] == new_kid != token_header(before)["kid"]
    assert verify(verifier, after).identity == "alice"
    assert keys.fetches == 2
    assert verify(verifier, before).identity == "alice"  # the old key is still published


def test_required_scopes_are_checked(keycloak: Keycloak) -> None:
    token = alice(keycloak)
    assert "profile" in token_claims(token)["scope"].split()
    assert verify(TokenVerifier(oidc_settings(keycloak, oidc_required_scopes=("profile",))),
                  token).identity == "alice"
    strict = TokenVerifier(oidc_settings(keycloak, oidc_required_scopes=("lance:admin",)))
    assert "lacks the scope 'lance:admin'" in refused(strict, token)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"oidc_issuer": ""}, "needs oidc_issuer"),
        ({"oidc_issuer": "http://sso.example.com/realms/x"}, "needs oidc_issuer"),
        ({"oidc_audience": ""}, "needs oidc_audience"),
        ({"oidc_algorithms": "RS256,HS256"}, "'HS256' is not accepted"),
        ({"oidc_algorithms": "none"}, "'none' is not accepted"),
        ({"auth_tokens": "static"}, "accepts the identity provider's tokens only"),
        ({"access_groups": {"g": "writ"}}, "must be read, write or admin"),
    ],
)
def test_oidc_settings_are_checked_at_start(values: dict, message: str) -> None:
    base = {"auth_mode": "oidc", "oidc_issuer": "https://sso.example.com/realms/acme",
            "oidc_audience": "lance-adapter"}
    with pytest.raises(ConfigurationError, match=message):
        load_identities(load_settings(environ={}, overrides={**base, **values}))


@pytest.fixture
def oidc_server(keycloak: Keycloak, tmp_path: Path) -> Iterator[str]:
    with running_server(
        "dir", {"root": str(tmp_path / "root")}, auth_mode="oidc",
        oidc_issuer=keycloak.issuer, oidc_audience=AUDIENCE,
        oidc_identity_claim="preferred_username",
        access_groups={"lance-admins": "admin", "sales-etl": "write@sales"},
        access={"carol": "read"}, audit_log_file=str(tmp_path / "audit.jsonl"),
    ) as url:
        yield url


def test_grants_come_from_the_tokens_groups_through_the_official_client(
    keycloak: Keycloak, oidc_server: str, tmp_path: Path,
) -> None:
    from lance.namespace import RestNamespace

    def client(token: str) -> RestNamespace:
        return RestNamespace(uri=oidc_server, **{"header.Authorization": f"Bearer {token}"})

    admin = client(alice(keycloak))
    for name in ("sales", "hr"):
        admin.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    etl = client(keycloak.client_credentials_token())
    etl.create_table(ln.CreateTableRequest(id=["sales", "orders"]), arrow_stream(sample_table(3)))
    with pytest.raises(ln.PermissionDeniedError, match="identity 'service-account-lance-etl' "
                       r"has no access at table hr\$people; this operation needs write"):
        etl.create_table(ln.CreateTableRequest(id=["hr", "people"]), arrow_stream(sample_table(3)))
    reader = client(keycloak.password_token("carol", PASSWORDS["carol"]))
    assert reader.list_tables(ln.ListTablesRequest(id=["sales"])).tables == ["orders"]
    with pytest.raises(ln.PermissionDeniedError):
        reader.drop_table(ln.DropTableRequest(id=["sales", "orders"]))
    bob = client(keycloak.password_token("bob", PASSWORDS["bob"]))  # sales-etl, too
    assert bob.describe_table(ln.DescribeTableRequest(id=["sales", "orders"])).location
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(line["identity"], line["operation"], line["id"], line["outcome"])
            for line in audit] == [
        ("alice", "CreateNamespace", "sales", "ok"), ("alice", "CreateNamespace", "hr", "ok"),
        ("service-account-lance-etl", "CreateTable", "sales$orders", "ok"),
        ("service-account-lance-etl", "CreateTable", "hr$people", "refused"),
        ("carol", "DropTable", "sales$orders", "refused")]


def test_a_caller_without_a_valid_token_gets_401_with_a_challenge(
    keycloak: Keycloak, oidc_server: str,
) -> None:
    for headers in ({}, {"authorization": "Bearer garbage"}, {"x-api-key": "x.y.z"}):
        answer = httpx.get(f"{oidc_server}/v1/namespace/$/list", headers=headers, timeout=30)
        assert answer.status_code == 401, answer.text
        assert answer.json()["code"] == 16
        assert answer.headers["www-authenticate"].startswith("Bearer")
    token = alice(keycloak)
    answer = httpx.get(f"{oidc_server}/v1/namespace/$/list", timeout=30,
                       headers={"x-api-key": token})  # LanceDB's remote client sends this
    assert answer.status_code == 200, answer.text


def test_lancedb_remote_client_sends_the_token_as_its_api_key(
    keycloak: Keycloak, oidc_server: str,
) -> None:
    import lancedb

    admin = lancedb.connect("db://lance", api_key=alice(keycloak), host_override=oidc_server)
    admin.create_table("events", sample_table(4))
    assert admin.open_table("events").count_rows() == 4
    reader = lancedb.connect("db://lance", api_key=keycloak.password_token(
        "carol", PASSWORDS["carol"]), host_override=oidc_server)
    assert reader.open_table("events").count_rows() == 4
    with pytest.raises(Exception, match="needs write"):
        reader.open_table("events").add(sample_table(1, start=10))


def test_the_documented_keycloak_settings_grant_what_they_say(
    keycloak: Keycloak, tmp_path: Path,
) -> None:
    [block] = blocks_run_by("tests/test_oidc.py",
                            "test_the_documented_keycloak_settings_grant_what_they_say")
    config = tmp_path / "adapter.yaml"
    config.write_text(block.code.replace("https://sso.example.com/realms/lance", keycloak.issuer))
    settings = load_settings(config, environ={})
    fields = {name: getattr(settings, name) for name in (
        "auth_mode", "oidc_issuer", "oidc_audience", "oidc_identity_claim", "oidc_groups_claim",
        "access_groups", "access")}
    with running_server("dir", {"root": str(tmp_path / "root")}, **fields) as url:
        def status(token: str, method: str, path: str, body: dict | None = None) -> int:
            return httpx.request(method, url + path, json=body, timeout=30,
                                 headers={"authorization": f"Bearer {token}"}).status_code

        assert status(alice(keycloak), "POST", "/v1/namespace/sales/create", {}) == 200
        etl = keycloak.client_credentials_token()
        assert status(etl, "GET", "/v1/namespace/sales/table/list") == 200
        assert status(etl, "POST", "/v1/namespace/hr/create", {}) == 403  # write@sales only
        carol = keycloak.password_token("carol", PASSWORDS["carol"])
        assert status(carol, "POST", "/v1/namespace/sales/describe", {}) == 200
        assert status(carol, "POST", "/v1/namespace/sales/drop", {}) == 403


def test_the_checked_token_reaches_the_backend_as_forward_mode_sends_it(
    keycloak: Keycloak,
) -> None:
    from tests.support.plugin_stand_ins import RecordingNamespace

    token = alice(keycloak)
    with running_server("tests.support.plugin_stand_ins.RecordingNamespace",
                        {"name": "oidc-forward"}, auth_mode="oidc", oidc_issuer=keycloak.issuer,
                        oidc_audience=AUDIENCE, access_groups={"lance-admins": "admin"}) as url:
        answer = httpx.get(f"{url}/v1/namespace/a/table/list", timeout=30,
                           headers={"authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
    # A Unity or Iceberg backend with forward_caller_token sends this to its catalog.
    assert RecordingNamespace.instances["oidc-forward"].identities == [{"auth_token": token}]


def test_a_key_rotated_while_the_server_runs_is_accepted_by_it(
    keycloak: Keycloak, oidc_server: str,
) -> None:
    def listed(token: str) -> int:
        return httpx.get(f"{oidc_server}/v1/namespace/$/list", timeout=30,
                         headers={"authorization": f"Bearer {token}"}).status_code

    before = alice(keycloak)
    assert listed(before) == 200  # the server now holds the keys of before the rotation
    keycloak.rotate_keys()
    after = alice(keycloak)
    assert token_header(after)["kid"] != token_header(before)["kid"]
    assert listed(after) == 200


def test_an_issuer_that_cannot_be_reached_is_503_never_401() -> None:
    """Before any key is known, no token can be judged: every request is retryable (code 17),
    also once the fetches are rate-limited. The issuer is a port nothing listens on."""
    from tests.support.common import free_port

    settings = Settings(auth_mode="oidc", oidc_issuer=f"http://127.0.0.1:{free_port()}/realms/x",
                        oidc_audience=AUDIENCE)
    keys = IssuerKeys(settings, clock=Clock(0.0))
    verifier = TokenVerifier(settings, keys=keys)
    token = f"{segment({'alg': 'RS256', 'kid': 'k'})}.{segment({'sub': 'a'})}.c2ln"
    for _ in range(4):
        with pytest.raises(ln.ServiceUnavailableError):
            verify(verifier, token)
    assert keys.fetches == 2  # the rest were held back by the rate limit


@pytest.fixture(scope="module")
def realm_key(keycloak: Keycloak) -> tuple[rsa.RSAPrivateKey, str]:
    """A key the realm publishes (and never signs with): tokens signed with it are the
    issuer's to the server, with claims Keycloak would never write."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return key, keycloak.import_signing_key(pem, "odd-claims")


ODD_CLAIMS = {
    "scope-number": {"scope": 5},
    "scope-boolean": {"scope": True},
    "scp-number-without-scope": {"scope": None, "scp": 5},
    "scope-list-holding-a-number": {"scope": ["profile", 1]},
    "identity-number": {"preferred_username": 5},
    "exp-text": {"exp": "soon"},
    "groups-number": {"groups": 5},
}


@pytest.mark.parametrize("case", ["as-issued", *ODD_CLAIMS])
def test_a_claim_of_an_unexpected_type_is_401_never_a_500(
    keycloak: Keycloak, realm_key: tuple[rsa.RSAPrivateKey, str], tmp_path: Path, case: str,
) -> None:
    import time

    import jwt

    key, kid = realm_key
    now = int(time.time())
    claims = {"iss": keycloak.issuer, "aud": AUDIENCE, "iat": now, "exp": now + 300,
              "preferred_username": "alice", "scope": "openid profile",
              "groups": ["lance-admins"], **ODD_CLAIMS.get(case, {})}
    token = jwt.encode({name: value for name, value in claims.items() if value is not None},
                       key, algorithm="RS256", headers={"kid": kid})
    with running_server("dir", {"root": str(tmp_path)}, auth_mode="oidc",
                        oidc_issuer=keycloak.issuer, oidc_audience=AUDIENCE,
                        oidc_identity_claim="preferred_username",
                        oidc_required_scopes=("profile",),
                        access_groups={"lance-admins": "admin"}) as url:
        answer = httpx.get(f"{url}/v1/namespace/$/list", timeout=30,
                           headers={"authorization": f"Bearer {token}"})
    if case == "as-issued":  # the key is the issuer's: what refuses the others is a claim
        assert answer.status_code == 200, answer.text
    elif case == "groups-number":  # no group it can be: the caller has no grant
        assert answer.status_code == 403 and answer.json()["code"] == 15, answer.text
    else:
        assert answer.status_code == 401, answer.text
        assert answer.json()["code"] == 16
