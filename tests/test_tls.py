"""HTTPS served by the server itself (`tls_cert_file`, `tls_key_file`, `tls_client_ca_file`),
with real certificates made here (a CA, the server's for 127.0.0.1, a client's) and real TLS
clients: httpx and the official generated client (urllib3). Bad settings stop the start with
one line."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.support.cli import CLI, ROOT
from tests.support.common import free_port
from tests.support.doc_blocks import blocks_run_by


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _issue(directory: Path, stem: str, subject: str, issuer: tuple[x509.Name, object] | None,
           usage: x509.ObjectIdentifier | None) -> tuple[x509.Name, object]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = _name(subject)
    issuer_name, issuer_key = issuer or (name, key)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1)))
    if usage is None:  # the CA
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
    else:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), False)
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
    certificate = builder.sign(issuer_key, hashes.SHA256())
    (directory / f"{stem}.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (directory / f"{stem}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return name, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca = _issue(directory, "ca", "test CA", None, None)
    _issue(directory, "server", "127.0.0.1", ca, ExtendedKeyUsageOID.SERVER_AUTH)
    _issue(directory, "client", "etl", ca, ExtendedKeyUsageOID.CLIENT_AUTH)
    return Pki(directory / "ca.pem", directory / "server.pem", directory / "server.key",
               directory / "client.pem", directory / "client.key")


def _environment(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("LANCE_ADAPTER_")}
    env.update(PYTHONPATH=str(ROOT), LANCE_ADAPTER_WORKERS="1",
               LANCE_ADAPTER_PROP_ROOT=str(tmp_path / "root"),
               **{f"LANCE_ADAPTER_{name.upper()}": value for name, value in settings.items()})
    return env


def _documented_config(directory: Path, pki: Pki) -> Path:
    """docs/security.md's TLS settings as written, naming this test's files."""
    (block,) = blocks_run_by("tests/test_tls.py",
                             "test_client_certificates_are_required_when_a_client_ca_is_set")
    config = directory / "adapter.yaml"
    config.write_text(block.code.replace("/etc/lance/tls/server.pem", str(pki.server_cert))
                      .replace("/etc/lance/tls/server.key", str(pki.server_key))
                      .replace("/etc/lance/tls/clients-ca.pem", str(pki.ca)))
    return config


@pytest.fixture
def https(tmp_path: Path, pki: Pki, request: pytest.FixtureRequest) -> Iterator[str]:
    """A server on HTTPS (asking for client certificates when the test is marked so)."""
    settings = {"tls_cert_file": str(pki.server_cert), "tls_key_file": str(pki.server_key)}
    if request.node.get_closest_marker("client_certificates"):
        settings["tls_client_ca_file"] = str(pki.ca)
    arguments = []
    if request.node.get_closest_marker("documented_settings"):
        settings, arguments = {}, ["--config", str(_documented_config(tmp_path, pki))]
    port = free_port()
    process = subprocess.Popen([CLI, "serve", "--port", str(port), *arguments],
                               env=_environment(tmp_path, **settings),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"https://127.0.0.1:{port}"
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.load_cert_chain(pki.client_cert, pki.client_key)
    deadline = time.monotonic() + 60
    try:
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                httpx.get(f"{url}/healthz", verify=context, timeout=5).raise_for_status()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_https_serves_the_protocol_to_a_client_that_trusts_its_ca(https: str, pki: Pki) -> None:
    created = httpx.post(f"{https}/v1/namespace/sales/create", json={}, verify=str(pki.ca))
    assert created.status_code == 200, created.text
    listed = httpx.get(f"{https}/v1/namespace/$/list", verify=str(pki.ca))
    assert listed.json()["namespaces"] == ["sales"]
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{https}/healthz")  # the system's CAs do not know this one
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(f"{https.replace('https://', 'http://')}/healthz")  # no plain HTTP


def test_the_official_client_reaches_the_server_over_https(https: str, pki: Pki) -> None:
    from lance_namespace_urllib3_client import ApiClient, Configuration
    from lance_namespace_urllib3_client.api import NamespaceApi

    configuration = Configuration(host=https)
    configuration.ssl_ca_cert = str(pki.ca)
    with ApiClient(configuration) as client:
        assert NamespaceApi(client).list_namespaces("$").namespaces == []


@pytest.mark.parametrize("configured", [
    pytest.param("by settings", marks=pytest.mark.client_certificates),
    pytest.param("as docs/security.md writes", marks=pytest.mark.documented_settings),
])
def test_client_certificates_are_required_when_a_client_ca_is_set(
        https: str, pki: Pki, configured: str) -> None:
    with pytest.raises((httpx.ReadError, httpx.ConnectError, httpx.RemoteProtocolError)):
        httpx.get(f"{https}/v1/namespace/$/list", verify=str(pki.ca)).raise_for_status()
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.load_cert_chain(pki.client_cert, pki.client_key)
    answer = httpx.get(f"{https}/v1/namespace/$/list", verify=context)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(("settings", "says"), [
    ({"tls_cert_file": "server.pem"}, "tls_cert_file and tls_key_file are set together"),
    ({"tls_client_ca_file": "ca.pem"}, "tls_client_ca_file asks clients for certificates"),
    ({"tls_cert_file": "missing.pem", "tls_key_file": "missing.key"},
     "do not load as a PEM certificate chain and its key: No such file or directory"),
    ({"tls_cert_file": "server.key", "tls_key_file": "server.key"},
     "do not load as a PEM certificate chain and its key"),
])
def test_bad_tls_settings_stop_the_start_with_one_line(
        tmp_path: Path, pki: Pki, settings: dict[str, str], says: str) -> None:
    in_pki = {name: str(pki.ca.parent / value) for name, value in settings.items()}
    result = subprocess.run([CLI, "serve", "--port", "0"], env=_environment(tmp_path, **in_pki),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "PRIVATE KEY" not in result.stderr + result.stdout
