"""A real MIT Kerberos KDC (Debian's `krb5-kdc`, installed by `./run test`) for the secured
metastore tests: a realm of its own in a temporary directory, served on a free 127.0.0.1 port
over TCP and UDP, with principals and keytabs made by `kadmin.local`.

`Kdc.environment()` is what a process needs to use the realm (`KRB5_CONFIG`); the krb5.conf
turns off reverse DNS and host name canonicalisation, so that a service principal names the
host exactly as its clients reach it (`hive/127.0.0.1@...`), and permits only the AES SHA-1
encryption types, which the metastore's Java 17 and MIT krb5 both have.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.support.common import free_port, stop_process

REALM = "ADAPTER.TEST"
ENCTYPES = "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96"
START_TIMEOUT_SECONDS = 30
_PROGRAMS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit", "klist")


def kdc_programs_missing() -> list[str]:
    """The MIT Kerberos programs this machine lacks (`./run test` installs them)."""
    return [name for name in _PROGRAMS
            if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]


def _program(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class Kdc:
    """A KDC for `REALM` under `workdir`, started by `start()`, stopped by `stop()`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.krb5_conf = workdir / "krb5.conf"
        self._kdc_conf = workdir / "kdc.conf"
        self._process: subprocess.Popen | None = None
        workdir.mkdir(parents=True, exist_ok=True)
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"  default_realm = {REALM}\n"
            "  dns_lookup_kdc = false\n  dns_lookup_realm = false\n"
            "  rdns = false\n  dns_canonicalize_hostname = false\n"
            "  udp_preference_limit = 1\n"  # TCP: Java and MIT agree on it
            f"  default_tkt_enctypes = {ENCTYPES}\n  default_tgs_enctypes = {ENCTYPES}\n"
            f"  permitted_enctypes = {ENCTYPES}\n"
            "  ticket_lifetime = 10h\n  forwardable = true\n"
            f"[realms]\n  {REALM} = {{\n    kdc = 127.0.0.1:{self.port}\n  }}\n"
        )
        self._kdc_conf.write_text(
            "[kdcdefaults]\n"
            f"  kdc_ports = {self.port}\n  kdc_tcp_listen = 127.0.0.1:{self.port}\n"
            f"  kdc_listen = 127.0.0.1:{self.port}\n"
            f"[realms]\n  {REALM} = {{\n"
            f"    database_name = {workdir / 'principal'}\n"
            f"    key_stash_file = {workdir / 'stash'}\n"
            f"    acl_file = {workdir / 'kadm5.acl'}\n"
            f"    supported_enctypes = {' '.join(f'{e}:normal' for e in ENCTYPES.split())}\n"
            "    max_life = 10h\n  }\n"
            f"[logging]\n  kdc = FILE:{workdir / 'kdc.log'}\n"
        )

    def environment(self) -> dict[str, str]:
        """The variables a process of this realm needs."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self._kdc_conf)}

    def _run(self, *command: str) -> str:
        done = subprocess.run(
            [_program(command[0]), *command[1:]], env={**os.environ, **self.environment()},
            capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed: {done.stderr.strip() or done.stdout}")
        return done.stdout

    def start(self) -> None:
        self._run("kdb5_util", "create", "-s", "-r", REALM, "-P", "master-password")
        with open(self.workdir / "krb5kdc.out", "ab") as log:
            self._process = subprocess.Popen(
                [_program("krb5kdc"), "-n", "-r", REALM], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env={**os.environ, **self.environment()})
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"krb5kdc exited; see {self.workdir / 'krb5kdc.out'}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("krb5kdc did not listen in time") from None
                time.sleep(0.1)

    def add_principal(self, name: str, password: str | None = None) -> str:
        """`name@REALM`, with a password or (None) a random key."""
        secret = ["-pw", password] if password else ["-randkey"]
        self._run("kadmin.local", "-r", REALM, "-q", f"addprinc {' '.join(secret)} {name}")
        return f"{name}@{REALM}"

    def keytab(self, principal: str, path: Path) -> Path:
        """A keytab at `path` holding `principal`'s current keys (made anew: a new kvno)."""
        self._run("kadmin.local", "-r", REALM, "-q",
                  f"ktadd -k {path} -e {','.join(f'{e}:normal' for e in ENCTYPES.split())} "
                  f"{principal}")
        return path

    def stop(self) -> None:
        stop_process(self._process, grace_seconds=10)
        self._process = None
