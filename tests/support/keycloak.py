"""A real Keycloak identity provider for the tests that validate OpenID Connect tokens.

- `keycloak_home`: Keycloak's distribution (`org.keycloak:keycloak-quarkus-dist`, from Maven
  Central through `mvn`), unpacked once into the test cache outside the checkout
  (`tests.support.maven.cache_root`) and built once for dev mode, so that later starts skip
  Quarkus's augmentation (about 15 s). A lock file makes two test processes fetch it once.
- `running_keycloak`: `kc.sh start-dev` on 127.0.0.1 (HTTP and management ports from
  `free_port`), its state (H2 database, transaction logs) in a per-run home under `workdir`,
  the realm of `tests/support/keycloak_realm.json` imported at start; ready once its health
  endpoint and the realm's discovery document answer; stopped on exit.
- `Keycloak`: the running server and the calls the tests make to it: tokens (client
  credentials, password), the realm's keys (`jwks`), key rotation, group membership and the
  access-token lifespan, all through Keycloak's own endpoints and admin REST API.
- `keycloak`: the session fixture, one server for the whole test run, started on first use.

The realm `lance` (see `keycloak_realm.json`): the confidential client `lance-etl` (client
credentials, secret `ETL_SECRET`, its service account in group `sales-etl`), the public client
`lance-cli` (password grant), the users of `PASSWORDS` (alice in `lance-admins`, bob in
`sales-etl`, carol in none). Access tokens carry `groups` (plain group names), `aud` with
`AUDIENCE`, `preferred_username` and (for users) `email`.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.common import free_port
from tests.support.hive import java_executable
from tests.support.iceberg_rest_server import POLL_SECONDS, _tail
from tests.support.locked import dependency_plugin, locked_version
from tests.support.maven import FETCH_TIMEOUT_SECONDS, cache_root

VERSION = locked_version("keycloak")
ARTIFACT = f"org.keycloak:keycloak-quarkus-dist:{VERSION}:tar.gz"
REALM = "lance"
REALM_FILE = Path(__file__).resolve().with_name("keycloak_realm.json")
ADMIN_USERNAME, ADMIN_PASSWORD = "admin", "admin-password"
ETL_CLIENT, ETL_SECRET = "lance-etl", "lance-etl-secret"
ETL_SERVICE_ACCOUNT = f"service-account-{ETL_CLIENT}"
CLI_CLIENT = "lance-cli"
AUDIENCE = "lance-adapter"
PASSWORDS = {"alice": "alice-password", "bob": "bob-password", "carol": "carol-password"}
# Build-time options: the one-time build and every start must name the same ones, or the
# start would rebuild (15 s, and into the shared cache).
BUILD_OPTIONS = ["--health-enabled=true"]
HEAP = "-Xms64m -Xmx512m"
# C1 only: starts take about 5 s less on two cores; the tests need no peak throughput.
JAVA_OPTS_APPEND = "-XX:TieredStopAtLevel=1"
BUILD_TIMEOUT_SECONDS = 300
START_TIMEOUT_SECONDS = 240.0
STOP_TIMEOUT_SECONDS = 30.0
HTTP_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


# -- the distribution, fetched and built once ------------------------------------------------

def keycloak_home() -> Path:
    """The unpacked distribution in the cache, built for dev mode; fetched on first use."""
    target = cache_root() / "keycloak" / f"keycloak-{VERSION}"
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".keycloak-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes fetch once
        if not (target / ".complete").exists():
            _install(target)
    return target


def _install(target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    archive = _download(partial)
    # Python's tarfile, not `dependency:unpack`: Maven's old unarchiver cuts long entry names.
    with tarfile.open(archive) as tar:
        tar.extractall(partial, filter="data")
    home = partial / f"keycloak-{VERSION}"
    _build_for_dev(home)
    (home / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    home.rename(target)
    shutil.rmtree(partial, ignore_errors=True)


def _download(directory: Path) -> Path:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("mvn not found: Keycloak is fetched from Maven Central with Maven")
    command = [mvn, "-q", "-B", dependency_plugin("copy"), f"-Dartifact={ARTIFACT}",
               f"-DoutputDirectory={directory}"]
    # cwd: a folder with no pom.xml, so that Maven runs without a project.
    fetched = subprocess.run(command, cwd=directory, capture_output=True, text=True,
                             timeout=FETCH_TIMEOUT_SECONDS, check=False)
    if fetched.returncode != 0:
        raise RuntimeError(f"fetching {ARTIFACT} failed:\n{fetched.stdout[-4000:]}"
                           f"{fetched.stderr[-4000:]}")
    return directory / f"keycloak-quarkus-dist-{VERSION}.tar.gz"


def _build_for_dev(home: Path) -> None:
    """Run Quarkus's augmentation for dev mode once. `kc.sh build` refuses the dev profile and
    `kc.sh start-dev` would go on to start the server, so this runs Keycloak's entry point as
    kc.sh does: after augmenting, it exits with 10 (kc.sh's "relaunch me")."""
    command = [java_executable(), "-Xmx512m", f"-Dkc.home.dir={home}",
               f"-Djboss.server.config.dir={home / 'conf'}",
               "-Djava.util.logging.manager=org.jboss.logmanager.LogManager",
               "-Dpicocli.disable.closures=true", "-cp", str(home / "lib" / "quarkus-run.jar"),
               "io.quarkus.bootstrap.runner.QuarkusEntryPoint", "start-dev", *BUILD_OPTIONS]
    built = subprocess.run(command, cwd=home, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=BUILD_TIMEOUT_SECONDS, check=False)
    if built.returncode != 10:
        raise RuntimeError(f"building Keycloak for dev mode failed ({built.returncode}):\n"
                           f"{built.stdout[-4000:]}{built.stderr[-4000:]}")


def _run_home(workdir: Path) -> Path:
    """A home of Keycloak's for one run: its own `data/` (database, transaction logs, the realm
    to import), the rest linked to the cached distribution. kc.sh is copied, not linked: it
    takes the home from its own resolved path."""
    cached, home = keycloak_home(), workdir / "home"
    (home / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(cached / "bin" / "kc.sh", home / "bin" / "kc.sh")
    for name in ("lib", "conf", "themes", "providers"):
        link = home / name
        if not link.is_symlink():
            link.symlink_to(cached / name, target_is_directory=True)
    (home / "data" / "import").mkdir(parents=True, exist_ok=True)
    shutil.copy2(REALM_FILE, home / "data" / "import" / f"{REALM}-realm.json")
    return home


# -- the running server ----------------------------------------------------------------------

def _checked(response: httpx.Response) -> httpx.Response:
    """`response`, or an error that shows Keycloak's own answer."""
    if response.is_error:
        raise RuntimeError(f"Keycloak answered {response.request.method} {response.url} with "
                           f"{response.status_code}: {response.text[:2000]}")
    return response


@dataclass(frozen=True)
class Keycloak:
    """A running Keycloak with the realm `lance`; every call has a timeout."""

    url: str
    management_url: str
    log: Path
    started_in_seconds: float
    realm: str = REALM

    @property
    def issuer(self) -> str:
        return f"{self.url}/realms/{self.realm}"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/token"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/certs"

    def _token(self, endpoint: str, form: dict[str, str]) -> str:
        answer = _checked(httpx.post(endpoint, data=form, timeout=HTTP_TIMEOUT))
        return answer.json()["access_token"]

    def admin_token(self) -> str:
        """A fresh token of the bootstrap admin (master realm, `admin-cli`); it lives 60 s."""
        form = {"grant_type": "password", "client_id": "admin-cli",
                "username": ADMIN_USERNAME, "password": ADMIN_PASSWORD}
        return self._token(f"{self.url}/realms/master/protocol/openid-connect/token", form)

    def client_credentials_token(self, client_id: str = ETL_CLIENT,
                                 secret: str = ETL_SECRET) -> str:
        form = {"grant_type": "client_credentials", "client_id": client_id,
                "client_secret": secret}
        return self._token(self.token_endpoint, form)

    def password_token(self, username: str, password: str, client_id: str = CLI_CLIENT) -> str:
        form = {"grant_type": "password", "client_id": client_id, "username": username,
                "password": password, "scope": "openid"}
        return self._token(self.token_endpoint, form)

    def jwks(self) -> dict[str, Any]:
        """The realm's published keys (`{"keys": [...]}`), as a validator fetches them."""
        return _checked(httpx.get(self.jwks_uri, timeout=HTTP_TIMEOUT)).json()

    @contextmanager
    def _admin(self) -> Iterator[httpx.Client]:
        """A client of the realm's admin API (`/admin/realms/<realm>/...`)."""
        headers = {"Authorization": f"Bearer {self.admin_token()}"}
        with httpx.Client(base_url=f"{self.url}/admin/realms/{self.realm}", headers=headers,
                          timeout=HTTP_TIMEOUT) as client:
            yield client

    def rotate_keys(self) -> str:
        """Make Keycloak sign new tokens with a new RSA key and return its `kid`: a new
        `rsa-generated` key provider outranks every earlier one. The old keys stay published,
        so tokens signed before still validate."""
        with self._admin() as admin:
            realm_id = _checked(admin.get("")).json()["id"]
            keys = _checked(admin.get("/keys")).json()["keys"]
            priority = 1 + max((key["providerPriority"] for key in keys
                                if key.get("algorithm") == "RS256"), default=100)
            component = {
                "name": f"rsa-rotated-{priority}", "providerId": "rsa-generated",
                "providerType": "org.keycloak.keys.KeyProvider", "parentId": realm_id,
                "config": {"priority": [str(priority)], "algorithm": ["RS256"],
                           "keySize": ["2048"], "active": ["true"], "enabled": ["true"]},
            }
            _checked(admin.post("/components", json=component))
            return _checked(admin.get("/keys")).json()["active"]["RS256"]

    def import_signing_key(self, private_pem: str, name: str) -> str:
        """Publish the RSA key `private_pem` as one of the realm's keys (an `rsa` key provider
        of the lowest priority: Keycloak keeps signing with its own) and return its `kid`. A
        test holding the key signs tokens Keycloak would never issue (claims of other types),
        which a server trusting the realm checks as the issuer's."""
        with self._admin() as admin:
            realm_id = _checked(admin.get("")).json()["id"]
            component = {
                "name": name, "providerId": "rsa", "providerType": "org.keycloak.keys.KeyProvider",
                "parentId": realm_id,
                "config": {"priority": ["0"], "algorithm": ["RS256"], "privateKey": [private_pem],
                           "active": ["true"], "enabled": ["true"]},
            }
            created = _checked(admin.post("/components", json=component))
            provider = created.headers["location"].rsplit("/", 1)[-1]
            keys = _checked(admin.get("/keys")).json()["keys"]
            return next(key["kid"] for key in keys if key.get("providerId") == provider)

    def set_groups(self, username: str, groups: Iterable[str]) -> None:
        """Make `username` (a user, or a service account such as `ETL_SERVICE_ACCOUNT`) a
        member of exactly `groups`; groups the realm lacks are created."""
        wanted = set(groups)
        with self._admin() as admin:
            user = _user_id(admin, username)
            current = {group["name"]: group["id"]
                       for group in _checked(admin.get(f"/users/{user}/groups")).json()}
            for name in current.keys() - wanted:
                _checked(admin.delete(f"/users/{user}/groups/{current[name]}"))
            for name in wanted - current.keys():
                _checked(admin.put(f"/users/{user}/groups/{_group_id(admin, name)}"))

    def set_access_token_lifespan(self, seconds: int) -> None:
        """The lifespan of access tokens issued from now on (the realm starts with 300 s)."""
        with self._admin() as admin:
            _checked(admin.put("", json={"accessTokenLifespan": seconds}))


def _user_id(admin: httpx.Client, username: str) -> str:
    found = _checked(admin.get("/users", params={"username": username, "exact": "true"}))
    if not found.json():
        raise LookupError(f"no user {username} in the realm")
    return found.json()[0]["id"]


def _group_id(admin: httpx.Client, name: str) -> str:
    found = admin.get(f"/group-by-path/{name}")
    if found.status_code == 404:
        created = _checked(admin.post("/groups", json={"name": name}))
        return created.headers["Location"].rsplit("/", 1)[-1]
    return _checked(found).json()["id"]


def _ready(server: Keycloak) -> bool:
    """Whether Keycloak is up (health) and has imported the realm (its discovery document)."""
    try:
        health = httpx.get(f"{server.management_url}/health/ready", timeout=2)
        discovery = f"{server.issuer}/.well-known/openid-configuration"
        return health.status_code == 200 and httpx.get(discovery, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _wait_until_ready(process: subprocess.Popen[bytes], server: Keycloak) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not _ready(server):
        if process.poll() is not None:
            raise RuntimeError(f"Keycloak exited ({process.returncode}); see {server.log}:\n"
                               f"{_tail(server.log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"Keycloak was not ready in {START_TIMEOUT_SECONDS:.0f} s; see "
                               f"{server.log}:\n{_tail(server.log)}")
        time.sleep(POLL_SECONDS)  # polling the endpoints: Keycloak signals readiness no other way


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to kc.sh's process group (kc.sh and its Java), SIGKILL if it outlives the bound:
    killing kc.sh alone would leave its Java running."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sent)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            continue


def _environment() -> dict[str, str]:
    """kc.sh's variables, none but these: the caller's own `KC_*` and `JAVA_OPTS*` (which
    Keycloak reads as its options) are left out."""
    inherited = {key: value for key, value in os.environ.items()
                 if not key.startswith(("KC_", "JAVA_OPTS", "QUARKUS_"))}
    return {
        **inherited,
        "JAVA": java_executable(),  # kc.sh's own variable for the Java it runs
        "JAVA_OPTS_KC_HEAP": HEAP,
        "JAVA_OPTS_APPEND": JAVA_OPTS_APPEND,
        "KC_BOOTSTRAP_ADMIN_USERNAME": ADMIN_USERNAME,
        "KC_BOOTSTRAP_ADMIN_PASSWORD": ADMIN_PASSWORD,
    }


@contextmanager
def running_keycloak(workdir: Path) -> Iterator[Keycloak]:
    """Keycloak in dev mode with the realm `lance`, its state and log under `workdir`, on
    127.0.0.1 only; stopped on exit."""
    home = _run_home(workdir)
    port, management_port = free_port(), free_port()
    server = Keycloak(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{management_port}",
                      workdir / "keycloak.log", 0.0)
    command = ["sh", str(home / "bin" / "kc.sh"), "start-dev", "--import-realm",
               "--http-host=127.0.0.1", f"--http-port={port}",
               f"--http-management-port={management_port}", *BUILD_OPTIONS]
    started = time.monotonic()
    with open(server.log, "wb") as output:
        process = subprocess.Popen(command, cwd=workdir, env=_environment(), stdout=output,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    try:
        _wait_until_ready(process, server)
        yield replace(server, started_in_seconds=time.monotonic() - started)
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def keycloak(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keycloak]:
    """One Keycloak for the whole test run, started by its first user. Tests that change it
    (groups, lifespan) put back what they changed; rotated keys stay."""
    with running_keycloak(tmp_path_factory.mktemp("keycloak")) as server:
        yield server


def token_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified: for tests that look at what Keycloak put in it."""
    return _jwt_part(token, 1)


def token_header(token: str) -> dict[str, Any]:
    """The header of a JWT (`alg`, `kid`), unverified."""
    return _jwt_part(token, 0)


def _jwt_part(token: str, index: int) -> dict[str, Any]:
    part = token.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
