"""The server's settings: one declaration per setting (its key, default, checks, command-line
flag and documentation), read by `app.config` from a config file, the environment and the
command line, and documented by the table in docs/configuration.md generated from it
(`settings_table`, run by `scripts/readme_tables.py`); the same mechanism as every backend's
properties (`backends.core.settings`). `Settings` adds to the serving ones
(`app.serving_settings`) the callers' authentication and grants, the caches and maintenance.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

from app.serving_settings import ServingSettings
from backends.core.settings import (
    ConfigurationError,
    default_text,
    is_mapping,
    setting,
)

AUTH_MODES = ("off", "token", "forward", "oidc")
# Signature algorithms an OIDC token may use (asymmetric: a public key verifies, nothing the
# server holds can sign); `none` and the HMAC ones are never accepted.
ACCEPTABLE_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                         "ES256", "ES384", "ES512", "EdDSA")



@dataclass(frozen=True, kw_only=True)
class Settings(ServingSettings):
    """Every server setting; made by `app.config.load_settings` (or directly, in tests)."""

    auth_mode: str = setting(
        "", 'off',
        '`off`, `token`, `forward` or `oidc` (see [Authentication](security.md#authentication))',
        choices=AUTH_MODES, cli='caller authentication (default off)',
    )
    auth_tokens: str = setting(
        "", '',
        'Accepted tokens, comma-separated (prefer the file)',
        secret=True,
    )
    auth_tokens_file: str = setting(
        "", '',
        'File of accepted tokens, one a line, `#` comments; a line `<identity> <token>` names the'
        ' caller (for [credential vending](security.md#credential-vending)); format under '
        '[Authentication](security.md#authentication)',
        cli='file of accepted tokens, one a line',
    )
    auth_reload_interval: float = setting(
        "", 2.0,
        "Seconds between two looks at `auth_tokens_file` and `access_file` for changes (on the "
        "next request, in each worker): a changed file replaces the tokens and grants whole; one "
        "with a mistake keeps the previous ones and logs a warning. `0`: read at start only",
        minimum=0,
    )
    auth_forward_unchecked: bool = setting(
        "", False,
        'With `auth_mode: forward` and no tokens, start even though the backend judges no caller '
        '(any bearer token may then do everything); without it such a server refuses to start '
        '([Authentication](security.md#authentication))',
    )
    allowed_origins: str = setting(
        "", '',
        'With auth off: comma-separated web origins (`https://app.example.com`, '
        '`http://localhost:8080`) whose pages may call the server from a browser besides its own '
        'origin; their hosts are also accepted as `Host` on a loopback-bound server (see '
        '[Authentication](security.md#authentication)). A malformed entry stops the start',
    )
    oidc_issuer: str = setting(
        "", "",
        "With `auth_mode: oidc`: the identity provider's issuer URL, as its tokens name it in "
        "`iss` (e.g. `https://sso.example.com/realms/acme`); its keys are found through "
        "`<issuer>/.well-known/openid-configuration`. `https://` (plain `http://` only on "
        "127.0.0.1 or localhost)",
    )
    oidc_audience: str = setting(
        "", "",
        "With `auth_mode: oidc`: the `aud` a token must carry to be accepted here (a token "
        "meant for another service is refused)",
    )
    oidc_identity_claim: str = setting(
        "", "sub",
        "The claim naming the caller (`sub`, `preferred_username`, `email`, ...): the "
        "identity that `access` entries, credential vending and the logs use",
    )
    oidc_groups_claim: str = setting(
        "", "groups",
        "The claim holding the caller's groups or roles, which `access_groups` maps to grants; "
        "a dotted path reaches into an object (Keycloak's `realm_access.roles`)",
    )
    oidc_algorithms: tuple[str, ...] = setting(
        "", ACCEPTABLE_ALGORITHMS,
        "Signature algorithms accepted, comma-separated; only asymmetric ones can be listed "
        "(`none` and HMAC never are)",
    )
    oidc_required_scopes: tuple[str, ...] = setting(
        "", (),
        "Scopes every token must hold (its `scope` or `scp` claim), comma-separated",
    )
    oidc_clock_skew: float = setting(
        "", 30.0,
        "Seconds of clock difference allowed when checking a token's `exp`, `nbf` and `iat`",
        minimum=0,
    )
    oidc_keys_max_age: float = setting(
        "", 3600.0,
        "Seconds the issuer's keys are used before they are fetched again (a key the issuer "
        "withdrew stops working within this time)",
        minimum=1,
    )
    oidc_keys_min_refresh: float = setting(
        "", 10.0,
        "Seconds at least between two fetches of the issuer's keys caused by tokens naming an "
        "unknown key: a rotation is picked up at once, made-up key ids cannot flood the issuer",
        minimum=0,
    )
    access: Mapping[str, str] = setting(
        "", {},
        'With `auth_mode: token` or `oidc`: each identity\'s grants, e.g. `{"etl": "read, '
        'write@sales"}` (see [Authentication](security.md#authentication)); refused at start '
        'with another `auth_mode`',
    )
    access_groups: Mapping[str, str] = setting(
        "", {},
        'With `auth_mode: oidc`: the grants of each group or role of `oidc_groups_claim`, e.g. '
        '`{"lance-admins": "admin", "sales-etl": "write@sales"}`; a caller gets its identity\'s '
        'and all its groups\' grants',
    )
    access_file: str = setting(
        "", "",
        "A YAML file holding `access`, `access_groups` and/or `access_default`, used instead of "
        "those settings and reloaded when it changes (see `auth_reload_interval`)",
    )
    access_default: str = setting(
        "", "",
        "Grants of a caller that neither `access` nor `access_groups` names (a bare token, an "
        "unmapped identity): `read`, `write@ns`, `none`, ...",
        shown_default="`admin` with `auth_mode: token`, `none` with `oidc`",
    )
    audit_log: bool = setting(
        "", True,
        "One JSON line per call that changes anything (its outcome too) and per credential "
        "vend: who, from where, what, the outcome (see [Audit trail](security.md#audit-trail))",
    )
    audit_log_file: str = setting(
        "", "",
        "Where the audit lines are appended instead of the server's log (logger "
        "`lance_adapter.audit`); the workers of one server share the file",
    )
    external_locations: Mapping[str, str] = setting(
        "", {},
        "Storage prefixes outside the backend's root where existing data may be registered, each "
        'bound to the namespace subtree allowed to register there, e.g. `{"s3://legacy/hr/": '
        '"hr", "s3://shared/features/": "ml$features"}` (empty namespace: every one); see '
        '[External locations](security.md#external-locations). A bad entry stops the start',
    )
    external_locations_purge: bool = setting(
        "", False,
        'Whether DropTable of a table in an external location deletes its data (only when its '
        'ownership record names the table); off, the table is deregistered and its data left',
    )
    metrics_identities: bool = setting(
        "", False,
        'Whether `/metrics` (answered without credentials) names the identities of '
        '`auth_tokens_file` in the `identity` label of `lance_adapter_credentials_vended_total`; '
        'off, a named caller is `hidden` (an unnamed one is `none` either way)',
    )
    metadata_cache: bool = setting(
        "", True,
        'Cache DescribeTable, TableExists, ListTables, ListNamespaces and DescribeNamespace '
        'answers of the built-in backends, and CountTableRows on a local `dir` root '
        '(see [Metadata cache](operations.md#metadata-cache))',
    )
    metadata_cache_ttl: float = setting(
        "", 0.0,
        'Seconds an answer nothing validates (catalog backends, object-store roots) is served '
        'without asking its source. `0`: such answers are not cached, so changes made by other '
        'tools are seen by the next request; above 0, they stay hidden up to that long (opt in '
        'only where that lag is acceptable)',
        minimum=0,
    )
    metadata_cache_validated_ttl: float = setting(
        "", 30.0,
        'Seconds an answer of a local `dir` root, re-checked against the storage on every hit, is'
        ' kept at most',
        minimum=0,
    )
    metadata_cache_entries: int = setting(
        "", 10000,
        'Entries per worker; the oldest goes first',
        minimum=1,
    )
    lancedb_root_database: str = setting(
        "", 'lance',
        'The LanceDB database (`lancedb.connect("db://<name>", ...)`) whose tables are the '
        "root's; every other database is the root's child namespace of that name, as LanceDB's "
        '`connect_catalog` makes them (see [Clients](clients.md#lancedb)). Empty: every database '
        'is a child namespace',
    )
    maintenance: bool = setting(
        "", True,
        'Table maintenance in the server: passes that compact small fragments, bring indexes up '
        'to date and remove old versions (see [Table '
        'maintenance](operations.md#table-maintenance)); `lance-adapter maintain` runs one pass '
        'from a scheduled job',
    )
    maintenance_interval: float = setting(
        "", 600.0,
        'Seconds between two maintenance passes; must be positive (turn maintenance off with '
        '`maintenance: false`)',
    )
    maintenance_after_writes: int = setting(
        "", 8,
        'Between the passes, a worker compacts a table (and brings its indexes up to date) '
        'once it has written rows into it (insert, merge, update, delete) this many times '
        'since it last did, so that many small writes do not slow its reads; `0`: only the '
        'passes',
        minimum=0,
    )
    maintenance_min_small_fragments: int = setting(
        "", 8,
        'A table is compacted once it holds this many fragments of fewer rows than '
        '`maintenance_target_rows_per_fragment`',
        minimum=1,
    )
    maintenance_target_rows_per_fragment: int = setting(
        "", 1048576,
        'Rows a compacted fragment holds',
        minimum=1,
    )
    maintenance_version_retention: float = setting(
        "", 604800.0,
        'Seconds a version is kept; older ones (not the latest, nor tagged ones) are removed. '
        '`0`: keep every version',
        minimum=0,
    )
    maintenance_abandoned_after: float = setting(
        "", 3600.0,
        "Seconds after which a pass removes a `dir` local root's table directory left by a killed"
        ' create (no manifest entry, no committed version, nothing in it changed for that long); '
        "a create in flight, also another replica's, is never that old",
        minimum=0,
    )

    def check(self) -> None:
        """The checks across settings, and those a minimum cannot say."""
        super().check()
        if self.maintenance_interval <= 0:
            raise ConfigurationError("setting 'maintenance_interval' must be positive; turn "
                                     "maintenance off with 'maintenance: false'")
        self._check_access_file()
        if self.auth_mode == "oidc":
            self._check_oidc()

    def _check_access_file(self) -> None:
        inline = [name for name in ("access", "access_groups", "access_default")
                  if getattr(self, name)]
        if self.access_file and inline:
            raise ConfigurationError(f"setting '{inline[0]}' and access_file both give grants: "
                                     "keep them in one place")

    def _check_oidc(self) -> None:
        issuer = urlsplit(self.oidc_issuer)
        loopback = issuer.hostname in ("127.0.0.1", "::1", "localhost")
        if issuer.scheme != "https" and not (issuer.scheme == "http" and loopback):
            raise ConfigurationError(
                "auth_mode 'oidc' needs oidc_issuer, the issuer's https:// URL (as tokens name "
                "it in `iss`)")
        if not self.oidc_audience:
            raise ConfigurationError(
                "auth_mode 'oidc' needs oidc_audience, the `aud` tokens for this server carry")
        for algorithm in self.oidc_algorithms:
            if algorithm not in ACCEPTABLE_ALGORITHMS:
                raise ConfigurationError(
                    f"oidc_algorithms: {algorithm!r} is not accepted; use asymmetric ones "
                    f"({', '.join(ACCEPTABLE_ALGORITHMS)}); `none` and HMAC never are")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Settings:
        return cls(**json.loads(text))


def settings_table() -> str:
    """docs/configuration.md's table of the server's settings, from their declarations."""
    lines = ["| Setting (config file key) | Environment variable | CLI flag | Default | Meaning |",
             "| --- | --- | --- | --- | --- |"]
    for declared_field, declared in Settings.declared():
        variable = f"`LANCE_ADAPTER_{declared.key.upper()}`"
        if is_mapping(typing.get_type_hints(Settings)[declared.key]):
            variable += " (JSON object)"
        if declared.key == "properties":
            variable += ", `LANCE_ADAPTER_PROP_<KEY>`"
        flag = declared.flag or ("--" + declared.key.replace("_", "-") if declared.cli else "")
        lines.append(f"| `{declared.key}` | {variable} | {f'`{flag}`' if flag else ''} | "
                     f"{default_text(declared_field, declared)} | {declared.doc} |")
    return "\n".join(lines)
