"""The optional client libraries, each installed by one extra of pyproject.toml (`Extra`):
`glue` and `vending` bring boto3, `hive` pyiceberg's Thrift bindings of the Hive Metastore,
`kerberos` the SASL/GSSAPI client of a secured one.

A module that needs one is imported only when what needs it is built (the registry imports a
backend's package when it builds that backend; the vendor imports `backends.vending.sts` when
it mints), so the server runs every other backend without it. When it is missing, `missing`
turns the import error into one `ConfigurationError` sentence naming the install command.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from backends.core.settings import ConfigurationError

DISTRIBUTION = "lance-namespace-adapter"


@dataclass(frozen=True)
class Extra:
    """One extra: its name in pyproject.toml, the library it installs as the error names it,
    and the top-level modules of that library the code imports."""

    name: str
    library: str
    modules: frozenset[str]

    def install_command(self) -> str:
        return f"pip install '{DISTRIBUTION}[{self.name}]'"

    def missing(self, user: str, error: ImportError) -> ConfigurationError | None:
        """The error saying that `user` needs this extra, when `error` is one of its modules
        not being installed; None for any other import error, which is reported as it is."""
        if not isinstance(error, ModuleNotFoundError):
            return None
        if (error.name or "").partition(".")[0] not in self.modules:
            return None
        return ConfigurationError(f"{user} needs {self.library}: {self.install_command()}")

    def load(self, module: str, user: str) -> ModuleType:
        """`module`, which imports this extra's library; the one-sentence error for `user`
        when the library is not installed."""
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as error:
            missing = self.missing(user, error)
            if missing is None:
                raise
            raise missing from None


GLUE = Extra("glue", "boto3", frozenset({"boto3", "botocore"}))
HIVE = Extra("hive", "pyiceberg[hive]", frozenset({"pyiceberg", "hive_metastore", "thrift"}))
VENDING = Extra("vending", "boto3", frozenset({"boto3", "botocore"}))
# Kerberos to a secured Hive Metastore (`kerberos=true`): built from source against MIT
# Kerberos (Debian: libkrb5-dev), so not in `[all]`.
KERBEROS = Extra("kerberos", "kerberos and pure-sasl", frozenset({"kerberos", "puresasl"}))
# Every extra of a catalog client, the ones `[all]` installs.
EXTRAS: tuple[Extra, ...] = (GLUE, HIVE, VENDING)
