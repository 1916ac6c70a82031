"""The Hive backends on a secured metastore: the real Hive Metastore 3.1.3 requiring Kerberos
(`hive.metastore.sasl.enabled`, its service principal `hive/127.0.0.1`) with a real MIT
Kerberos KDC (`tests/support/kdc.py`). The server, run as `lance-adapter serve`, authenticates
with its keytab (`KRB5_CLIENT_KTNAME`; as `hive3` and as `hive2`) or with the ticket cache a
`kinit` filled, and serves the whole table life cycle through the metastore; without
Kerberos, without credentials or with the wrong service principal it is refused with a
sentence (503, code 17), and `/readyz` says so."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from backends.core.settings import ConfigurationError
from backends.hive.settings import HiveSettings
from tests.support.cli import start_adapter
from tests.support.common import skip_unless_ci
from tests.support.hive import HiveMetastoreProcess
from tests.support.hive_metastore_real import STANDALONE_SITE
from tests.support.kdc import REALM, Kdc, kdc_programs_missing
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.maven import maven_classpath

pytestmark = pytest.mark.timeout(600)
ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
SERVICE_PRINCIPAL = f"hive/127.0.0.1@{REALM}"
ADAPTER_PRINCIPAL = f"lance-adapter@{REALM}"
ANALYST_PASSWORD = "analyst-password"  # a test realm's user, typed into kinit


@dataclass(frozen=True)
class Realm:
    kdc: Kdc
    adapter_keytab: Path
    workdir: Path


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    missing = kdc_programs_missing()
    if missing:
        skip_unless_ci(f"MIT Kerberos programs missing: {', '.join(missing)} (./run test "
                       "installs krb5-kdc, krb5-admin-server and krb5-user)")
    workdir = tmp_path_factory.mktemp("realm")
    kdc = Kdc(workdir / "kdc")
    kdc.start()
    try:
        kdc.add_principal("hive/127.0.0.1")
        kdc.keytab(SERVICE_PRINCIPAL, workdir / "hive.keytab")
        kdc.add_principal("lance-adapter")
        adapter_keytab = kdc.keytab(ADAPTER_PRINCIPAL, workdir / "adapter.keytab")
        kdc.add_principal("analyst", password=ANALYST_PASSWORD)
        yield Realm(kdc, adapter_keytab, workdir)
    finally:
        kdc.stop()


@pytest.fixture(scope="module")
def metastore(realm: Realm) -> Iterator[HiveMetastoreProcess]:
    """HMS 3.1.3 that takes SASL/GSSAPI connections only."""
    secured = {"hadoop.security.authentication": "kerberos"}
    process = HiveMetastoreProcess(
        realm.workdir / "metastore", jars=maven_classpath("hive-metastore"),
        site={**STANDALONE_SITE, **secured,
              "hive.metastore.sasl.enabled": "true",
              "hive.metastore.kerberos.principal": SERVICE_PRINCIPAL,
              "hive.metastore.kerberos.keytab.file": str(realm.workdir / "hive.keytab")},
        core_site=secured,
        java_flags=(f"-Djava.security.krb5.conf={realm.kdc.krb5_conf}",
                    "--add-exports", "java.security.jgss/sun.security.krb5=ALL-UNNAMED",
                    "--add-opens", "java.security.jgss/sun.security.krb5=ALL-UNNAMED"))
    process.start()
    yield process
    process.stop()


def _serve(realm: Realm, metastore: HiveMetastoreProcess, tmp_path: Path, *properties: str,
           impl: str = "hive3", **environment: str):
    """`lance-adapter serve --impl <impl>` on the secured metastore, with its own (empty
    unless given) ticket cache."""
    arguments = ["--impl", impl, "--prop", f"uri={metastore.uri}",
                 "--prop", f"root={tmp_path / 'lake'}"]
    for prop in properties:
        arguments += ["--prop", prop]
    return start_adapter(tmp_path, *arguments, **{
        **realm.kdc.environment(), "KRB5CCNAME": f"FILE:{tmp_path / 'adapter.ccache'}",
        **environment})


def _ok(answer: httpx.Response) -> httpx.Response:
    assert answer.status_code == 200, answer.text
    return answer


@pytest.mark.parametrize(("impl", "database"), [("hive3", "hive$kerberos_db"),
                                                 ("hive2", "kerberos_db2")])
def test_the_server_serves_a_kerberos_metastore_with_its_keytab(
    realm: Realm, metastore: HiveMetastoreProcess, tmp_path: Path, impl: str, database: str,
) -> None:
    adapter = _serve(realm, metastore, tmp_path, "kerberos=true",
                     f"kerberos.principal={ADAPTER_PRINCIPAL}", impl=impl,
                     KRB5_CLIENT_KTNAME=str(realm.adapter_keytab))
    table = f"{database}$trips"
    try:
        url = adapter.url
        _ok(httpx.get(f"{url}/readyz", timeout=60))
        _ok(httpx.post(f"{url}/v1/namespace/{database}/create", json={}, timeout=120))
        _ok(httpx.post(f"{url}/v1/table/{table}/create", headers=ARROW, timeout=120,
                       content=arrow_stream(sample_table(3))))
        _ok(httpx.post(f"{url}/v1/table/{table}/insert", headers=ARROW, timeout=120,
                       content=arrow_stream(sample_table(2, 10))))
        listed = _ok(httpx.get(f"{url}/v1/namespace/{database}/table/list", timeout=60))
        assert listed.json()["tables"] == ["trips"]
        counted = _ok(httpx.post(f"{url}/v1/table/{table}/count_rows", json={}, timeout=60))
        assert counted.json() == 5
        _ok(httpx.post(f"{url}/v1/table/{table}/drop", json={}, timeout=120))
        _ok(httpx.post(f"{url}/v1/namespace/{database}/drop", json={}, timeout=120))
        parent, _, name = database.rpartition("$")
        assert name not in _ok(httpx.get(f"{url}/v1/namespace/{parent or '$'}/list",
                                         timeout=60)).json()["namespaces"]
    finally:
        assert adapter.stopped_cleanly()


def test_a_kinit_ticket_cache_serves_as_well(
    realm: Realm, metastore: HiveMetastoreProcess, tmp_path: Path,
) -> None:
    cache = tmp_path / "analyst.ccache"
    kinit = subprocess.run(
        ["kinit", "-c", f"FILE:{cache}", f"analyst@{REALM}"], input=ANALYST_PASSWORD + "\n",
        env={**realm.kdc.environment()}, capture_output=True, text=True, timeout=60,
        check=False)
    assert kinit.returncode == 0, kinit.stderr
    adapter = _serve(realm, metastore, tmp_path, "kerberos=true",
                     KRB5CCNAME=f"FILE:{cache}")
    try:
        _ok(httpx.post(f"{adapter.url}/v1/namespace/hive$analyst_db/create", json={},
                       timeout=120))
        assert "analyst_db" in _ok(httpx.get(f"{adapter.url}/v1/namespace/hive/list",
                                             timeout=60)).json()["namespaces"]
        _ok(httpx.post(f"{adapter.url}/v1/namespace/hive$analyst_db/drop", json={}, timeout=120))
    finally:
        assert adapter.stopped_cleanly()


@pytest.mark.parametrize(("properties", "why"), [
    ((), "as a metastore that requires Kerberos does"),
    (("kerberos=true",), "the server has no credentials for the metastore"),
    (("kerberos=true", "kerberos.service-name=other"), "Kerberos: "),
], ids=["no-kerberos", "no-credentials", "wrong-service"])
def test_a_server_the_metastore_does_not_authenticate_is_refused_with_a_sentence(
    realm: Realm, metastore: HiveMetastoreProcess, tmp_path: Path,
    properties: tuple[str, ...], why: str,
) -> None:
    adapter = _serve(realm, metastore, tmp_path, *properties)
    try:
        ready = httpx.get(f"{adapter.url}/readyz", timeout=60)
        assert ready.status_code == 503
        listed = httpx.get(f"{adapter.url}/v1/namespace/$/list", timeout=60)
        assert (listed.status_code, listed.json()["code"]) == (503, 17), listed.text
        assert why in listed.json()["error"]
        assert str(tmp_path) not in listed.text
    finally:
        assert adapter.stopped_cleanly()


def test_kerberos_settings_without_kerberos_are_refused_at_start() -> None:
    with pytest.raises(ConfigurationError, match="needs 'kerberos=true'"):
        HiveSettings.from_properties({"uri": "thrift://127.0.0.1:9083",
                                      "kerberos.principal": ADAPTER_PRINCIPAL})
    assert HiveSettings.from_properties(
        {"hive.kerberos-authentication": "true"}).kerberos_auth() is not None
